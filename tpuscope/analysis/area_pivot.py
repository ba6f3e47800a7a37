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

from dataclasses import field

import numpy as np

from tpuscope.analysis.ops import parents_one_level_up
from tpuscope.model.records import record
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


@record
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


@record
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

    An event's parent is the last event one level up that precedes it on the track when that event
    contains it (events are in start order, so no earlier one can); stacked rows of overlapping
    async events do not nest, and there an event has no parent."""
    ends = track.start_ps[indices] + track.duration_ps[indices]
    start = np.maximum(track.start_ps[indices], t0_ps)
    end = np.minimum(ends, t1_ps)
    clipped = np.maximum(end - start, 0)
    kids, owners = parents_one_level_up(track.depth[indices])  # linear in events, whatever the depth
    contains = ends[owners] >= ends[kids]  # it starts no later, by the track's order
    children = exact_bincount(owners[contains], clipped[kids[contains]], len(indices))
    return clipped, np.maximum(clipped - children, 0)


# Integers below this are exact in float64, so float sums that stay below it are exact too.
FLOAT_EXACT = 1 << 53


def exact_bincount(bins: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Integer sums of `values` per bin, exact as SQL's: numpy's fast float bincount when the whole
    sum stays below 2**53 (then every partial sum does), else integer np.add.at."""
    if not len(values) or int(values.sum(dtype=np.int64)) < FLOAT_EXACT:
        return np.bincount(bins, weights=values, minlength=size).astype(np.int64)
    out = np.zeros(size, np.int64)
    np.add.at(out, bins, values.astype(np.int64, copy=False))
    return out


def _metadata_keys(track: Track, stat: str) -> np.ndarray | None:
    """The stat's key per row of the track's op metadata (string ids for text, `_NO_KEY` where the
    row lacks it); None when the metadata cannot give it (no such stat, or rows outside the plane's
    table, where the `events` table gives no value from the metadata either)."""
    metadata = track.plane.metadata
    column = metadata.stats.column(stat)
    rows = track.meta_index
    if (
        column is None
        or column.kind == "bytes"
        or not len(metadata)
        or not len(track)
        or int(rows.min()) < 0
        or int(rows.max()) >= len(metadata)
    ):
        return None
    keys = np.full(len(metadata), _NO_KEY, np.int64)
    present = column.present(len(metadata))
    keys[present] = _as_keys(column.dense(len(metadata), 0)[present], stat)
    return keys


def _as_keys(values: np.ndarray, stat: str) -> np.ndarray:
    return values.astype(np.uint64 if stat == Stat.PROGRAM_ID else np.int64).view(np.int64)


def event_stat_keys(track: Track, stat: str, indices: np.ndarray) -> np.ndarray:
    """The stat's value of each event at `indices` (string ids for text), from the event itself or
    else its op metadata; `_NO_KEY` where neither has it: the values the `events` table's column of
    that stat holds."""
    by_row = _metadata_keys(track, stat)
    keys = (
        by_row[track.meta_index[indices]] if by_row is not None else np.full(len(indices), _NO_KEY, np.int64)
    )
    own = track.stats.column(stat)
    if own is not None and own.kind != "bytes" and len(track):
        present = own.present(len(track))[indices]
        keys[present] = _as_keys(own.dense(len(track), 0)[indices][present], stat)
    return keys


class _Partials:
    """(key, count, total, self) rows of one dimension, summed per track before they are merged."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def add_events(self, keys: np.ndarray, clipped: np.ndarray, self_time: np.ndarray) -> None:
        """Sums per key of these events (keys small integers: one bin each; else one row per event)."""
        if not len(keys):
            return
        low, high = int(keys.min()), int(keys.max())
        if low < _NO_KEY or high >= DIRECT_BINS:
            self.parts.append((keys, np.ones(len(keys), np.int64), clipped, self_time))
            return
        bins = keys - _NO_KEY
        self.add_bins(
            np.arange(_NO_KEY, high + 1, dtype=np.int64), bins, high - _NO_KEY + 1, clipped, self_time
        )

    def add_bins(
        self, key_of_bin: np.ndarray, bins: np.ndarray, size: int, clipped: np.ndarray, self_time: np.ndarray
    ) -> None:
        counts = np.bincount(bins, minlength=size).astype(np.int64)
        totals = exact_bincount(bins, clipped, size)
        selfs = exact_bincount(bins, self_time, size)
        used = counts > 0
        self.parts.append((key_of_bin[used], counts[used], totals[used], selfs[used]))

    def merged(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if not self.parts:
            empty = np.empty(0, np.int64)
            return empty, empty, empty, empty
        keys, counts, totals, selfs = (np.concatenate(c) for c in zip(*self.parts, strict=True))
        return keys, counts, totals, selfs


def pivot_area(tracks: list[Track], t0_ps: float, t1_ps: float, dimensions=DIMENSION_KEYS) -> AreaPivot:
    """What ran inside [t0, t1) on these tracks, per each of `dimensions`.

    Each track's events are summed per name id and per op metadata row first (bincounts over small
    ids: no sort of the events), and a stat taken from the metadata maps those few rows to its keys;
    only events that carry the stat themselves are keyed one by one."""
    t0, t1 = int(t0_ps), int(t1_ps)
    partials = {d: _Partials() for d in dimensions}
    events = 0
    trace = tracks[0].plane.trace if tracks else None
    for track in tracks:
        indices = track.overlapping(t0, t1)
        if not len(indices):
            continue
        events += len(indices)
        clipped, self_time = clipped_self_times(track, indices, t0, t1)
        by_row: tuple | None = None  # (bins, rows) of the metadata rows, made when a dimension needs them
        for dimension in dimensions:
            stat = _STAT_OF[dimension]
            if stat is None:
                partials[dimension].add_events(track.name_id[indices].astype(np.int64), clipped, self_time)
                continue
            own = track.stats.column(stat)
            row_keys = _metadata_keys(track, stat)
            if (own is not None and own.kind != "bytes") or row_keys is None:
                partials[dimension].add_events(event_stat_keys(track, stat, indices), clipped, self_time)
                continue
            if by_row is None:
                by_row = (track.meta_index[indices].astype(np.int64), len(track.plane.metadata))
            bins, size = by_row
            partials[dimension].add_bins(row_keys, bins, size, clipped, self_time)
    pivot = AreaPivot(
        t0,
        t1,
        [trace.track_number(t) for t in tracks] if trace is not None else [],
        len(trace.track_list()) if trace is not None else 0,
        events,
    )
    strings = trace.strings if trace is not None else None
    for dimension in dimensions:
        pivot.by[dimension] = _group(dimension, *partials[dimension].merged(), strings)
    return pivot


# Keys below this are summed in one bin each (string ids, metadata rows, small program ids: no sort
# over the events); larger ones (64-bit program fingerprints) are sorted. Our heuristic: 4M bins of
# int64 are 32 MB, a passing cost, where np.unique over 10M keys took 1-10 s on this project's machine.
DIRECT_BINS = 1 << 22


def _group(
    dimension: str, keys: np.ndarray, counts: np.ndarray, totals: np.ndarray, selfs: np.ndarray, strings
) -> PivotTable:
    """Sums per distinct label (two string ids with the same text are one row, as SQL groups them)."""
    unique, inverse = np.unique(keys, return_inverse=True)  # per-track sums: few rows
    labels = [_label(dimension, int(k), strings) for k in unique]
    merged: dict[str | None, int] = {}
    row_of = np.fromiter((merged.setdefault(label, len(merged)) for label in labels), np.int64, len(labels))
    rows = row_of[inverse] if len(inverse) else np.empty(0, np.int64)
    size = len(merged)
    out = [np.zeros(size, np.int64) for _ in range(3)]
    for summed, part in zip(out, (counts, totals, selfs), strict=True):
        np.add.at(summed, rows, part)
    names = list(merged)

    # longest first; ties by label as SQL's ORDER BY total_ps DESC, label (numbers for programs)
    def tie(label: str | None) -> tuple:
        return (label is None, int(label) if dimension == "program" and label else 0, label or "")

    order = np.array(sorted(range(size), key=lambda i: (-int(out[1][i]), tie(names[i]))), np.int64)
    return PivotTable(dimension, [names[i] for i in order.tolist()], *(o[order] for o in out))


def _label(dimension: str, key: int, strings) -> str | None:
    if key == _NO_KEY and dimension != "name":
        return None
    if dimension == "program":
        return str(np.int64(key).view(np.uint64))
    return strings[key]
