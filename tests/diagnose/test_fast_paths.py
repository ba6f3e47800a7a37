"""The sort-free shortcuts of the analyses (issue 32) against plain oracles: one window minus many
intervals, string ids numbered without `np.unique`, distinct steps per name, a thread's events per step,
the shared input wait."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tpuscope.analysis.diagnose.step_variance import _steps_running, events_in_periods
from tpuscope.analysis.facts.context import intervals_of
from tpuscope.analysis.facts.intervals import difference, merge_intervals
from tpuscope.analysis.facts.waits import input_wait_intervals, input_work_events, waiting_intervals
from tpuscope.analysis.host_names import distinct_ids
from tpuscope.analysis.session import TraceAnalysis

SPAN = 80
pairs = st.lists(st.tuples(st.integers(0, SPAN), st.integers(0, SPAN)), min_size=1, max_size=30)


def _mask(starts, ends) -> np.ndarray:
    mask = np.zeros(SPAN, dtype=bool)
    for a, b in zip(starts, ends, strict=True):
        mask[a:b] = True
    return mask


@settings(max_examples=300, deadline=None)
@given(pairs, st.integers(0, SPAN), st.integers(1, SPAN))
def test_one_window_minus_many_intervals_matches_the_timeline(items, low, length):
    starts = np.array([min(a, b) for a, b in items], np.int64)
    ends = np.array([max(a, b) for a, b in items], np.int64)
    high = min(low + length, SPAN)
    if high <= low:
        return
    window = (np.array([low], np.int64), np.array([high], np.int64))
    got = difference(window, (starts, ends))
    expected = np.zeros(SPAN, bool)
    expected[low:high] = True
    assert np.array_equal(_mask(*got), expected & ~_mask(starts, ends))
    # Canonical: sorted, disjoint, not touching, none empty (what merge_intervals hands back as is).
    assert np.all(got[1] > got[0]) and np.all(got[0][1:] > got[1][:-1])
    assert got[0].dtype == np.int64 and got[1].dtype == np.int64


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 500), max_size=200))
def test_string_ids_are_numbered_as_numpy_unique_numbers_them(ids):
    column = np.array(ids, np.int32)
    distinct, position = distinct_ids(column)
    expected_distinct, expected_position = np.unique(column, return_inverse=True)
    assert np.array_equal(distinct, expected_distinct)
    assert np.array_equal(position, expected_position.reshape(-1))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 12), st.integers(0, 40)), max_size=300),
    st.lists(st.booleans(), min_size=41, max_size=41),
)
def test_steps_running_counts_the_distinct_counted_steps_of_each_name(events, counted):
    # Up to 300 events of 13 names over 41 steps: a few events are counted by a sort, many by a
    # table of (step, name) flags (PAIR_FLAGS_PER_EVENT): both ways are drawn.
    events = sorted(events, key=lambda e: e[1])  # one thread's events in time order: steps never decrease
    names = np.array([n for n, _ in events], np.int64)
    steps = np.array([s for _, s in events], np.int64)
    runs = _steps_running(names, steps, np.array(counted), 13)
    expected = [len({s for n, s in events if n == name and counted[s]}) for name in range(13)]
    assert runs.tolist() == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 60), max_size=80),
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)), min_size=1, max_size=15),
)
def test_events_in_periods_are_those_a_search_per_event_finds(event_starts, periods):
    # Periods in start order, possibly overlapping, empty or sharing a start; events in start order.
    periods = sorted(periods)
    p0 = np.array([a for a, _ in periods], np.int64)
    p1 = np.array([a + d for a, d in periods], np.int64)
    starts = np.array(sorted(event_starts), np.int64)
    step = np.searchsorted(p0, starts, side="right") - 1
    inside = (step >= 0) & (starts < p1[np.clip(step, 0, None)])
    events, period = events_in_periods(starts, p0, p1)
    assert events.tolist() == np.flatnonzero(inside).tolist()
    assert period.tolist() == step[inside].tolist()


@pytest.mark.parametrize("scenario", ["input_bound", "healthy"])
def test_input_wait_is_made_once_and_shared_read_only(recorded_trace, scenario):
    ctx = TraceAnalysis(recorded_trace(scenario)).context
    first = input_wait_intervals(ctx)
    assert input_wait_intervals(ctx) is first  # the second asker gets the same arrays
    fresh = waiting_intervals(ctx, intervals_of(input_work_events(ctx)))
    assert np.array_equal(first[0], fresh[0]) and np.array_equal(first[1], fresh[1])
    assert not first[0].flags.writeable and not first[1].flags.writeable
    assert merge_intervals(*first)[0] is first[0]  # canonical as made
