"""Set operations on interval lists, vectorized: union (from device_ops), intersection, difference.

An interval set is a pair of int64 arrays (starts, ends): disjoint, sorted, end > start.
Intersection and difference sweep the boundaries of both sets once: each set's boundaries add
+1/-1 (set a) or +2/-2 (set b) to a running code, so code 3 means "in both" and code 1 "only
in a" (the sweep-line idea HTA uses for compute/communication overlap).
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.device_ops import merge_intervals

Intervals = tuple[np.ndarray, np.ndarray]

__all__ = ["Intervals", "difference", "empty", "intersect", "merge_intervals", "total", "window_total"]


def empty() -> Intervals:
    return np.empty(0, np.int64), np.empty(0, np.int64)


def total(intervals: Intervals) -> int:
    starts, ends = intervals
    return int((ends - starts).sum())


def intersect(a: Intervals, b: Intervals) -> Intervals:
    return _sweep(a, b, 3)


def difference(a: Intervals, b: Intervals) -> Intervals:
    return _sweep(a, b, 1)


def window_total(intervals: Intervals, window_starts: np.ndarray, window_ends: np.ndarray) -> np.ndarray:
    """Covered ps inside each window [w0, w1) (windows may overlap each other)."""
    from tpuscope.analysis.device_ops import busy_in_windows

    return busy_in_windows(intervals[0], intervals[1], window_starts, window_ends)


def _sweep(a: Intervals, b: Intervals, code: int) -> Intervals:
    a = merge_intervals(*a)
    b = merge_intervals(*b)
    if len(a[0]) == 0:
        return empty()
    times = np.concatenate([a[0], a[1], b[0], b[1]])
    deltas = np.concatenate(
        [np.full(len(a[0]), 1), np.full(len(a[1]), -1), np.full(len(b[0]), 2), np.full(len(b[1]), -2)]
    ).astype(np.int64)
    order = np.lexsort((deltas, times))  # at equal times, closings (negative) first
    times, deltas = times[order], deltas[order]
    running = np.cumsum(deltas)
    # Segment k spans [times[k], times[k+1]) with coverage code running[k].
    inside = running[:-1] == code
    seg_starts, seg_ends = times[:-1][inside], times[1:][inside]
    return merge_intervals(seg_starts, seg_ends)
