"""The step-time estimators: exact Mann-Whitney distribution, Hodges-Lehmann interval, bootstrap."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from tpuscope.analysis.compare import statistics as compare_stats
from tpuscope.analysis.compare.statistics import mann_whitney_cdf, mean_change, median_change


@pytest.mark.parametrize(("m", "n"), [(1, 1), (2, 3), (3, 4), (4, 4), (5, 3)])
def test_mann_whitney_distribution_equals_enumeration(m, n):
    counts = np.zeros(m * n + 1)
    for xs in itertools.combinations(range(m + n), m):
        ys = sorted(set(range(m + n)) - set(xs))
        counts[sum(1 for x in xs for y in ys if x < y)] += 1
    assert np.allclose(mann_whitney_cdf(m, n), np.cumsum(counts) / counts.sum())


def test_interval_uses_the_tabled_order_statistics():
    # Two-sided 5% critical value of the Mann-Whitney U for m = n = 10 is 23 (standard tables): the
    # interval drops the 23 smallest and 23 largest of the 100 pairwise differences.
    assert compare_stats._cut(10, 10, 0.05) == 24  # the interval is D_(24)..D_(77)


def test_hodges_lehmann_is_the_median_of_pairwise_log_ratios():
    base = np.array([10.0, 11.0, 12.0, 30.0, 10.5])
    new = np.array([20.0, 21.0, 25.0, 19.0])
    change = median_change(base, new)
    pairwise = np.log(new)[None, :] - np.log(base)[:, None]
    assert change.estimate_percent == pytest.approx(100 * math.expm1(np.median(pairwise)))
    assert change.change_percent == pytest.approx(100 * (np.median(new) / np.median(base) - 1))


def test_a_run_against_itself_is_exactly_zero_and_not_significant():
    values = np.random.default_rng(3).lognormal(0, 0.3, 40)
    for change in (median_change(values, values), mean_change(values, values)):
        assert change.change_percent == 0.0 and change.estimate_percent == 0.0
        assert change.ci_low_percent < 0 < change.ci_high_percent
        assert change.direction == "no_significant_change"


def test_a_clear_shift_is_found_and_its_interval_covers_it():
    rng = np.random.default_rng(7)
    base = rng.lognormal(0, 0.2, 20)
    new = rng.lognormal(0, 0.2, 20) * 1.5
    change = median_change(base, new)
    assert change.direction == "slower"
    assert change.ci_low_percent < 50 < change.ci_high_percent


def test_one_outlier_moves_neither_estimate_nor_interval_much():
    rng = np.random.default_rng(11)
    base, new = rng.lognormal(0, 0.1, 16), rng.lognormal(0, 0.1, 16)
    calm = median_change(base, new)
    spiked = median_change(base, np.append(new[:-1], 100.0))  # one step 100x slower (a checkpoint)
    assert abs(spiked.estimate_percent - calm.estimate_percent) < 5
    assert spiked.direction == "no_significant_change"


def test_interval_coverage_on_skewed_samples_is_about_95_percent():
    """Same distribution, 12 vs 12 steps from a skewed (log-normal) law: the interval must include
    zero in about 95% of 400 draws (the exact test's coverage), not in 80% as an anti-conservative
    interval would."""
    rng = np.random.default_rng(5)
    covered = 0
    for _ in range(400):
        base, new = rng.lognormal(0, 0.5, 12), rng.lognormal(0, 0.5, 12)
        change = median_change(base, new)
        covered += change.ci_low_percent <= 0 <= change.ci_high_percent
    assert 0.92 <= covered / 400 <= 0.99


def test_too_few_steps_give_an_unbounded_interval():
    change = median_change(np.array([1.0, 1.1]), np.array([5.0, 5.2]))
    assert change.ci_low_percent == -math.inf and not change.significant


def test_bootstrap_is_deterministic_and_keeps_strata():
    base = np.array([150.0] * 4 + [1.0] * 12)
    new = np.array([150.0] + [1.0] * 15)
    strata_b = base > 100
    strata_n = new > 100
    first = mean_change(base, new, strata_b, strata_n)
    again = mean_change(base, new, strata_b, strata_n)
    assert first == again
    # Resampling within strata: the compiled-step count is fixed, so the interval is tight.
    assert first.direction == "faster" and first.ci_high_percent < -70


def test_noise_floor_keeps_small_significant_changes_out():
    base = np.linspace(1.0, 1.01, 50)
    new = base * 1.05  # 5% slower, far outside the spread: significant statistically, below the floor
    change = median_change(base, new)
    assert change.ci_excludes_zero and not change.significant
