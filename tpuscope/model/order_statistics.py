"""Median, percentiles, sorted distinct values and membership: numpy's results without importing numpy.ma.

numpy 2.x imports its whole masked-array package (`numpy.ma`, 11-23 ms by `python -X importtime`) the
first time a process calls `np.median` (numpy/lib/_utils_impl.py `_median_nancheck` asks
`np.ma.isMaskedArray`), `np.percentile`/`np.quantile` (they call a plain `np.unique`), a plain
`np.unique(x)` (numpy/lib/_arraysetops_impl.py `_unique1d` asks `np.ma.is_masked`) or a small
`np.nanmedian` (numpy/lib/_nanfunctions_impl.py `_nanmedian_small` builds a masked array). Every
`tpuscope overview`/`diagnose` paid that import. The functions here follow numpy's own steps (the same
`partition` calls, `mean`, and `_lerp`'s two forms either side of t = 0.5), so their results are
bit-for-bit numpy's for the real (int and float) arrays we pass them; tests/model/test_order_statistics.py
checks that against numpy on randomized inputs.

numpy's set functions call that plain `np.unique` too: `np.isin` on its sorting path (use `isin`),
`np.union1d` (use `union`), and `np.intersect1d`/`np.setdiff1d` unless told `assume_unique=True` (give
them `sorted_distinct` values and `assume_unique=True`).

pyproject.toml bans `numpy.median`, `numpy.percentile`, `numpy.quantile`, `numpy.nanmedian`,
`numpy.isin` and `numpy.union1d` (ruff TID251). Ruff cannot ban `np.unique`, `np.intersect1d` or
`np.setdiff1d` only when called without `return_*`/`assume_unique=True` (those calls do not touch
numpy.ma), so they stay allowed: use `sorted_distinct` for a plain `np.unique`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

import numpy as np

Quantiles = Sequence[float] | np.ndarray
# sorted_distinct counts integers whose span (max - min) is at most this many per value plus this many
# (a count array no larger than a few times the input); wider ones it sorts. Our heuristic.
BINCOUNT_SPAN_PER_VALUE = 4
BINCOUNT_SPAN_FREE = 4096
# isin looks integers up in a table (numpy's kind="table") when the candidates' span is at most this
# many per value of both arrays: numpy's own choice for kind=None (numpy/lib/_arraysetops_impl.py _isin).
TABLE_SPAN_PER_VALUE = 6


def sorted_distinct(values: np.typing.ArrayLike) -> np.ndarray:
    """`np.unique(values)`: the distinct values, sorted, one NaN for all NaNs.

    Integers within a small span are counted (`bincount`: one pass, where numpy hashes them); others
    are sorted and compared with their neighbour, numpy's sorting path.
    """
    aux = np.asanyarray(values).flatten()
    if aux.dtype.kind in "iu" and aux.size:
        low = aux.min()
        span = int(aux.max()) - int(low)
        if span <= BINCOUNT_SPAN_PER_VALUE * aux.size + BINCOUNT_SPAN_FREE:
            if aux.dtype.kind == "u":  # no wrap-around: every value is at least `low`
                present = np.flatnonzero(np.bincount((aux - low).astype(np.intp), minlength=span + 1))
                return present.astype(aux.dtype) + low
            wide = np.int64(low)  # int8..int32 differences may not fit their own type
            present = np.flatnonzero(np.bincount((aux.astype(np.int64) - wide).astype(np.intp)))
            return (present + wide).astype(aux.dtype)
    aux.sort()
    mask = np.empty(aux.shape, dtype=np.bool_)
    mask[:1] = True
    if aux.dtype.kind in "fmM" and aux.shape[0] > 0 and np.isnan(aux[-1]):
        first_nan = int(np.searchsorted(aux, aux[-1], side="left"))  # NaNs sort last
        if first_nan > 0:
            mask[1:first_nan] = aux[1:first_nan] != aux[: first_nan - 1]
        mask[first_nan] = True
        mask[first_nan + 1 :] = False
    else:
        mask[1:] = aux[1:] != aux[:-1]
    return aux[mask]


def isin(values: np.typing.ArrayLike, candidates: np.typing.ArrayLike) -> np.ndarray:
    """`np.isin(values, candidates)`: whether each value is one of the candidates.

    numpy's sorting path (candidates that are no integers of a small span) calls a plain `np.unique` of
    them; here their sorted distinct values are searched instead. A yes or no is the same either way.
    """
    a = np.asarray(values)
    b = np.asarray(candidates).ravel()
    if a.size == 0 or b.size == 0:
        return np.zeros(a.shape, dtype=bool)
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        if int(b.max()) - int(b.min()) <= TABLE_SPAN_PER_VALUE * (a.size + b.size):
            return np.isin(a, b, kind="table")  # noqa: TID251 - the table path calls no np.unique
    distinct = sorted_distinct(b)
    place = np.minimum(np.searchsorted(distinct, a), len(distinct) - 1)
    return np.asarray(distinct[place] == a)


def union(first: np.typing.ArrayLike, second: np.typing.ArrayLike) -> np.ndarray:
    """`np.union1d(first, second)`: the sorted distinct values of both (numpy's definition of it)."""
    return sorted_distinct(np.concatenate((first, second), axis=None))


@overload
def median(values: np.typing.ArrayLike, axis: None = None) -> np.floating: ...
@overload
def median(values: np.typing.ArrayLike, axis: int) -> np.ndarray: ...
def median(values: np.typing.ArrayLike, axis: int | None = None) -> Any:
    """`np.median(values, axis)`: the middle value, or the mean of the two middle ones; NaN if any NaN.

    numpy's `_median`: one partition around the middle (and the last place, where NaNs sort), then
    `mean` of the middle one or two (which gives the dtype, float64 for ints).
    """
    a = np.asanyarray(values)
    if axis is not None:
        axis = _normalized_axis(axis, a.ndim)
    size = a.size if axis is None else a.shape[axis]
    kth = [size // 2 - 1, size // 2] if size % 2 == 0 else [(size - 1) // 2]
    supports_nans = np.issubdtype(a.dtype, np.inexact) or a.dtype.kind in "Mm"
    if supports_nans:
        kth.append(-1)
    part = np.partition(a, kth, axis=axis)
    if part.shape == ():
        return part.item()
    if axis is None:
        axis = 0
    indexer: list[slice] = [slice(None)] * part.ndim
    index = part.shape[axis] // 2
    indexer[axis] = slice(index, index + 1) if part.shape[axis] % 2 == 1 else slice(index - 1, index + 1)
    result = np.mean(part[tuple(indexer)], axis=axis)
    if supports_nans and size > 0 and part.size > 0:
        last = part.take(-1, axis=axis)  # a NaN sorts last: numpy's _median_nancheck
        nan = np.isnan(last)
        if nan.any():
            if isinstance(result, np.generic):
                return last
            np.copyto(result, last, where=nan)
    return result


def nanmedian_columns(values: np.ndarray) -> np.ndarray:
    """`np.nanmedian(values, axis=0)` of a 2-D float array: each column's median of its non-NaN values.

    numpy takes the mean of the two middle values (the middle one twice when odd) of each column's sorted
    non-NaN values, by masked arrays below 600 rows and by `np.median` per column above; NaN (and numpy's
    "All-NaN slice" warning) where a column has none.
    """
    a = np.asarray(values)
    ordered = np.sort(a, axis=0)  # NaNs last
    count = (~np.isnan(a)).sum(axis=0)
    high = count // 2
    low = np.where(count % 2 == 1, high, high - 1)
    empty = count == 0
    rows = np.maximum(np.stack([low, high]), 0)
    pair = np.take_along_axis(ordered, rows, axis=0)
    result = (pair[0] + pair[1]) / 2.0
    if empty.any():
        import warnings

        for _ in range(int(empty.sum())):
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=2)
        result[empty] = np.nan
    return result


@overload
def percentile(values: np.typing.ArrayLike, q: float) -> np.floating: ...
@overload
def percentile(values: np.typing.ArrayLike, q: Quantiles) -> np.ndarray: ...
def percentile(values: np.typing.ArrayLike, q: float | Quantiles) -> Any:
    """`np.percentile(values, q)` by numpy's default 'linear' method; q in [0, 100], one or a sequence."""
    fractions = np.asarray(np.true_divide(q, 100))
    return _checked_quantile(values, fractions, q, "Percentiles must be in the range [0, 100]")


@overload
def quantile(values: np.typing.ArrayLike, q: float) -> np.floating: ...
@overload
def quantile(values: np.typing.ArrayLike, q: Quantiles) -> np.ndarray: ...
def quantile(values: np.typing.ArrayLike, q: float | Quantiles) -> Any:
    """`np.quantile(values, q)` with numpy's default 'linear' method; q in [0, 1], a number or a sequence."""
    return _checked_quantile(values, np.asanyarray(q), q, "Quantiles must be in the range [0, 1]")


def _checked_quantile(values: np.typing.ArrayLike, fractions: np.ndarray, q: Any, out_of_range: str) -> Any:
    """The linear quantiles at `fractions` (from `q` as the caller was given it: a Python number keeps
    numpy's weak scalar type rules), after numpy's range check and its error sentence."""
    if not _valid(fractions):
        raise ValueError(out_of_range)
    return _linear_quantile(np.asanyarray(values), fractions, type(q) in (int, float))


def _normalized_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def _valid(q: np.ndarray) -> bool:
    return bool(q.size == 0 or (q.min() >= 0 and q.max() <= 1))


def _linear_quantile(a: np.ndarray, q: np.ndarray, weak_q: bool) -> Any:
    """numpy's `_quantile` for method='linear' over the flattened array (virtual index (n - 1) * q)."""
    if a.dtype.kind == "c":
        raise TypeError("a must be an array of real numbers")
    if q.ndim > 2:
        raise ValueError("q must be a scalar or 1d")
    arr = a.flatten()
    count = arr.shape[0]
    supports_nans = np.issubdtype(arr.dtype, np.inexact) or arr.dtype.kind in "Mm"
    virtual = np.asanyarray((count - 1) * q)
    result: Any
    if np.issubdtype(virtual.dtype, np.integer):  # integer q: the order statistics themselves
        if supports_nans:
            arr.partition(np.concatenate((virtual.ravel(), [-1])), axis=0)
            having_nans = np.isnan(arr[-1, ...])
        else:
            arr.partition(virtual.ravel(), axis=0)
            having_nans = np.array(False, dtype=bool)
        result = np.take(arr, virtual, axis=0)
    else:
        previous_index, next_index = _neighbours(arr, virtual, count)
        arr.partition(sorted_distinct(np.concatenate(([0, -1], previous_index.ravel(), next_index.ravel()))))
        having_nans = np.isnan(arr[-1, ...]) if supports_nans else np.array(False, dtype=bool)
        gamma = np.asanyarray(np.asanyarray(virtual - previous_index), dtype=virtual.dtype)
        weight: float | np.ndarray = float(gamma) if weak_q else gamma.reshape(virtual.shape)
        result = _lerp(arr[previous_index], arr[next_index], weight)
    if np.any(having_nans):
        if result.ndim == 0:
            result = arr[-1]
        else:
            np.copyto(result, arr[-1, ...], where=having_nans)
    return result


def _neighbours(arr: np.ndarray, virtual: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """numpy's `_get_indexes`: the places either side of each virtual index, clamped to the ends."""
    previous_index = np.asarray(np.floor(virtual))
    next_index = np.asarray(np.add(previous_index, 1))
    above = virtual >= count - 1
    if above.any():
        previous_index[above] = -1
        next_index[above] = -1
    below = virtual < 0
    if below.any():
        previous_index[below] = 0
        next_index[below] = 0
    if np.issubdtype(arr.dtype, np.inexact):
        nans = np.isnan(virtual)
        if nans.any():
            previous_index[nans] = -1
            next_index[nans] = -1
    return previous_index.astype(np.intp), next_index.astype(np.intp)


def _lerp(a: np.ndarray, b: np.ndarray, t: float | np.ndarray) -> np.ndarray | np.floating:
    """numpy's `_lerp`: a + (b - a) t below t = 0.5, b - (b - a)(1 - t) from it (exact at both ends)."""
    diff = b - a
    out = np.asarray(np.add(a, diff * t))
    np.subtract(
        b, diff * (1 - t), out=out, where=np.asarray(t) >= 0.5, casting="unsafe", dtype=type(out.dtype)
    )
    if out.ndim == 0:
        return out[()]
    return out
