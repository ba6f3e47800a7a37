"""Set operations on interval lists, vectorized: union, intersection, difference, covered time.

An interval set is a pair of int64 arrays (starts, ends): disjoint, sorted, end > start, and no two
touching (the canonical form `merge_intervals` returns; any set of half-open intervals has exactly
one). Every operation here returns that form, so two ways of computing the same set give the same
arrays, bit for bit.

Intersection and difference never sort: each interval of the smaller set finds the intervals of the
other it overlaps with two binary searches (`np.searchsorted`), so their cost is
O(small * log(large) + output), which matters when a few hundred step windows or a few thousand
collectives meet a device's hundreds of thousands of busy intervals. The union of several sets sorts
the starts and the ends each on their own (a new run begins where the next start lies after the
previous end, whichever intervals those belong to), with no argsort and no gather.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Intervals = tuple[np.ndarray, np.ndarray]
# The covered time of one interval set in any windows (`coverage`): (window starts, window ends) -> ps.
Coverage = Callable[[np.ndarray, np.ndarray], np.ndarray]

__all__ = [
    "Coverage", "Intervals", "canonical", "coverage", "difference", "empty", "intersect", "merge_intervals",
    "total", "union", "union_in_place", "window_total",
]  # fmt: skip


def empty() -> Intervals:
    return np.empty(0, np.int64), np.empty(0, np.int64)


def total(intervals: Intervals) -> int:
    starts, ends = intervals
    return int((ends - starts).sum())


def merge_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of [start, end) intervals as disjoint, sorted intervals (zero-length ones dropped).

    Vectorized: after sorting by start, an interval opens a new run when it starts after the
    running maximum of all earlier ends.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    keep = ends > starts
    # Already merged (sorted, none empty, none touching: what this returns, and what the interval
    # algebra hands back to it) is checked in one pass, without the sort.
    all_kept = bool(keep.all())
    if all_kept and (starts[1:] > ends[:-1]).all():
        return starts, ends
    if not all_kept:  # a copy only when some are dropped: the sort below copies them anyway
        starts, ends = starts[keep], ends[keep]
    if len(starts) == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    running_end = np.maximum.accumulate(ends)
    new_run = np.empty(len(starts), dtype=bool)
    new_run[0] = True
    new_run[1:] = starts[1:] > running_end[:-1]
    run_starts = np.flatnonzero(new_run)
    if len(run_starts) == len(starts):  # none overlaps another once sorted: each is its own run
        return starts, running_end
    run_last = np.append(run_starts[1:], len(starts)) - 1
    return starts[run_starts], running_end[run_last]


def union(sets: Sequence[Intervals]) -> Intervals:
    """The union of interval sets (each in any form), as one canonical set.

    Sorting starts and ends separately is enough: the covered time at t is the number of starts <= t
    minus the number of ends <= t, so, with both sorted, the union has a gap between the i-th end and
    the (i+1)-th start exactly when that start lies after that end. A stable sort (timsort) merges the
    sorted runs of canonical sets in about linear time.

    More than two sets are joined in pairs, then pairs of those unions, and so on: sets that overlap
    shrink at each step (four TPU cores busy at once: 224k intervals each, 12k once two are joined,
    275 all four), so the later sorts are short; sets that lie apart cost about what one sort of them
    all does."""
    present = [(np.asarray(s, np.int64), np.asarray(e, np.int64)) for s, e in sets if len(s)]
    if not present:
        return empty()
    if len(present) == 1:
        merged = merge_intervals(*present[0])
        # A fresh set, as from the other cases, not the caller's arrays; unless those are read-only
        # (a shared fact, such as one device's busy time): nobody can write into them through it.
        shared = not (merged[0].flags.writeable or merged[1].flags.writeable)
        if merged[0] is present[0][0] and not shared:
            return merged[0].copy(), merged[1].copy()
        return merged
    while len(present) > 2:
        joined = [_joined(present[k : k + 2]) for k in range(0, len(present) - 1, 2)]
        present = joined + present[len(joined) * 2 :]
    return _joined(present)


def _joined(sets: list[Intervals]) -> Intervals:
    """The union of `sets`, one sort of their concatenation (`union_in_place`)."""
    return union_in_place(np.concatenate([s for s, _ in sets]), np.concatenate([e for _, e in sets]))


def union_in_place(starts: np.ndarray, ends: np.ndarray) -> Intervals:
    """The union of the int64 intervals [starts, ends) (in any form, in any order) as one canonical
    set, sorting the caller's own arrays in place (`union`'s sort of the starts and of the ends): for
    a caller that has written the intervals into arrays of its own, no copy of them is made."""
    keep = ends > starts
    if not keep.all():
        starts, ends = starts[keep], ends[keep]
        if len(starts) == 0:
            return empty()
    starts.sort(kind="stable")
    ends.sort(kind="stable")
    apart = starts[1:] > ends[:-1]
    if apart.all():  # no two touch or overlap (devices that never run at once): each is its own run
        return starts, ends
    breaks = np.flatnonzero(apart) + 1  # where a new run starts
    first = np.concatenate([[0], breaks])
    last = np.concatenate([breaks - 1, [len(starts) - 1]])
    return starts[first], ends[last]


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """The time in both `a` and `b`."""
    a = merge_intervals(*a)
    if len(a[0]) == 0:  # nothing to meet: `b` (a device's million busy intervals) is not checked
        return empty()
    b = merge_intervals(*b)
    if len(b[0]) == 0:
        return empty()
    if len(a[0]) > len(b[0]):  # the smaller set searches the larger
        a, b = b, a
    return _intersect_canonical(a, b)


def difference(a: Intervals, b: Intervals) -> Intervals:
    """The time in `a` and not in `b`."""
    a_given = a
    a = merge_intervals(*a)
    if len(a[0]) == 0:  # nothing to cut from: `b` (a device's million busy intervals) is not checked
        return empty()
    b = merge_intervals(*b)
    if len(b[0]) == 0:
        return a if a[0] is not a_given[0] else (a[0].copy(), a[1].copy())
    if len(b[0]) < len(a[0]):
        # Fewer holes than pieces: a meets the gaps of b (within a's span), the smaller set searching.
        return _intersect_canonical(_gaps(b, int(a[0][0]), int(a[1][-1])), a)
    if len(a[0]) == 1:  # one window (a whole profile, the steps' span) minus many intervals
        return _window_minus(int(a[0][0]), int(a[1][0]), b)
    return _cut_out(a, b)


def window_total(intervals: Intervals, window_starts: np.ndarray, window_ends: np.ndarray) -> np.ndarray:
    """Covered ps inside each window [w0, w1) (windows may overlap each other), for a canonical set.

    The covered time before t is piecewise linear in t (found by one binary search per window end),
    so any number of windows costs O((n + m) log n); one running sum serves both window ends
    (`device_ops.busy_in_windows` is this)."""
    return coverage(intervals)(window_starts, window_ends)


def coverage(intervals: Intervals) -> Coverage:
    """`window_total` of the canonical set `intervals` as a function of the windows, its running sum
    made once: for a caller that measures one large set in several rounds of windows."""
    return _Coverage(*intervals)


class _Coverage:
    """`coverage`'s function: an object, not a closure, so that what keeps one (a device, with its busy
    time's) still pickles."""

    __slots__ = ("starts", "ends", "before")

    def __init__(self, starts: np.ndarray, ends: np.ndarray):
        self.starts = np.asarray(starts, np.int64)  # interval sets are int64
        self.ends = np.asarray(ends, np.int64)
        # The running sum of the lengths, in one array: covered time before the k-th interval.
        self.before = np.empty(len(self.starts) + 1, np.int64)
        self.before[0] = 0
        np.subtract(self.ends, self.starts, out=self.before[1:])
        np.cumsum(self.before[1:], out=self.before[1:])

    def covered_before(self, at: np.ndarray) -> np.ndarray:
        starts, ends = self.starts, self.ends
        k = np.searchsorted(starts, at, side="right")  # intervals starting at or before t
        last = np.maximum(k - 1, 0)
        partial = np.clip(at - starts[last], 0, ends[last] - starts[last])
        return np.where(k > 0, self.before[last] + partial, 0)

    def __call__(self, window_starts: np.ndarray, window_ends: np.ndarray) -> np.ndarray:
        window_starts = np.asarray(window_starts, dtype=np.int64)
        window_ends = np.asarray(window_ends, dtype=np.int64)
        if len(self.starts) == 0:
            return np.zeros(len(window_starts), np.int64)
        if len(window_starts) > 1 and np.array_equal(window_starts[1:], window_ends[:-1]):
            # Windows end to end (steps, each to the next one's start): one search per edge, not two.
            edges = self.covered_before(np.append(window_starts, window_ends[-1:]))
            return np.maximum(edges[1:] - edges[:-1], 0)
        return np.maximum(self.covered_before(window_ends) - self.covered_before(window_starts), 0)


def canonical(starts: np.ndarray, ends: np.ndarray, in_order: bool = False) -> Intervals:
    """`merge_intervals(starts, ends)`, without its sort when the starts are already in order (one
    track's events, or any subset of them taken in order): a running maximum of the ends is then
    all the merge needs. `in_order`: the caller knows they are (a track's columns), so they are not
    checked."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    keep = ends > starts
    if keep.all():
        if (starts[1:] > ends[:-1]).all():  # canonical already (sorted, apart): one pass says so
            return starts, ends
    else:
        starts, ends = starts[keep], ends[keep]
    if len(starts) < 2 or not (in_order or (starts[1:] >= starts[:-1]).all()):
        return merge_intervals(starts, ends)
    running = np.maximum.accumulate(ends)
    breaks = np.flatnonzero(starts[1:] > running[:-1]) + 1  # where a new run starts
    if len(breaks) == len(starts) - 1:  # no two touch or overlap: the intervals are their own union
        return starts, ends
    first = np.concatenate([[0], breaks])
    last = np.concatenate([breaks - 1, [len(starts) - 1]])
    return starts[first], running[last]


def _overlapped(a: Intervals, b: Intervals) -> tuple[np.ndarray, np.ndarray]:
    """For each interval of canonical `a`, the range [lo, hi) of the intervals of canonical `b` it
    overlaps (b's end after a's start, b's start before a's end)."""
    lo = np.searchsorted(b[1], a[0], side="right")
    hi = np.searchsorted(b[0], a[1], side="left")
    return lo, np.maximum(hi, lo)


def _intersect_canonical(a: Intervals, b: Intervals) -> Intervals:
    """a & b for canonical sets, a searching b. Each overlap of an a and a b interval is one piece of
    the result; pieces are apart by a gap of a or of b, so the result is canonical as it comes."""
    lo, hi = _overlapped(a, b)
    counts = hi - lo
    if counts.max(initial=0) <= 1:  # each a meets at most one b: no expansion needed
        which_a = np.flatnonzero(counts)
        which_b = lo[which_a]
    else:
        which_a = np.repeat(np.arange(len(counts)), counts)
        firsts = np.cumsum(counts) - counts
        which_b = np.arange(len(which_a)) - np.repeat(firsts - lo, counts)
    starts = np.maximum(a[0][which_a], b[0][which_b])
    ends = np.minimum(a[1][which_a], b[1][which_b])
    return starts, ends


def _gaps(b: Intervals, low: int, high: int) -> Intervals:
    """The gaps between canonical `b`'s intervals, with [low, first start) and [last end, high) when
    not empty: canonical, as b's intervals separate them."""
    starts = np.concatenate([[low], b[1]])
    ends = np.concatenate([b[0], [high]])
    keep = ends > starts
    return (starts, ends) if keep.all() else (starts[keep], ends[keep])


def _window_minus(low: int, high: int, b: Intervals) -> Intervals:
    """[low, high) - b for canonical b: the gaps between the b intervals it overlaps, clipped to the
    window. The same pieces `_cut_out` makes for one a interval, from slices of b's columns instead of
    per-piece indices (the union of a million device ops is subtracted from one window this way)."""
    first = int(np.searchsorted(b[1], low, side="right"))  # the first b interval ending after low
    last = int(np.searchsorted(b[0], high, side="left"))  # past the last one starting before high
    starts = np.concatenate([[low], b[1][first:last]]).astype(np.int64, copy=False)
    ends = np.concatenate([b[0][first:last], [high]]).astype(np.int64, copy=False)
    np.maximum(starts, low, out=starts)
    np.minimum(ends, high, out=ends)
    keep = ends > starts
    return (starts, ends) if keep.all() else (starts[keep], ends[keep])


def _cut_out(a: Intervals, b: Intervals) -> Intervals:
    """a - b for canonical sets, a searching b: each a interval overlapping k intervals of b leaves
    up to k + 1 pieces (before the first, between each two, after the last)."""
    lo, hi = _overlapped(a, b)
    counts = hi - lo
    pieces = counts + 1
    which_a = np.repeat(np.arange(len(counts)), pieces)
    firsts = np.cumsum(pieces) - pieces
    j = np.arange(len(which_a)) - firsts[which_a]  # the piece's place in its a interval: 0..k
    k = counts[which_a]
    b_before = lo[which_a] + j - 1  # the b interval the piece follows (j > 0)
    b_after = lo[which_a] + j  # the b interval the piece precedes (j < k)
    a_starts, a_ends = a[0][which_a], a[1][which_a]
    starts = np.where(j > 0, b[1][np.maximum(b_before, 0)], a_starts)
    ends = np.where(j < k, b[0][np.minimum(b_after, len(b[0]) - 1)], a_ends)
    starts, ends = np.maximum(starts, a_starts), np.minimum(ends, a_ends)
    keep = ends > starts
    return starts[keep], ends[keep]
