"""Interval set operations against a boolean-timeline oracle (property-based)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tpuscope.analysis.facts.intervals import difference, intersect, total, union, window_total

SPAN = 60
pairs = st.lists(st.tuples(st.integers(0, SPAN), st.integers(0, SPAN)), max_size=12)


def _arrays(items):
    starts = np.array([min(a, b) for a, b in items], dtype=np.int64)
    ends = np.array([max(a, b) for a, b in items], dtype=np.int64)
    return starts, ends


def _mask(intervals):
    mask = np.zeros(SPAN, dtype=bool)
    for a, b in zip(*intervals, strict=True):
        mask[a:b] = True
    return mask


@settings(max_examples=200, deadline=None)
@given(pairs, pairs)
def test_intersection_and_difference_match_the_timeline(a_items, b_items):
    a, b = _arrays(a_items), _arrays(b_items)
    both, only_a = intersect(a, b), difference(a, b)
    assert np.array_equal(_mask(both), _mask(a) & _mask(b))
    assert np.array_equal(_mask(only_a), _mask(a) & ~_mask(b))
    assert total(both) == int((_mask(a) & _mask(b)).sum())
    # Results are disjoint and sorted, with no empty intervals.
    for starts, ends in (both, only_a):
        assert np.all(ends > starts)
        assert np.all(starts[1:] > ends[:-1])


@settings(max_examples=100, deadline=None)
@given(pairs, st.integers(0, SPAN), st.integers(0, SPAN))
def test_window_total_counts_covered_time(items, w0, w1):
    w0, w1 = min(w0, w1), max(w0, w1)
    a = intersect(_arrays(items), _arrays(items))  # normalized (merged) form
    got = window_total(a, np.array([w0]), np.array([w1]))[0]
    assert got == int(_mask(a)[w0:w1].sum())


@settings(max_examples=100, deadline=None)
@given(pairs, st.lists(st.integers(0, SPAN), min_size=2, max_size=8))
def test_window_total_of_windows_end_to_end_counts_each(items, edges):
    """Windows each ending where the next starts (steps) are measured edge by edge: the same totals."""
    a = intersect(_arrays(items), _arrays(items))
    edges = sorted(edges)
    starts, ends = np.array(edges[:-1]), np.array(edges[1:])
    got = window_total(a, starts, ends)
    assert got.dtype == np.int64
    assert got.tolist() == [int(_mask(a)[w0:w1].sum()) for w0, w1 in zip(starts, ends, strict=True)]


@settings(max_examples=300, deadline=None)
@given(st.lists(pairs, min_size=1, max_size=5))
def test_union_of_several_sets_matches_the_timeline(sets):
    """Several sets, overlapping or apart, in any form: one canonical set, fresh arrays."""
    arrays = [_arrays(items) for items in sets]
    got = union(arrays)
    expected = np.zeros(SPAN, dtype=bool)
    for a in arrays:
        expected |= _mask(a)
    assert np.array_equal(_mask(got), expected)
    starts, ends = got
    assert starts.dtype == ends.dtype == np.int64
    assert np.all(ends > starts) and np.all(starts[1:] > ends[:-1])
    assert all(g is not a for g in got for a in arrays[0])  # never the caller's own (writable) arrays
