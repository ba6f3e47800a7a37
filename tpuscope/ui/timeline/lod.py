"""Level-of-detail boxes for the timeline: at most a few boxes per pixel column, in numpy.

Why: a 10M-event trace cannot be drawn event by event at 60 fps. For each
(track, depth) the events are non-overlapping and sorted by start, so runs of
events that are too small to see can be merged into one box (Tracy's zone
folding in `profiler/src/profiler/TracyTimelineItemThread.cpp`, catapult's
2 px rule in `tracing/tracing/ui/base/fast_rect_renderer.html`). Doing that
merge over millions of events on every frame would itself be too slow, so a
pyramid of pre-merged boxes is built once per
depth at resolutions growing by LEVEL_FACTOR (xprof's precomputed levels in
`xprof/convert/trace_viewer/trace_events.h` `kLayerResolutions`, Perfetto's power-of-2
resolutions in `ui/src/base/resolution.ts`). A frame reads the
coarsest level still finer than its pixel and merges the few thousand boxes
it finds down to pixel columns.

Nothing here knows about Qt: the view turns the boxes into rectangles.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.records import record
from tpuscope.model.trace import Trace, Track
from tpuscope.ui.timeline import _boxmerge

# Resolution grows by this factor from one pyramid level to the next: a frame then reads at most
# LEVEL_FACTOR boxes per merge width (xprof uses 10, `trace_events.h` kLayerResolutions; Perfetto 2).
LEVEL_FACTOR = 4
# Level 0 merges at this many mean event spacings: finer views read raw events, of which a
# 1600 px window then holds about 1600 * MERGE_PX * this many at most on a uniform track.
BASE_SPACINGS = 32
# Depths with fewer events than this read their raw events at every zoom: a pyramid would not pay.
MIN_EVENTS_FOR_PYRAMID = 4096
# A level is kept only when it holds at most this share of the boxes of the level below it.
MIN_LEVEL_REDUCTION = 0.5


def time_key(t_ps: float, up: bool = False) -> np.int64:
    """A window edge as int64, rounded outwards.

    Bisecting an int64 column with a float key makes numpy convert the whole
    column to float first: O(n) per lookup instead of O(log n).
    """
    return np.int64(math.ceil(t_ps) if up else math.floor(t_ps))


# A sorted column's search sample holds every SAMPLE_STRIDE-th value (our heuristic: 4 KiB of int64
# per stride block, and a sample of 1/512 of the column, 0.2% more memory).
SAMPLE_STRIDE = 512


class Bisector:
    """np.searchsorted on a big sorted column, through a small sample of it first.

    Why: one bisection of a 22M-event column touches ~25 pages far apart;
    each costs a cache and TLB miss (49 us per search at 100M events against
    8 us at 10M, measured; a frame makes ~140). The sample stays in cache, so
    a search then reads one stride block of the column: one or two pages.
    """

    def __init__(self, values: np.ndarray):
        self.values = values
        self.sample = values[::SAMPLE_STRIDE].copy() if len(values) > 4 * SAMPLE_STRIDE else None

    def __call__(self, key, side: Literal["left", "right"] = "left") -> int:
        values = self.values
        if self.sample is None:
            return int(values.searchsorted(key, side=side))
        # sample[block - 1] is below the key (at or below for side="right"), sample[block] not: the answer
        # lies after the stride block that sample[block - 1] starts, and at or before sample[block]'s.
        block = int(self.sample.searchsorted(key, side=side))
        lo = max(0, (block - 1) * SAMPLE_STRIDE)
        hi = min(len(values), block * SAMPLE_STRIDE)
        return lo + int(values[lo:hi].searchsorted(key, side=side))


@record
class Boxes:
    """Boxes of one (track, depth) in time order: merged runs or single events.

    `rep` is the track index of the run's longest event (its name and colour),
    `count` how many events the box stands for (1 = one real event).
    """

    start_ps: np.ndarray  # int64
    end_ps: np.ndarray  # int64
    rep: np.ndarray  # int64 track indices
    count: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.start_ps)

    def nbytes(self) -> int:
        return self.start_ps.nbytes + self.end_ps.nbytes + self.rep.nbytes + self.count.nbytes


def merge_small(
    start: np.ndarray, end: np.ndarray, rep: np.ndarray, count: np.ndarray, min_ps: float
) -> Boxes:
    """Merges neighbouring boxes shorter than `min_ps` that start in the same `min_ps` bucket.

    Boxes at least `min_ps` long stay as they are, so every visible event keeps
    its own box and colour; sub-pixel ones are folded per bucket into one box
    that takes the name and colour of its longest member, as Perfetto's mipmap
    keeps the longest slice per bucket (google/perfetto `src/trace_processor/plugins/
    slice_mipmap_operator/slice_mipmap_operator.h`). The
    gap rule (Tracy, catapult) keeps isolated small events apart.
    """
    n = len(start)
    if n < 2:
        return Boxes(start, end, rep, count)
    s, e, r, c = (np.ascontiguousarray(column, np.int64) for column in (start, end, rep, count))
    merged = [np.empty(n, np.int64) for _ in range(4)]
    boxes = _boxmerge.merge_small(s, e, r, c, float(min_ps), *merged)  # one pass in C, the same rule
    if boxes == n:
        return Boxes(start, end, rep, count)
    return Boxes(
        *(column[:boxes].copy() for column in merged)
    )  # copies: a pyramid level keeps no n-sized base


class DepthLod:
    """The pyramid of one depth of one track.

    `indices` are the track indices of this depth's events (None when the
    track has only depth 0: then the track's own columns are this depth).
    """

    def __init__(self, track: Track, depth: int, indices: np.ndarray | None, starts: Bisector):
        self.track = track
        self.depth = depth
        self.indices = indices
        self.levels: list[tuple[float, Boxes]] = []  # (merge resolution in ps, boxes), finest first
        self._starts = starts  # the track's start column (shared by its depths)
        self._indices = None if indices is None else Bisector(indices)
        self._level_starts: list[Bisector] = []

    def __len__(self) -> int:
        return len(self.track) if self.indices is None else len(self.indices)

    def nbytes(self) -> int:
        own = 0 if self.indices is None else self.indices.nbytes
        samples = [b.sample for b in (self._indices, *self._level_starts) if b is not None]
        own += sum(sample.nbytes for sample in samples if sample is not None)
        return own + sum(boxes.nbytes() for _, boxes in self.levels)

    def _raw_columns(self, positions: slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        track = self.track
        if self.indices is None:
            rows = np.arange(*positions.indices(len(track)), dtype=np.int64)
        else:
            rows = self.indices[positions]
        start = track.start_ps[rows]
        return start, start + track.duration_ps[rows], rows.astype(np.int64, copy=False)

    def build(self) -> None:
        n = len(self)
        if n < MIN_EVENTS_FOR_PYRAMID:
            return
        start, end, rows = self._raw_columns(slice(None))
        span = max(1, int(end.max()) - int(start[0]))
        resolution = 2.0 ** np.ceil(np.log2(max(1.0, span / n * BASE_SPACINGS)))
        boxes = Boxes(start, end, rows, np.ones(n, np.int64))
        previous = n
        while resolution < span and len(boxes) > 2:
            boxes = merge_small(boxes.start_ps, boxes.end_ps, boxes.rep, boxes.count, resolution)
            if len(boxes) <= previous * MIN_LEVEL_REDUCTION:
                self.levels.append((resolution, boxes))
                self._level_starts.append(Bisector(boxes.start_ps))
                previous = len(boxes)
            resolution *= LEVEL_FACTOR

    def window(self, t0_ps: float, t1_ps: float, min_ps: float) -> Boxes:
        """Boxes overlapping [t0, t1), merged so that none is shorter than `min_ps` unless isolated."""
        level = None
        for (resolution, boxes), bisect in zip(self.levels, self._level_starts, strict=True):
            if resolution <= min_ps:
                level, level_bisect = boxes, bisect
            else:
                break
        if level is not None:
            lo = max(0, level_bisect(time_key(t0_ps), side="right") - 1)
            hi = level_bisect(time_key(t1_ps, up=True), side="left")
            part = slice(lo, hi)
            start, end, rep, count = (
                level.start_ps[part],
                level.end_ps[part],
                level.rep[part],
                level.count[part],
            )
        else:
            start, end, rep = self._raw_window(t0_ps, t1_ps)
            count = np.ones(len(start), np.int64)
        keep = end > t0_ps
        if not keep.all():
            start, end, rep, count = start[keep], end[keep], rep[keep], count[keep]
        return merge_small(start, end, rep, count, min_ps)

    def _raw_window(self, t0_ps: float, t1_ps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # Events of one depth nest, so they do not overlap: only the one event starting before t0
        # can reach into the window. Track positions are found by bisection, then mapped to this depth.
        p0 = self._starts(time_key(t0_ps), side="right")
        p1 = self._starts(time_key(t1_ps, up=True), side="left")
        if self._indices is None:
            lo, hi = max(0, p0 - 1), p1
        else:
            lo = max(0, self._indices(p0, side="left") - 1)
            hi = self._indices(p1, side="left")
        return self._raw_columns(slice(lo, max(lo, hi)))


class TrackLod:
    """All depths of one track, or of a subset of its events (search matches, highlights)."""

    def __init__(self, track: Track, subset: np.ndarray | None = None):
        self.track = track
        self.starts = starts = Bisector(track.start_ps)
        if subset is None and track.max_depth == 0:
            self.depths = [DepthLod(track, 0, None, starts)]
        else:
            rows = (
                np.arange(len(track), dtype=np.int32) if subset is None else np.sort(subset).astype(np.int32)
            )
            depth = track.depth[rows]
            order = np.argsort(depth, kind="stable")
            present = order_statistics.sorted_distinct(depth)
            bounds = (
                np.searchsorted(depth[order], np.append(present, present[-1] + 1))
                if len(present)
                else np.empty(0, np.intp)
            )
            self.depths = [
                DepthLod(track, int(d), rows[order[bounds[i] : bounds[i + 1]]], starts)
                for i, d in enumerate(present)
            ]
        for depth_lod in self.depths:
            depth_lod.build()

    def nbytes(self) -> int:
        sample = self.starts.sample
        return sum(d.nbytes() for d in self.depths) + (0 if sample is None else sample.nbytes)

    def event_at(self, depth: int, t_ps: float, tolerance_ps: float) -> int | None:
        """The track index of the event at `depth` under time `t_ps` (or nearest within the tolerance)."""
        for depth_lod in self.depths:
            if depth_lod.depth != depth:
                continue
            start, end, rows = depth_lod._raw_window(t_ps - tolerance_ps, t_ps + tolerance_ps)
            if not len(rows):
                return None
            distance = np.maximum(0, np.maximum(start - t_ps, t_ps - end)).astype(np.float64)
            best = int(np.argmin(distance))
            return int(rows[best]) if distance[best] <= tolerance_ps else None
        return None


class TimelineLod:
    """Pyramids for every non-empty track of a trace; built once per trace, off the UI thread."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.tracks: dict[int, TrackLod] = {id(t): TrackLod(t) for t in trace.tracks() if len(t)}

    def of(self, track: Track) -> TrackLod | None:
        return self.tracks.get(id(track))

    def nbytes(self) -> int:
        return sum(t.nbytes() for t in self.tracks.values())
