"""The Roofline tab on the real TPU v6e sample: a dot per op XProf's roofline places, roofs and
ridge from the profile's stats, hover names a dot, click selects it, one program at a time."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import TPU_TRACE
from tpuscope.analysis.ops import roofline_points
from tpuscope.opener import open_trace
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
