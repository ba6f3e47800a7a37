"""The roofline of a step range, on the real TPU v6e profile: each op placed by its occurrences that
start inside the range, so ranges that split the profile add up to it, and the whole profile's range
is the whole profile's roofline."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import TPU_TRACE
from tpuscope.analysis.ops import roofline_points
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace


@pytest.fixture(scope="module")
def analysis():
    return TraceAnalysis(open_trace(TPU_TRACE))


def _event_starts(table) -> np.ndarray:
    return np.concatenate([track.start_ps[indices] for track, indices, _ in table.events.segments])


def test_the_whole_profiles_range_is_the_whole_roofline(analysis):
    table = analysis.op_table("op")
    every = roofline_points(table)
    whole = roofline_points(table, window_ps=(0, int(_event_starts(table).max()) + 1))
    assert whole.rows.tolist() == every.rows.tolist()
    np.testing.assert_allclose(whole.intensity, every.intensity)
    np.testing.assert_allclose(whole.flop_rate, every.flop_rate)
    assert whole.self_ps.tolist() == every.self_ps.tolist()
    assert whole.total_self_ps == table.total_self_ps


def test_step_ranges_that_split_the_profile_add_up_to_it(analysis):
    table, steps = analysis.op_table("op"), analysis.steps
    assert len(steps) == 100
    cut = int(steps.start_ps[50])
    first = roofline_points(table, window_ps=(0, cut))
    second = roofline_points(table, window_ps=(cut, 2**62))
    every = roofline_points(table)
    assert first.total_self_ps + second.total_self_ps == table.total_self_ps
    for row, self_ps in zip(every.rows.tolist(), every.self_ps.tolist(), strict=True):
        parts = [int(p.self_ps[p.rows == row].sum()) for p in (first, second)]
        assert sum(parts) == self_ps, row


def test_a_step_range_places_each_op_by_its_occurrences_in_it(analysis):
    table, steps = analysis.op_table("op"), analysis.steps
    window = (int(steps.start_ps[10]), int(steps.end_ps[19]))
    points = roofline_points(table, window_ps=window)
    assert len(points) > 0
    starts = _event_starts(table)
    inside = (starts >= window[0]) & (starts < window[1])
    events = table.events
    for k, row in enumerate(points.rows.tolist()):
        mine = inside & (table.row_of_event == row)
        flops, moved = float(events.flops[mine].sum()), float(events.bytes_accessed[mine].sum())
        self_ps = int(events.self_ps[mine].sum())
        assert points.self_ps[k] == self_ps
        assert points.intensity[k] == pytest.approx(flops / moved)
        assert points.flop_rate[k] == pytest.approx(flops / (self_ps * 1e-12))
    # Fewer occurrences than the whole profile's: the range holds 10 of its 100 steps.
    every = roofline_points(table)
    assert 0 < int(points.self_ps.sum()) < int(every.self_ps.sum())
    assert points.programs == every.programs  # the picker still lists every program
    assert len(roofline_points(table, window_ps=(0, 0))) == 0  # an empty range places nothing
