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


def distinct(*columns: np.ndarray) -> np.ndarray:
    """`np.unique` (int64) of the non-negative integers of one or more columns, without its sort or
    their concatenation: a count per value, made a slice at a time, finds the distinct ones in order."""
    columns = tuple(c for c in columns if len(c))
    if not columns:
        return np.empty(0, np.int64)
    counts = np.zeros(max(int(c.max()) for c in columns) + 1, np.int64)
    for ids in columns:
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
