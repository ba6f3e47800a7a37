"""tpuscope.model.order_statistics gives numpy's median, percentiles and unique values bit for bit."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

from tpuscope.model import order_statistics as stats

SIZES = (1, 2, 3, 4, 5, 6, 7, 10, 11, 64, 99, 100, 1001)
SCALAR_Q = (0, 5, 50, 95, 100, 99.9, 90, 25.0, 0.1, 33.3)
Q_ARRAYS = ([5.0, 50.0, 95.0], np.array([0.0, 99.9, 100.0, 12.5]), [0, 100], [50])


def samples(seed: int):
    """Float64 and int64 1-D arrays: ties, negatives, huge and tiny values, NaNs."""
    rng = np.random.default_rng(seed)
    for n in SIZES:
        yield rng.normal(0, 1e6, n)
        yield rng.integers(-5, 5, n).astype(np.float64)  # ties
        yield rng.integers(-(10**12), 10**12, n, dtype=np.int64)
        yield rng.integers(0, 3, n, dtype=np.int64)  # ties
        yield rng.exponential(1e9, n) * rng.choice([1e-9, 1.0, 1e9], n)
        with_nan = rng.normal(0, 1, n)
        with_nan[rng.integers(0, n)] = np.nan
        yield with_nan


def same(ours, theirs) -> None:
    assert type(ours) is type(theirs)
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype
    nan_able = np.asarray(theirs).dtype.kind in "fc"
    assert np.array_equal(ours, theirs, equal_nan=nan_able), (ours, theirs)


@pytest.mark.parametrize("seed", range(6))
def test_median_is_numpys(seed):
    for values in samples(seed):
        same(stats.median(values), np.median(values))
        same(stats.median(np.abs(values - np.median(values))), np.median(np.abs(values - np.median(values))))


@pytest.mark.parametrize("seed", range(6))
def test_percentile_and_quantile_are_numpys(seed):
    for values in samples(seed):
        for q in SCALAR_Q:
            same(stats.percentile(values, q), np.percentile(values, q))
            same(stats.quantile(values, q / 100), np.quantile(values, q / 100))
        for qs in Q_ARRAYS:
            same(stats.percentile(values, qs), np.percentile(values, qs))
            same(stats.quantile(values, np.asarray(qs) / 100), np.quantile(values, np.asarray(qs) / 100))
        same(stats.quantile(values, [0.025, 0.975]), np.quantile(values, [0.025, 0.975]))
        same(stats.percentile(values, np.float64(95)), np.percentile(values, np.float64(95)))


@pytest.mark.parametrize("seed", range(4))
def test_median_along_an_axis_is_numpys(seed):
    rng = np.random.default_rng(seed)
    for rows, columns in ((1, 1), (2, 3), (3, 2), (5, 7), (8, 4), (16, 1)):
        values = rng.normal(0, 1e6, (rows, columns))
        ints = rng.integers(-100, 100, (rows, columns))
        values[rng.integers(0, rows), rng.integers(0, columns)] = np.nan
        for array in (values, ints, np.round(values)):
            for axis in (0, 1, -1, None):
                same(stats.median(array, axis=axis), np.median(array, axis=axis))
        same(
            stats.median(values - stats.median(values, axis=0), axis=1),
            np.median(values - np.median(values, axis=0), axis=1),
        )


@pytest.mark.parametrize("seed", range(4))
def test_sorted_distinct_is_numpys_unique(seed):
    rng = np.random.default_rng(seed)
    for n in (0, *SIZES):
        for values in (
            rng.integers(-3, 40, n),
            rng.integers(0, 2**40, n, dtype=np.int64),
            rng.integers(0, 9, n).astype(np.int32),
            rng.integers(0, 9, n).astype(np.uint64),
            np.where(rng.random(n) < 0.3, np.nan, rng.integers(0, 5, n).astype(np.float64)),
            rng.integers(0, 4, (n, 2)),
            rng.integers(-128, 128, n).astype(np.int8),
            rng.integers(2**63, 2**63 + 50, n, dtype=np.uint64),
            rng.integers(-(2**62), 2**62, n, dtype=np.int64),
            rng.choice(np.array(["b", "a", "ab", ""]), n),
        ):
            same(stats.sorted_distinct(values), np.unique(values))
    same(stats.sorted_distinct([3, 1, 3]), np.unique([3, 1, 3]))


@pytest.mark.parametrize("seed", range(4))
def test_nanmedian_columns_is_numpys(seed):
    rng = np.random.default_rng(seed)
    for rows, columns in ((1, 3), (2, 5), (3, 4), (7, 6), (16, 9), (700, 3)):
        values = rng.normal(0, 1e9, (rows, columns))
        values[rng.random((rows, columns)) < 0.3] = np.nan
        values[0] = np.where(np.isnan(values[0]), 1.0, values[0])  # every column has one
        same(stats.nanmedian_columns(values), np.nanmedian(values, axis=0))


def test_an_all_nan_column_is_nan_with_numpys_warning():
    values = np.array([[1.0, np.nan], [2.0, np.nan]])
    with pytest.warns(RuntimeWarning, match="All-NaN slice"):
        ours = stats.nanmedian_columns(values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(ours, np.nanmedian(values, axis=0))


def test_empty_and_invalid_inputs_behave_as_numpy():
    with pytest.warns(RuntimeWarning):
        ours = stats.median(np.empty(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(ours, np.median(np.empty(0)))
    with pytest.raises(IndexError):
        np.percentile(np.empty(0), 95)
    with pytest.raises(IndexError):
        stats.percentile(np.empty(0), 95)
    with pytest.raises(ValueError, match="Percentiles must be in the range"):
        stats.percentile([1.0, 2.0], 101)
    same(stats.median(np.float64(3.5)), np.median(np.float64(3.5)))
    same(stats.median([1, 2]), np.median([1, 2]))
    same(stats.percentile([1, 2, 3], 50), np.percentile([1, 2, 3], 50))


@pytest.mark.parametrize("seed", range(4))
def test_isin_and_union_are_numpys(seed):
    rng = np.random.default_rng(seed)
    for n, m in ((0, 3), (3, 0), (1, 1), (5, 3), (100, 7), (1000, 300), (50, 2000)):
        for values, candidates in (
            (rng.integers(-5, 20, n), rng.integers(-5, 20, m)),  # numpy's table path
            (rng.integers(0, 2**50, n), rng.integers(0, 2**50, m)),  # its sorting path
            (rng.integers(0, 30, n).astype(np.int32), rng.integers(0, 2**40, m)),
            (np.where(rng.random(n) < 0.2, np.nan, rng.integers(0, 9, n) / 2), rng.integers(0, 9, m) / 2),
            (rng.integers(0, 9, (n, 2)), rng.integers(0, 2**45, m) % 11),
        ):
            candidates[: m // 2] = np.resize(values.ravel(), m // 2) if values.size else candidates[: m // 2]
            same(stats.isin(values, candidates), np.isin(values, candidates))
            same(stats.union(values, candidates), np.union1d(values, candidates))
    same(stats.isin(3, [1, 3]), np.isin(3, [1, 3]))
    same(stats.isin(np.array(["a", "b"]), ("b", "c")), np.isin(np.array(["a", "b"]), ("b", "c")))


def test_numpy_imports_numpy_ma_for_its_median_and_these_do_not():
    """What the module is for: numpy's own median imports numpy.ma, these functions do not."""
    listing = "import sys, numpy as np; {}; print('numpy.ma' in sys.modules)"
    theirs = "np.median([1.0, 2.0]); np.unique([2, 1])"
    ours = (
        "from tpuscope.model import order_statistics as s; s.median([1.0, 2.0]);"
        " s.percentile([1.0, 5.0], 95);"
        " s.quantile([1.0], [0.5]); s.sorted_distinct([2, 1]); s.isin([1.5], [2**60, 1.5]); s.union([1], [2])"
    )
    for calls, imported in ((theirs, "True"), (ours, "False")):
        done = subprocess.run([sys.executable, "-c", listing.format(calls)], capture_output=True, text=True)
        assert done.stdout.strip() == imported, done.stderr
