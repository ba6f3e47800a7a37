"""The Graph tab on the real TPU v6e sample: the op with most device time first, any op on request
(as the Details dock's "Show in graph" asks), one box per instruction filled by its device time, a
click outlines the op, a double-click centres there, fusions expand, an unknown op is a sentence."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QApplication, QGraphicsRectItem

from tests.conftest import TPU_TRACE
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.export.graph_dot import HEAT_COLOURS
from tpuscope.ui.analysis_hub import AnalysisHub
from tpuscope.ui.details import GRAPH_LINK, DetailsPanel
from tpuscope.ui.graph_view import GraphView
from tpuscope.ui.views import OpGraphAt

OP = "broadcast_add_fusion.1"


@pytest.fixture
def view(qtbot):
    widget = GraphView()
    qtbot.addWidget(widget)
    widget.resize(1366, 768)
    widget.set_trace(open_trace(TPU_TRACE))
    widget.show()
    qtbot.waitExposed(widget)
    widget.hub.wait()
    return widget


def _boxes(view: GraphView) -> dict[int, QGraphicsRectItem]:
    return {
        int(item.data(0)): item
        for item in view.scene.items()
        if isinstance(item, QGraphicsRectItem) and item.data(0) is not None
    }


def test_first_shows_the_op_with_most_device_time(view):
    assert view.found is not None
    assert view.found.op == "copy-done.4"  # the op table's first row on this profile
    assert "HLO around copy-done.4 in jit_f(" in view.summary_label.text()
    boxes = _boxes(view)
    assert sorted(boxes) == list(range(len(view.found.part)))
    centre = int(np.flatnonzero(view.found.part.nodes == view.found.part.center)[0])
    assert boxes[centre].brush().color().name() == HEAT_COLOURS[-1]  # the most time in the picture


def test_an_op_picked_elsewhere_is_shown_with_its_operands_above_it(view):
    view.select(OpGraphAt(OP))
    view.hub.wait()
    found = view.found
    assert found is not None and found.op == OP
    part, graph = found.part, found.part.graph
    names = [graph.names[int(n)] for n in part.nodes]
    placed = view.layout_
    assert placed is not None
    operand = names.index("copy-done.2")
    centre = names.index(OP)
    assert placed.y[operand] < placed.y[centre]  # top to bottom: operands above their users
    boxes = _boxes(view)
    rects = [boxes[k].rect() for k in range(len(names))]
    for a in range(len(rects)):
        for b in range(a + 1, len(rects)):
            assert not rects[a].intersects(rects[b]), (names[a], names[b])
    assert view.op_edit.text() == OP
    assert "copy-done.2" in view.info.toPlainText() or OP in view.info.toPlainText()


def test_click_outlines_the_op_and_double_click_centres_there(qtbot, view):
    view.select(OpGraphAt(OP))
    view.hub.wait()
    found = view.found
    assert found is not None
    names = [found.part.graph.names[int(n)] for n in found.part.nodes]
    k = names.index("copy-done.2")
    with qtbot.waitSignal(view.opsOutlined) as outlined:
        view.pick_node(k)
    assert outlined.args[0] == {"copy-done.2"}
    assert "%copy-done.2 = " in view.info.toPlainText()
    view.centre_on_node(k)
    view.hub.wait()
    assert view.found is not None and view.found.op == "copy-done.2"


def test_expand_fusions_frames_what_they_fused(view):
    view.select(OpGraphAt(OP))
    view.hub.wait()
    before = len(view.found.part)
    view.expand_box.setChecked(True)
    view.hub.wait()
    assert len(view.found.part) > before
    labels = [item.text() for item in view.scene.items() if hasattr(item, "text") and callable(item.text)]
    assert f"fused into {OP}" in labels


def test_an_unknown_op_is_one_sentence(view):
    view.op_edit.setText("no-such-op.7")
    view._ask_typed()
    view.hub.wait()
    assert view.found is None
    assert view.message.startswith("No HLO op named 'no-such-op.7'")
    assert not _boxes(view)


def test_details_show_in_graph_names_the_op_and_its_program(qtbot):
    trace = open_trace(TPU_TRACE)
    analysis = TraceAnalysis(trace)
    hub = AnalysisHub()
    hub.set_analysis(analysis)
    panel = DetailsPanel(None, hub)
    qtbot.addWidget(panel)
    track, index = next(
        (track, i)
        for plane in trace.planes
        for track in plane.tracks
        for i in range(len(track))
        if track.event_name(i).startswith(f"%{OP} = ")
    )
    panel.show_event(track, index)
    panel.wait_for_code()
    QApplication.processEvents()
    assert "Show in graph" in panel.toPlainText()
    with qtbot.waitSignal(panel.graphRequested) as asked:
        panel._on_anchor(QUrl(GRAPH_LINK))
    name, program_id = asked.args
    assert name == OP and program_id == 12190760917235803885


def test_an_answer_to_an_older_question_is_dropped(view):
    view.select(OpGraphAt(OP))
    view.hub.wait()
    older, older_question = view.found, view._asked
    view.select(OpGraphAt("copy-done.2"))
    view.hub.wait()
    assert view._asked != older_question
    view._answer(older_question, older)  # the first graph arriving last, as a slow worker's would
    assert view.found is not None and view.found.op == "copy-done.2"


def test_the_op_tables_show_in_graph_targets_the_rows_op_and_program(qtbot):
    from tpuscope.ui.ops.view import OpsView

    ops = OpsView()
    qtbot.addWidget(ops)
    ops.set_trace(open_trace(TPU_TRACE))
    ops.show()
    qtbot.waitExposed(ops)
    ops.hub.wait()
    table = ops.table
    assert table is not None
    row = table.names().index(OP)
    target = ops.graph_target(row)
    assert target == OpGraphAt(OP, 12190760917235803885)
    graph = GraphView(ops.hub)  # the window's views share one hub
    qtbot.addWidget(graph)
    graph.show()
    graph.select(target)
    graph.hub.wait()
    assert graph.found is not None and graph.found.op == OP
    assert graph.found.place.program_id == target.program_id


def test_screenshot_of_the_graph_view_draws_the_graph(tmp_path, capsys):
    from PySide6.QtGui import QImage

    from tpuscope.cli import main

    out = tmp_path / "graph.png"
    assert main(["screenshot", str(TPU_TRACE), str(out), "--size", "1280x720", "--view", "graph"]) == 0
    assert "graph view" in capsys.readouterr().out
    image = QImage(str(out)).convertToFormat(QImage.Format.Format_RGB32)
    assert (image.width(), image.height()) == (1280, 720)
    pixels = np.frombuffer(image.constBits(), np.uint32, image.width() * image.height())
    hottest = int(HEAT_COLOURS[-1][1:], 16)  # the box of the op with the most device time
    assert np.count_nonzero((pixels & 0xFFFFFF) == hottest) > 500
