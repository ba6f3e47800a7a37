"""Is a step-time change between two runs larger than run-to-run noise? Two small-sample estimators.

Step times are few (tens of steps in a profile), skewed (a long tail of slow steps: GC, a checkpoint,
a noisy neighbour) and not normal, so neither a t-interval nor a plain percentile bootstrap of the
median (coarse and unreliable with a dozen values) fits. Two methods are used, each for one question:

- **Change of the typical step** (`median_change`): the Hodges-Lehmann estimator of the shift between
  the logarithms of the two samples, with its distribution-free confidence interval (Lehmann 1963,
  "Nonparametric confidence intervals for a shift parameter"; Hollander & Wolfe, *Nonparametric
  Statistical Methods*, section 4.3, the interval also known as Moses'): the median and two order
  statistics of all pairwise differences `log(new_j) - log(base_i)`, the order statistics chosen from
  the exact Mann-Whitney distribution. On logarithms a shift is a ratio, so it reads as a percentage
  and the skew of the raw times matters less; being rank-based, one outlier moves neither the estimate
  nor the interval much; the coverage is exact under the shift model whatever the distribution, for
  any sample size (no large-sample approximation below `EXACT_MAX_PAIRS` pairs). It needs no random
  numbers, so results are the same on every run.
- **Change of the time per step including compilation** (`mean_change`): the mean is what a
  compilation every few steps inflates (the median of steps is built to ignore it), and the mean of a
  sample this skewed has no usable closed-form interval; a percentile bootstrap of the ratio of the
  means (Efron & Tibshirani, *An Introduction to the Bootstrap*, chapter 13), stratified so that each
  resample keeps each run's number of compiling steps, with `BOOTSTRAP_RESAMPLES` resamples drawn
  from a generator with the fixed seed `BOOTSTRAP_SEED`, so tests and CI repeat exactly.

A change is *significant* when its 95% interval excludes zero and the estimate is at least the noise
floor: the interval only knows the spread of steps within each run, while two recordings of the same
program also differ as a whole (clock, memory placement, neighbours), by an amount no profile shows,
and a gate that reacts to that cries wolf. Accelerators run the same program nearly identically
(`NOISE_FLOOR_PERCENT`); when the "device" is the host CPU (XLA:CPU), every other program on the
machine shares it, and `NOISE_FLOOR_HOST_CPU_PERCENT` applies.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.records import record

CONFIDENCE = 0.95
# airspeed velocity (asv) reports a benchmark as changed only when the ratio passes `--factor`, default
# 1.1, as well as its statistics (asv/commands/common_args.py, add_compare): a 10% floor.
NOISE_FLOOR_PERCENT = 10.0
# Our heuristic, measured: 80 pairs of recordings of one healthy JAX program on XLA:CPU, recorded at
# the same time (tests/compare, 2-core virtual machines shared with other jobs), differed by up to 40%
# (15 of 80 beyond the 10% floor), with intervals excluding zero; recordings one after another, by up
# to 1.7x, and a second or more apart, by up to 5x: the host CPU's neighbours, not the program.
NOISE_FLOOR_HOST_CPU_PERCENT = 50.0
# Exact Mann-Whitney distribution up to this many pairs (50 x 50 steps); beyond, its normal
# approximation, which is then accurate to far better than the interval's own width.
EXACT_MAX_PAIRS = 2500
# At most this many values per run enter the pairwise differences (evenly spaced order statistics of
# longer samples): 4 million pairs, a few tens of MB, for profiles with thousands of steps.
MAX_VALUES_PER_RUN = 2000
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20260711
BOOTSTRAP_CHUNK = 250  # resamples drawn at once (bounds memory for long profiles)

METHOD_HODGES_LEHMANN = "hodges_lehmann_log_ratio"
METHOD_BOOTSTRAP_MEAN = "bootstrap_ratio_of_means"


@record(frozen=True)
class Change:
    """One measured change from BASE to NEW, in percent of BASE (negative: NEW is faster)."""

    method: str
    base_value_ps: float  # the statistic of BASE (median or mean), ps
    new_value_ps: float
    change_percent: float  # NEW / BASE - 1 of that statistic, in percent
    estimate_percent: float  # the method's own estimate (Hodges-Lehmann shift; ratio of the means)
    ci_low_percent: float  # -inf / +inf when the samples are too small for a 95% interval
    ci_high_percent: float
    base_count: int
    new_count: int
    noise_floor_percent: float = NOISE_FLOOR_PERCENT

    @property
    def ci_excludes_zero(self) -> bool:
        return self.ci_low_percent > 0 or self.ci_high_percent < 0

    @property
    def significant(self) -> bool:
        return self.ci_excludes_zero and abs(self.change_percent) >= self.noise_floor_percent

    @property
    def direction(self) -> str:
        """`faster`, `slower` or `no_significant_change`."""
        if not self.significant:
            return "no_significant_change"
        return "slower" if self.change_percent > 0 else "faster"

    def to_json(self) -> dict:
        def finite(x: float) -> float | None:
            return round(x, 3) if math.isfinite(x) else None

        return {
            "method": self.method,
            "change_percent": round(self.change_percent, 3),
            "estimate_percent": round(self.estimate_percent, 3),
            "ci95_percent": [finite(self.ci_low_percent), finite(self.ci_high_percent)],
            "significant": self.significant,
            "ci_excludes_zero": self.ci_excludes_zero,
            "noise_floor_percent": self.noise_floor_percent,
            "base_count": self.base_count,
            "new_count": self.new_count,
        }


def _percent(log_ratio: float) -> float:
    return 100.0 * math.expm1(log_ratio) if math.isfinite(log_ratio) else log_ratio


def _ratio_percent(new: float, base: float) -> float:
    return 100.0 * (new / base - 1.0) if base > 0 else 0.0


def _thinned(values: np.ndarray) -> np.ndarray:
    """Sorted values, or evenly spaced order statistics of them when there are too many."""
    values = np.sort(values)
    if len(values) <= MAX_VALUES_PER_RUN:
        return values
    picks = np.linspace(0, len(values) - 1, MAX_VALUES_PER_RUN).round().astype(np.int64)
    return values[picks]


@lru_cache(maxsize=64)
def mann_whitney_cdf(m: int, n: int) -> np.ndarray:
    """P(U <= u) for u = 0..m*n under the null hypothesis, exact (no ties).

    The counts of U are the coefficients of the Gaussian binomial [m+n choose m](q), built as
    prod_i (1 - q^(n+i)) / (1 - q^i); dividing by (1 - q^i) is a running sum with stride i.
    """
    size = m * n + 1
    poly = np.zeros(size, dtype=np.float64)
    poly[0] = 1.0
    for i in range(1, m + 1):
        k = n + i
        if k < size:
            poly[k:] -= poly[:-k].copy()
        pad = (-size) % i
        grid = np.concatenate([poly, np.zeros(pad)]).reshape(-1, i)
        poly = np.cumsum(grid, axis=0).reshape(-1)[:size]
    poly = np.maximum(poly, 0.0)
    cdf = np.cumsum(poly) / poly.sum()
    cdf.setflags(write=False)  # cached: shared by every caller
    return cdf


def _cut(m: int, n: int, alpha: float) -> int:
    """How many of the smallest (and largest) pairwise differences fall outside the interval."""
    pairs = m * n
    if pairs <= EXACT_MAX_PAIRS:
        cdf = mann_whitney_cdf(m, n)
        # k = the largest count with P(U <= k - 1) <= alpha / 2
        return int(np.searchsorted(cdf, alpha / 2, side="right"))
    z = _normal_quantile(1 - alpha / 2)
    return max(int(math.floor(pairs / 2 - z * math.sqrt(pairs * (m + n + 1) / 12.0))), 0)


def _normal_quantile(p: float) -> float:
    """Inverse standard normal CDF by bisection on erfc (accurate to 1e-12; no SciPy needed)."""
    lo, hi = -10.0, 10.0
    for _ in range(100):  # bisection: plenty accurate and dependency-free
        mid = (lo + hi) / 2
        if 0.5 * math.erfc(-mid / math.sqrt(2)) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def median_change(
    base_ps: np.ndarray,
    new_ps: np.ndarray,
    confidence: float = CONFIDENCE,
    noise_floor_percent: float = NOISE_FLOOR_PERCENT,
) -> Change | None:
    """Change of the typical step: Hodges-Lehmann shift of log step times with its exact interval.

    None when either run has no positive step time.
    """
    base = np.asarray(base_ps, dtype=np.float64)
    new = np.asarray(new_ps, dtype=np.float64)
    base, new = base[base > 0], new[new > 0]
    if len(base) == 0 or len(new) == 0:
        return None
    x, y = np.log(_thinned(base)), np.log(_thinned(new))
    diffs = np.sort((y[None, :] - x[:, None]).reshape(-1))
    estimate = float(order_statistics.median(diffs))
    k = _cut(len(x), len(y), 1 - confidence)
    if k < 1:
        low, high = -math.inf, math.inf
    else:
        low, high = float(diffs[k - 1]), float(diffs[len(diffs) - k])
    base_median, new_median = float(order_statistics.median(base)), float(order_statistics.median(new))
    return Change(
        METHOD_HODGES_LEHMANN,
        base_median,
        new_median,
        _ratio_percent(new_median, base_median),
        _percent(estimate),
        _percent(low),
        _percent(high),
        len(base),
        len(new),
        noise_floor_percent,
    )


def mean_change(
    base_ps: np.ndarray,
    new_ps: np.ndarray,
    base_strata: np.ndarray | None = None,
    new_strata: np.ndarray | None = None,
    confidence: float = CONFIDENCE,
    noise_floor_percent: float = NOISE_FLOOR_PERCENT,
) -> Change | None:
    """Change of the mean step time (compilations included): stratified percentile bootstrap, fixed seed.

    Steps are resampled within their stratum (`*_strata`: e.g. "this step compiled"), so every
    resample keeps each run's number of compiling steps: how often a run compiles is a property of
    the program, not noise, and what varies is how long steps and compilations take.
    """
    base = np.asarray(base_ps, dtype=np.float64)
    new = np.asarray(new_ps, dtype=np.float64)
    if len(base) == 0 or len(new) == 0 or base.mean() <= 0:
        return None
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    base_groups = _strata(base, base_strata)
    new_groups = _strata(new, new_strata)
    ratios = []
    for start in range(0, BOOTSTRAP_RESAMPLES, BOOTSTRAP_CHUNK):
        count = min(BOOTSTRAP_CHUNK, BOOTSTRAP_RESAMPLES - start)
        base_means = _resampled_means(rng, base_groups, count, len(base))
        new_means = _resampled_means(rng, new_groups, count, len(new))
        ratios.append(new_means / np.maximum(base_means, 1e-300))
    ratio = np.concatenate(ratios)
    alpha = 1 - confidence
    if len(base) < 2 or len(new) < 2:
        low, high = -math.inf, math.inf
    else:
        low, high = (
            100.0 * (float(q) - 1.0) for q in order_statistics.quantile(ratio, [alpha / 2, 1 - alpha / 2])
        )
    change = _ratio_percent(float(new.mean()), float(base.mean()))
    return Change(
        METHOD_BOOTSTRAP_MEAN,
        float(base.mean()),
        float(new.mean()),
        change,
        change,
        low,
        high,
        len(base),
        len(new),
        noise_floor_percent,
    )


def _strata(values: np.ndarray, strata: np.ndarray | None) -> list[np.ndarray]:
    if strata is None:
        return [values]
    labels = np.asarray(strata)
    return [values[labels == label] for label in order_statistics.sorted_distinct(labels)]


def _resampled_means(
    rng: np.random.Generator, groups: list[np.ndarray], count: int, total: int
) -> np.ndarray:
    sums = np.zeros(count, dtype=np.float64)
    for group in groups:
        sums += group[rng.integers(0, len(group), (count, len(group)))].sum(axis=1)
    return sums / total


def median_interval(values_ps: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """A distribution-free interval of one run's median step: the order statistics x_(j)..x_(n+1-j)
    with the largest j whose coverage under Binomial(n, 1/2) is at least `confidence` (Hollander &
    Wolfe, section 3.6). None without values; the whole range when there are too few for the level."""
    values = np.sort(np.asarray(values_ps, dtype=np.float64))
    n = len(values)
    if n == 0:
        return None
    # P(X < j) for X ~ Binomial(n, 1/2), in log space so that thousands of steps stay finite.
    log_half_n = n * math.log(0.5)
    below, j = 0.0, 0
    while j < n // 2:
        below_next = below + math.exp(
            math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + log_half_n
        )
        if 1 - 2 * below_next < confidence:
            break
        below, j = below_next, j + 1
    if j == 0:
        return float(values[0]), float(values[-1])
    return float(values[j - 1]), float(values[n - j])
