"""Columns of small non-negative integers (string ids, label ids): their distinct values, and values
looked up per item through a table, a slice at a time.

numpy indexes and counts with 64-bit integers only: `table[ids]`, `np.take` and `np.bincount` first
copy a narrower column (int32 string ids, 16-bit name numbers) whole into a 64-bit one, 8 MB per
million items. That copy is fresh memory, and faulting fresh pages in is what costs: ~0.45 ms per MB
on our 2-core machine where a pass over memory already in use costs ~0.03 ms. A slice's copy is
freed before the next is made, so every slice reuses the same memory.
"""

from __future__ import annotations

import numpy as np

# Items counted or looked up per slice: 512 kB of 64-bit integers, so the copy of one slice is made in
# memory the allocator hands back for the next. Our heuristic.
SLICE = 1 << 16

__all__ = ["SLICE", "distinct", "take"]


def distinct(ids: np.ndarray) -> np.ndarray:
    """`np.unique(ids)` (int64) of non-negative integers, without its sort: a count per value, made a
    slice at a time, finds the distinct ones in order."""
    if len(ids) == 0:
        return np.empty(0, np.int64)
    counts = np.zeros(int(ids.max()) + 1, np.int64)
    for start in range(0, len(ids), SLICE):
        part = np.bincount(ids[start : start + SLICE])
        counts[: len(part)] += part
    return np.flatnonzero(counts)


def take(table: np.ndarray, ids: np.ndarray, out: np.ndarray) -> np.ndarray:
    """`out[...] = table[ids]`, a slice at a time; returns `out`. The ids must lie in the table: they are
    not checked (numpy's check buffers `out`), an id past the end reads the last entry."""
    for start in range(0, len(ids), SLICE):
        np.take(table, ids[start : start + SLICE], out=out[start : start + SLICE], mode="clip")
    return out
