"""The Roofline tab on the real TPU v6e sample: a dot per op XProf's roofline places, roofs and
ridge from the profile's stats, hover names a dot, click selects it, one program at a time."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import TPU_TRACE
from tpuscope.analysis.ops import roofline_points
from tpuscope.app.opener import open_trace
from tpuscope.ui.roofline_view import RooflineView, dot_sizes


@pytest.fixture
def view(qtbot):
    widget = RooflineView()
    qtbot.addWidget(widget)
    widget.resize(1366, 768)
    widget.set_trace(open_trace(TPU_TRACE))
    widget.show()
    qtbot.waitExposed(widget)
    widget.hub.wait()
    return widget


def test_one_dot_per_placed_op_at_its_intensity_and_rate(view):
    table = view.table
    assert table is not None and view.scatter is not None
    points = roofline_points(table)
    spots = view.scatter.points()
    assert sorted(int(s.data()) for s in spots) == sorted(points.rows.tolist())
    for spot in spots:
        row = int(spot.data())
        assert 10 ** spot.pos().x() == pytest.approx(float(table.intensity[row]))
        assert 10 ** spot.pos().y() == pytest.approx(float(table.flop_rate[row]))
    # The biggest dot is the op with most self time.
    biggest = max(spots, key=lambda s: s.size())
    assert int(biggest.data()) == int(points.rows[np.argmax(points.self_ps)])
    assert "ridge point 560.4 FLOP/byte" in view.summary.text()
    assert view.program_combo.count() == 1 + len(points.programs)


def test_hover_names_the_op_and_click_selects_it(qtbot, view):
    table = view.table
    assert table is not None and view.scatter is not None
    spot = view.scatter.points()[0]
    row = int(spot.data())
    tip = view._tip(spot.pos().x(), spot.pos().y(), row)
    assert tip.startswith(f"{table.label(table.name[row])} ({table.label(table.program[row])})")
    with qtbot.waitSignal(view.highlightRequested) as outlined, qtbot.waitSignal(view.eventPicked) as picked:
        view._on_clicked(view.scatter, [spot])
    assert view.picked_row == row
    assert sum(len(i) for _, i in outlined.args[0]) == int(table.occurrences[row])
    track, index = picked.args
    assert track.event_name(index).startswith(f"%{table.label(table.name[row])}")
    assert table.label(table.name[row]) in view.picked_label.text()


def test_one_program_at_a_time(view):
    table = view.table
    assert table is not None
    program = roofline_points(table).programs[0]
    view.set_program(program)
    assert view.scatter is not None
    rows = {int(s.data()) for s in view.scatter.points()}
    assert rows == set(roofline_points(table, program).rows.tolist())
    assert all(table.label(table.program[r]) == program for r in rows)


def test_dot_areas_follow_self_time():
    sizes = dot_sizes(np.array([100, 25, 0]))
    assert sizes[0] > sizes[1] > sizes[2]
    assert (sizes[1] - sizes[2]) / (sizes[0] - sizes[2]) == pytest.approx(0.5)  # sqrt: area ~ time
    assert len(dot_sizes(np.array([], dtype=np.int64))) == 0


def test_a_step_range_at_a_time(view):
    """The picker lists the profile's steps; a range places each op by its occurrences in it."""
    table, steps = view.table, view.steps
    assert table is not None and steps is not None and len(steps) == 100
    assert view.first_step_combo.count() == 1 + len(steps) and not view.last_step_combo.isEnabled()
    assert view.step_window() is None
    view.set_step_range(10, 19)
    window = (int(steps.start_ps[10]), int(steps.end_ps[19]))
    assert view.step_window() == window and view.last_step_combo.isEnabled()
    assert view.scatter is not None
    expected = roofline_points(table, None, window)
    spots = {int(s.data()): s for s in view.scatter.points()}
    assert set(spots) == set(expected.rows.tolist())
    for k, row in enumerate(expected.rows.tolist()):
        assert 10 ** spots[row].pos().x() == pytest.approx(float(expected.intensity[k]))
        assert 10 ** spots[row].pos().y() == pytest.approx(float(expected.flop_rate[k]))
    number = steps.number
    assert f"in step {number[10]} to step {number[19]}" in view.summary.text()
    view.set_step_range(3)  # one step
    assert view.step_window() == (int(steps.start_ps[3]), int(steps.end_ps[3]))
    assert f"in step {number[3]} (" in view.summary.text()
    view.set_step_range(None)
    assert view.step_window() is None and "device self time (" in view.summary.text()


def test_the_peaks_label_stays_inside_the_plot(qtbot, view):
    """At 1366x768 and at 1920x1080 the roofs' label lies wholly inside the plot area."""
    import pyqtgraph as pg

    for width, height in ((1366, 768), (1920, 1080), (900, 600)):
        view.resize(width, height)
        qtbot.wait(50)
        labels = [i for i in view.chart.getPlotItem().items if isinstance(i, pg.TextItem)]
        assert len(labels) == 1
        box = view.chart.getViewBox()
        inside = box.mapSceneToView(box.sceneBoundingRect()).boundingRect()
        shape = labels[0].mapRectToView(labels[0].boundingRect())
        assert inside.contains(shape), (width, height)
