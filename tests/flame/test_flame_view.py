"""The Flame tab on a real JAX CPU recording with nested named scopes: the icicle shows the fused MLP
branch widest, hovering a frame names it with its time, clicking zooms into it and outlines its ops,
search dims the rest, and a selected range narrows the tree."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

from tpuscope.app.opener import open_trace
from tpuscope.model.units import format_duration
from tpuscope.ui.flame_view import FlameView


@pytest.fixture
def view(qtbot, scoped_profile):
    widget = FlameView()
    qtbot.addWidget(widget)
    widget.resize(1366, 700)
    widget.set_trace(open_trace(scoped_profile))
    widget.show()
    qtbot.waitExposed(widget)
    widget.hub.wait()
    qtbot.waitUntil(lambda: widget.tree is not None)
    return widget


def _frame(view, name: str) -> int:
    tree = view.tree
    return next(k for k in range(len(tree)) if tree.name(k) == name)


def _centre(view, node: int) -> QPointF:
    rect = next(r for r, k in view.canvas._rects if k == node)
    return view.canvas.mapTo(view, rect.center().toPoint()).toPointF()


def test_the_fused_branch_is_the_widest_frame_under_the_program(view):
    tree = view.tree
    top = tree.children(0)
    assert [tree.name(k) for k in top] == ["jit(model_step)"]
    below = tree.children(top[0])
    assert tree.name(below[0]) == "blocks" and tree.total_ps[below[0]] > 5 * tree.total_ps[below[1]]
    view.canvas.repaint()
    widths = {tree.name(k): r.width() for r, k in view.canvas._rects}
    assert widths["blocks"] > 5 * widths["head"]
    assert "hatched" in view.status.text()  # the fusion's shares are marked as estimates


def test_hover_names_the_frame_and_its_time(view):
    blocks = _frame(view, "blocks")
    view.canvas.repaint()
    rect = next(r for r, k in view.canvas._rects if k == blocks)
    assert view.canvas.node_at(rect.center()) == blocks
    text = view.canvas.describe(blocks)
    assert "blocks" in text and format_duration(int(view.tree.total_ps[blocks])) in text
    assert "estimated share" in text


def test_click_zooms_into_the_subtree_and_outlines_its_ops(qtbot, view):
    view.canvas.repaint()
    head = _frame(view, "head")
    rect = next(r for r, k in view.canvas._rects if k == head)
    with qtbot.waitSignal(view.highlightRequested) as outlined, qtbot.waitSignal(view.opsOutlined) as ops:
        qtbot.mouseClick(view.canvas, Qt.MouseButton.LeftButton, pos=rect.center().toPoint())
    assert view.canvas.zoom == head
    assert ops.args[0] == {"ynn_fusion"}
    assert sum(len(i) for _, i in outlined.args[0]) == 3  # the fusion ran once per step
    view.canvas.repaint()
    widths = {view.tree.name(k): r.width() for r, k in view.canvas._rects}
    assert widths["head"] == pytest.approx(view.canvas.width(), abs=1)  # zoomed: full width
    assert "blocks" not in widths
    assert "zoomed into jit(model_step) &gt; head" in view.status.text()
    view.reset_button.click()
    assert view.canvas.zoom == 0


def test_search_dims_the_frames_that_do_not_match(view):
    view.search_box.setText("dot_general")
    matches = view.canvas.matches
    assert matches is not None
    assert {view.tree.name(k) for k in np.flatnonzero(matches)} == {"dot_general"}
    assert "2 frames match" in view.status.text()


def test_stack_grouping_and_root_attribution(qtbot, view):
    view.set_grouping("scope", "root")
    qtbot.waitUntil(lambda: view.tree is not None and view.tree.fusion == "root")
    tree = view.tree
    assert [tree.name(k) for k in tree.path(int(np.argmax(tree.depth)))] == [
        "jit(model_step)",
        "head",
        "reduce_sum",
    ]
    view.set_grouping("stack")
    qtbot.waitUntil(lambda: view.tree is not None and view.tree.by == "stack")
    assert view.tree.name(view.tree.children(0)[0]).startswith("<module> (model.py:")


def test_a_selected_range_narrows_the_tree(view):
    whole = view.tree.total_self_ps
    table = view.hub.analysis.op_table("op")
    starts = np.sort(np.concatenate([t.start_ps[i] for t, i, _ in table.events.segments]))
    view.set_range(int(starts[0]), int(starts[1]))  # the first occurrence only
    view.range_box.setChecked(True)
    assert 0 < view.tree.total_self_ps < whole
    assert "in the selected range" in view.status.text()
    view.range_box.setChecked(False)
    assert view.tree.total_self_ps == whole
