"""Query tracks: a query's rows with a start and a duration, pinned on the timeline (Perfetto's
debug tracks, https://perfetto.dev/docs/analysis/debug-tracks).

A query track is a small trace of its own (one plane, one track, its names in its own string
table), so the timeline draws it with the same level-of-detail pyramids, palette and labels as the
profile's tracks, colours by name matching theirs. Rows that name an event of the profile (its
`id`, or its track and start) keep where it is, so a click on a pinned box selects that event.
Pure numpy, no Qt.
"""

from __future__ import annotations

import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.records import record
from tpuscope.model.stats import StatTable
from tpuscope.model.trace import EventMetadataTable, Plane, Trace, Track
from tpuscope.ui.timeline.lod import TimelineLod

# Rows a pinned track stacks at most: deeper rows share the last lane (a debug track is a sketch).
MAX_QUERY_TRACK_DEPTH = 8


@record
class QueryTrack:
    """One pinned result: `track` (synthetic, on its own plane) and `lod` to draw it; `origin_track`
    and `origin_index` give, per event of `track`, the profile's event it came from (-1: none)."""

    label: str
    query: str
    track: Track
    lod: TimelineLod
    origin_track: np.ndarray
    origin_index: np.ndarray

    def __len__(self) -> int:
        return len(self.track)

    def origin(self, index: int, tracks: list[Track]) -> tuple[Track, int] | None:
        """The profile's event behind event `index` of the pinned track, when the query named it."""
        k = int(self.origin_track[index])
        if k < 0 or k >= len(tracks):
            return None
        return tracks[k], int(self.origin_index[index])


def stacking_depth(start_ps: np.ndarray, end_ps: np.ndarray) -> np.ndarray:
    """Per interval (sorted by start), how many earlier intervals are still open at its start: the
    nesting depth when intervals nest, capped at MAX_QUERY_TRACK_DEPTH."""
    ends = np.sort(end_ps)
    closed = np.searchsorted(ends, start_ps, side="right")
    depth = np.arange(len(start_ps)) - np.minimum(closed, np.arange(len(start_ps)))
    return np.minimum(depth, MAX_QUERY_TRACK_DEPTH - 1).astype(np.int16)


def make_query_track(
    label: str,
    query: str,
    ts_ps: np.ndarray,
    dur_ps: np.ndarray,
    names: np.ndarray | None = None,
    origin_track: np.ndarray | None = None,
    origin_index: np.ndarray | None = None,
) -> QueryTrack:
    """A pinned track of the rows (null starts dropped by the caller); names label and colour boxes."""
    n = len(ts_ps)
    ts = np.asarray(ts_ps, np.int64)
    dur = np.maximum(np.asarray(dur_ps, np.int64), 0)
    order = np.lexsort((-dur, ts))  # the model's order: by start, longer first
    ts, dur = ts[order], dur[order]
    labels = np.asarray(names if names is not None else np.full(n, label), dtype=object)[order]
    distinct, codes = np.unique(labels.astype(str), return_inverse=True)
    trace = Trace()
    name_ids = trace.strings.intern_many(distinct.tolist())
    plane = Plane(trace, 0, label, "", {})
    plane.metadata = EventMetadataTable(
        np.arange(len(distinct), dtype=np.int64), name_ids, [b""] * len(distinct), StatTable(len(distinct))
    )
    track = Track(plane, 0, 0, label, label, ts, dur, codes.astype(np.int32), name_ids[codes],
                  stacking_depth(ts, ts + dur), StatTable(n))  # fmt: skip
    plane.tracks.append(track)
    trace.planes.append(plane)
    trace.duration_ps = int((ts + dur).max()) if n else 0
    missing = np.full(n, -1, np.int64)
    return QueryTrack(
        label,
        query,
        track,
        TimelineLod(trace),
        (missing if origin_track is None else np.asarray(origin_track, np.int64))[order],
        (missing if origin_index is None else np.asarray(origin_index, np.int64))[order],
    )


def event_positions(trace: Trace, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(track number, index on the track) of each `events.id` (ids count events track by track in
    `trace.track_list()` order, as the events table numbers them); -1 where out of range."""
    lengths = np.fromiter((len(t) for t in trace.tracks()), np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    ids = np.asarray(ids, np.int64)
    valid = (ids >= 0) & (ids < offsets[-1])
    track = np.where(valid, np.searchsorted(offsets, ids, side="right") - 1, -1)
    index = np.where(valid, ids - offsets[np.maximum(track, 0)], -1)
    return track, index


def events_at(trace: Trace, track_ids: np.ndarray, ts_ps: np.ndarray, dur_ps: np.ndarray | None):
    """(track number, index) of the events that start at `ts_ps` on track `track_ids` (and last
    `dur_ps`, when given, among events starting together); -1 where there is none."""
    tracks = trace.track_list()
    track_ids = np.asarray(track_ids, np.int64)
    index = np.full(len(track_ids), -1, np.int64)
    for k in order_statistics.sorted_distinct(
        track_ids[(track_ids >= 0) & (track_ids < len(tracks))]
    ).tolist():
        rows = np.flatnonzero(track_ids == k)
        track = tracks[k]
        starts = np.asarray(ts_ps, np.int64)[rows]
        lo = np.searchsorted(track.start_ps, starts, side="left")
        hi = np.searchsorted(track.start_ps, starts, side="right")
        found = lo < hi
        if dur_ps is not None:  # ties on start: longer first, so the match is found by its duration
            want = np.asarray(dur_ps, np.int64)[rows]
            for step in range(int((hi - lo).max()) if len(rows) else 0):
                at = np.minimum(lo + step, len(track) - 1)
                hit = (lo + step < hi) & (track.duration_ps[at] == want)
                index[rows[hit & (index[rows] < 0)]] = at[hit & (index[rows] < 0)]
            found &= index[rows] >= 0
        index[rows[found & (index[rows] < 0)]] = lo[found & (index[rows] < 0)]
    track_out = np.where(index >= 0, track_ids, -1)
    return track_out, index
