"""Checks the fuzz tests share: a damaged profile either loads into a consistent trace or fails cleanly."""

from __future__ import annotations

from pathlib import Path

from tpuscope.app.opener import open_trace
from tpuscope.errors import ProfileError
from tpuscope.model.trace import Trace


def open_or_clean_error(path: Path) -> Trace | None:
    """The trace at `path`, or None when loading raised the one allowed error: a ProfileError naming it."""
    try:
        return open_trace(path, use_cache=False)
    except ProfileError as error:
        assert str(path) in str(error)
        return None


def assert_consistent(trace: Trace) -> None:
    """Every track's columns have one length and are sorted by start; stat rows point inside the track."""
    for track in trace.tracks():
        assert len(track.start_ps) == len(track.duration_ps) == len(track.name_id) == len(track.depth)
        if len(track) > 1:
            assert (track.start_ps[1:] >= track.start_ps[:-1]).all()
        for column in track.stats.columns.values():
            if column.rows is not None:
                assert len(column.rows) == len(column.values)
                assert column.rows.max(initial=-1) < len(track)
