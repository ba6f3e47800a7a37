"""Per-name count, total and self time of the events inside a selected time range (numpy, no Qt).

Times are clipped to the range, so an event that sticks out counts only its
part inside. Self time is an event's clipped time minus the clipped time of
its direct children (the events one level deeper that it contains), as
Perfetto and Tracy define it for a selected area.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tpuscope.model.trace import Track


@dataclass
class RangeSummary:
    """Parallel arrays sorted by total time, longest first."""

    name_ids: np.ndarray
    counts: np.ndarray
    total_ps: np.ndarray
    self_ps: np.ndarray

    def __len__(self) -> int:
        return len(self.name_ids)


def clipped_self_times(
    track: Track, indices: np.ndarray, t0_ps: int, t1_ps: int
) -> tuple[np.ndarray, np.ndarray]:
    """Clipped duration and self time of each event at `indices` (all events overlapping the range)."""
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


def summarize_range(tracks: list[Track], t0_ps: float, t1_ps: float) -> RangeSummary:
    """What ran inside [t0, t1] on these tracks, per event name."""
    t0, t1 = int(t0_ps), int(t1_ps)
    names, totals, selfs = [], [], []
    for track in tracks:
        indices = track.overlapping(t0, t1)
        if not len(indices):
            continue
        clipped, self_time = clipped_self_times(track, indices, t0, t1)
        names.append(track.name_id[indices])
        totals.append(clipped)
        selfs.append(self_time)
    if not names:
        empty = np.empty(0, np.int64)
        return RangeSummary(empty.astype(np.int32), empty, empty, empty)
    all_names = np.concatenate(names)
    unique, inverse = np.unique(all_names, return_inverse=True)
    counts = np.bincount(inverse, minlength=len(unique))
    total = np.bincount(inverse, weights=np.concatenate(totals), minlength=len(unique))
    own = np.bincount(inverse, weights=np.concatenate(selfs), minlength=len(unique))
    order = np.argsort(-total, kind="stable")
    return RangeSummary(
        unique[order], counts[order], total[order].astype(np.int64), own[order].astype(np.int64)
    )
