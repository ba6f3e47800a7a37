"""A pivot of a selected area of the timeline: per name, category, program or source line, the count,
total, self and average time of the events of some tracks inside a time range (numpy, no Qt).

Perfetto's area selection gives the same table ("slices" pivot, https://perfetto.dev/docs/visualization/
perfetto-ui#area-selection). Times are clipped to the range, so an event that sticks out counts only
its part inside. Self time is an event's clipped time minus the clipped time of its direct children
(the events one level deeper on the same track that it contains), as Perfetto and Tracy define it for
a selected area. The clipped and self times are computed once per selection and grouped by every
dimension, so switching between them costs no pass over the events again.

`tpuscope.query.area.area_pivot_sql` writes the same pivot as SQL over the `events` table; the
tests hold the two equal on real profiles.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tpuscope.model.trace import Track
from tpuscope.model.vocabulary import Stat

# The dimensions a selection is pivoted by: (key, what a user reads, the stat behind it; None: the name).
DIMENSIONS: tuple[tuple[str, str, str | None], ...] = (
    ("name", "Name", None),
    ("category", "Category", Stat.OP_CATEGORY),
    ("program", "Program", Stat.PROGRAM_ID),
    ("source", "Source line", Stat.SOURCE),
)
DIMENSION_KEYS = tuple(key for key, _, _ in DIMENSIONS)
_STAT_OF = {key: stat for key, _, stat in DIMENSIONS}
_NO_KEY = -1  # an event without the dimension's stat (a NULL in SQL)


@dataclass
class PivotTable:
    """One dimension's rows, sorted by total time, longest first. `labels[i]` is None for the events
    that lack the dimension (no category, no source line)."""

    dimension: str
    labels: list[str | None]
    counts: np.ndarray
    total_ps: np.ndarray
    self_ps: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def average_ps(self) -> np.ndarray:
        """Clipped time per event (0 for no events)."""
        return self.total_ps / np.maximum(self.counts, 1)

    def rows(self) -> list[tuple[str | None, int, int, int, float]]:
        """(label, count, total_ps, self_ps, average_ps) per row, as plain Python values."""
        return [
            (label, int(c), int(t), int(s), float(a))
            for label, c, t, s, a in zip(
                self.labels, self.counts, self.total_ps, self.self_ps, self.average_ps, strict=True
            )
        ]


@dataclass
class AreaPivot:
    """The selection [t0_ps, t1_ps) over the tracks numbered `track_ids` (of the trace's `all_tracks`,
    as `events.track_id` numbers them), pivoted by every dimension; `events` overlap the range."""

    t0_ps: int
    t1_ps: int
    track_ids: list[int]
    all_tracks: int
    events: int
    by: dict[str, PivotTable] = field(default_factory=dict)

    @property
    def track_count(self) -> int:
        return len(self.track_ids)


def clipped_self_times(
    track: Track, indices: np.ndarray, t0_ps: int, t1_ps: int
) -> tuple[np.ndarray, np.ndarray]:
    """Clipped duration and self time of each event at `indices` (all events overlapping the range).

    An event's parent is the last event one level up that precedes it on the track (events are in
    start order, so that is the one containing it)."""
    start = np.maximum(track.start_ps[indices], t0_ps)
    end = np.minimum(track.start_ps[indices] + track.duration_ps[indices], t1_ps)
    clipped = np.maximum(end - start, 0)
    children = np.zeros(len(indices), np.int64)
    depth = track.depth[indices]
    for d in range(1, int(depth.max()) + 1 if len(depth) else 0):
        parents = np.flatnonzero(depth == d - 1)
        kids = np.flatnonzero(depth == d)
        if not len(parents) or not len(kids):
            continue
        owner = np.searchsorted(parents, kids) - 1
        has_owner = owner >= 0
        np.add.at(children, parents[owner[has_owner]], clipped[kids[has_owner]])
    return clipped, np.maximum(clipped - children, 0)


def event_stat_keys(track: Track, stat: str, indices: np.ndarray) -> np.ndarray:
    """The stat's value of each event at `indices` (string ids for text), from the event itself or
    else its op metadata; `_NO_KEY` where neither has it. The same values the `events` table's
    column of that stat holds (a track whose metadata rows fall outside its plane's table takes no
    value from the metadata)."""
    n = len(track)
    unsigned = stat == Stat.PROGRAM_ID
    keys = np.full(len(indices), _NO_KEY, np.int64)
    metadata = track.plane.metadata
    column = metadata.stats.column(stat)
    rows = track.meta_index
    if (
        column is not None
        and column.kind != "bytes"
        and len(metadata)
        and n
        and int(rows.min()) >= 0
        and int(rows.max()) < len(metadata)
    ):
        chosen = rows[indices]
        present = column.present(len(metadata))[chosen]
        values = column.dense(len(metadata), 0)[chosen]
        keys[present] = values[present].astype(np.uint64 if unsigned else np.int64).view(np.int64)
    own = track.stats.column(stat)
    if own is not None and own.kind != "bytes" and n:
        present = own.present(n)[indices]
        values = own.dense(n, 0)[indices]
        keys[present] = values[present].astype(np.uint64 if unsigned else np.int64).view(np.int64)
    return keys


def pivot_area(tracks: list[Track], t0_ps: float, t1_ps: float, dimensions=DIMENSION_KEYS) -> AreaPivot:
    """What ran inside [t0, t1) on these tracks, per each of `dimensions`."""
    t0, t1 = int(t0_ps), int(t1_ps)
    keys: dict[str, list[np.ndarray]] = {d: [] for d in dimensions}
    totals, selfs = [], []
    trace = tracks[0].plane.trace if tracks else None
    for track in tracks:
        indices = track.overlapping(t0, t1)
        if not len(indices):
            continue
        clipped, self_time = clipped_self_times(track, indices, t0, t1)
        totals.append(clipped)
        selfs.append(self_time)
        for dimension in dimensions:
            stat = _STAT_OF[dimension]
            keys[dimension].append(
                track.name_id[indices].astype(np.int64)
                if stat is None
                else event_stat_keys(track, stat, indices)
            )
    pivot = AreaPivot(
        t0,
        t1,
        [trace.track_number(t) for t in tracks] if trace is not None else [],
        len(trace.track_list()) if trace is not None else 0,
        int(sum(len(t) for t in totals)),
    )
    strings = trace.strings if trace is not None else None
    total = np.concatenate(totals) if totals else np.empty(0, np.int64)
    own = np.concatenate(selfs) if selfs else np.empty(0, np.int64)
    for dimension in dimensions:
        column = np.concatenate(keys[dimension]) if keys[dimension] else np.empty(0, np.int64)
        pivot.by[dimension] = _group(dimension, column, total, own, strings)
    return pivot


def _group(dimension: str, keys: np.ndarray, total: np.ndarray, own: np.ndarray, strings) -> PivotTable:
    """Sums per distinct label (two string ids with the same text are one row, as SQL groups them)."""
    unique, inverse = np.unique(keys, return_inverse=True)
    labels = [_label(dimension, int(k), strings) for k in unique]
    merged: dict[str | None, int] = {}
    row_of = np.fromiter((merged.setdefault(label, len(merged)) for label in labels), np.int64, len(labels))
    rows = row_of[inverse] if len(inverse) else np.empty(0, np.int64)
    size = len(merged)
    counts = np.bincount(rows, minlength=size).astype(np.int64)
    totals = np.zeros(size, np.int64)  # exact sums, as SQL's: float weights round past 2**53 ps
    selfs = np.zeros(size, np.int64)
    np.add.at(totals, rows, total)
    np.add.at(selfs, rows, own)
    names = list(merged)
    # longest first; ties by label as SQL's ORDER BY total_ps DESC, label (numbers for programs)
    def tie(label: str | None) -> tuple:
        return (label is None, int(label) if dimension == "program" and label else 0, label or "")

    order = np.array(sorted(range(size), key=lambda i: (-int(totals[i]), tie(names[i]))), np.int64)
    return PivotTable(
        dimension,
        [names[i] for i in order.tolist()],
        counts[order],
        totals[order],
        selfs[order],
    )


def _label(dimension: str, key: int, strings) -> str | None:
    if key == _NO_KEY and dimension != "name":
        return None
    if dimension == "program":
        return str(np.int64(key).view(np.uint64))
    return strings[key]
