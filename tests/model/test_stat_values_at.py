"""Issue 32: `Track.stat_values_at` (the op columns' way to read stats without a column over the whole
track) gives exactly `stat_values(...)[indices]`, for every stat of every track of the real profiles:
events' own stats (sparse and dense), their metadata's, and both overlaid."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import ALL_SHARED_TRACES, require_shared_traces
from tpuscope.app.opener import open_trace


def _selections(track, name: str) -> list[np.ndarray]:
    """Every event, exactly the events that carry the stat, every other event, and none."""
    n = len(track)
    chosen = [np.arange(n), np.arange(0, n, 2), np.empty(0, np.int64)]
    column = track.stats.column(name)
    if column is not None and column.rows is not None:
        chosen.append(column.rows.astype(np.int64))
    return chosen


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.name)
def test_stat_values_at_are_the_stat_values_of_those_events(path):
    require_shared_traces()
    trace = open_trace(path, use_cache=False)
    checked = 0
    for track in trace.tracks():
        names = set(track.stats.names()) | set(track.plane.metadata.stats.names())
        for name in sorted(names):
            for fill in (0, np.nan):
                whole = track.stat_values(name, fill)
                for indices in _selections(track, name):
                    found = track.stat_values_at(name, indices, fill)
                    assert found is not None and whole is not None
                    expected = whole[indices]
                    assert found.dtype == expected.dtype, (track, name)
                    assert np.array_equal(found, expected, equal_nan=found.dtype.kind == "f"), (track, name)
                    # Unwidened: the same values, in the stored type where read from the column itself.
                    stored = track.stat_values_at(name, indices, fill, widen=False)
                    assert np.array_equal(
                        stored.astype(expected.dtype), expected, equal_nan=found.dtype.kind == "f"
                    )
                    checked += 1
        assert track.stat_values_at("no such stat", np.arange(len(track))) is None
    assert checked > 0


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.name)
def test_events_with_a_stat_are_those_whose_value_is_not_nan(path):
    """`Track.events_with_stat` (read from a stat's rows) and `StatColumn.present_rows` are the plain
    mask's events, in the same order and type, for every stat of every track."""
    require_shared_traces()
    trace = open_trace(path, use_cache=False)
    checked = 0
    for track in trace.tracks():
        names = set(track.stats.names()) | set(track.plane.metadata.stats.names())
        for name in sorted(names) + ["no such stat"]:
            values = track.stat_values(name)
            expected = np.flatnonzero(~np.isnan(values)) if values is not None else np.empty(0, np.int64)
            found = track.events_with_stat(name)
            assert found.dtype == expected.dtype and np.array_equal(found, expected), (track, name)
            column = track.stats.column(name)
            if column is not None:
                rows = column.present_rows(len(track))
                assert rows.dtype == np.int64 and np.array_equal(
                    rows, np.flatnonzero(column.present(len(track)))
                )
            checked += len(found)
    assert checked > 0
