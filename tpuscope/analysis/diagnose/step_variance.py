"""Rule `step_time_variance`: some steps take much longer than the typical step, and why.

Step time is measured start-to-start. Warm-up steps (the first, and those that compiled: see
`Context.warm_up`) are left out; the rest are scored with XProf's modified z-score. A slow
step alone says nothing a user can act on, so each one's time beyond the median step is split
into where it went, each part compared with the same part of a median step:

- device compute: the devices ran ops longer (same work, slower: a shared or throttled
  machine, another job on the chip). Noise, reported as info with nothing to change;
- input wait: the device idled while the host prepared the step's input (as `input_bound`);
- extra host events: host work the typical step does not do (a checkpoint save, evaluation,
  logging) named by its own events on the step's threads;
- host gap: the device idled and the host ran no event that typical steps lack (a GC pause,
  an unannotated stall, or a descheduled thread on a busy machine). Info: there is no named
  cause to point at, and a busy machine produces exactly this.

Only input wait and extra host events are warnings; the advice names what was found.
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.diagnose.finding import (
    STEP_TIME_BANDS,
    Finding,
    RuleOutcome,
    Severity,
    ms,
    percent,
    step_time_impact,
)
from tpuscope.analysis.diagnose.rule_results import STEADY_STEPS
from tpuscope.analysis.facts.context import Context, intervals_of
from tpuscope.analysis.facts.evidence import event_evidence, largest_first
from tpuscope.analysis.facts.evidence import range_evidence as range_ev
from tpuscope.analysis.facts.intervals import difference, merge_intervals, window_total
from tpuscope.analysis.facts.outliers import MODIFIED_Z_OUTLIER, modified_z
from tpuscope.analysis.facts.waits import input_wait_intervals
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW
from tpuscope.analysis.host_names import distinct_ids
from tpuscope.model import order_statistics
from tpuscope.model.records import record
from tpuscope.model.trace import Track

RULE_ID = "step_time_variance"
# Statistical claims ("this step is an outlier") need this many scored (non-warm-up) steps: a median
# and a MAD over fewer steps move with every single step. Our heuristic.
MIN_STEPS = 8
# A slow step must also exceed the median by this fraction, so sub-millisecond jitter on tiny steps is
# never reported even when the MAD is small. Our heuristic.
MIN_RELATIVE_EXCESS = 0.2
# Warning when the outliers' time beyond the median is at least this share of all step time: XProf's
# "moderately input-bound" level (openxla/xprof xprof/convert/op_stats_to_input_pipeline_analysis.cc,
# kModeratelyInfeedBoundThresholdInPercent = 5), reused as the bar for "matters".
WARNING_EXCESS_PERCENT = 5.0
IMPACT_THRESHOLDS = STEP_TIME_BANDS  # its warning level is WARNING_EXCESS_PERCENT
# Host events count as the cause when the extra ones cover at least this share of the excess. Our heuristic.
EXTRA_HOST_SHARE = 0.5
# A host event name is "usual" when at least this share of the typical steps run it. Our heuristic.
USUAL_NAME_SHARE = 0.5
# `_steps_running` flags each (step, name) pair in a table when it holds at most this many flags
# per event counted (bytes of memory and of work per event), else it sorts the events. Our heuristic.
PAIR_FLAGS_PER_EVENT = 8

CAUSE_DEVICE = "device compute"
CAUSE_INPUT = "input wait"
CAUSE_HOST_EVENTS = "extra host events"
CAUSE_HOST_GAP = "host gap"

ADVICE: dict[str, dict[str, list[str]]] = {
    CAUSE_HOST_EVENTS: {
        JAX: [
            "Move the extra host work named above off the step loop or make it asynchronous (orbax "
            "async checkpointing, evaluation every N steps in a background thread).",
        ],
        PYTORCH_XLA: [
            "Move the extra host work named above out of the step: save checkpoints asynchronously, "
            "log through xm.add_step_closure every N steps.",
        ],
        TENSORFLOW: [
            "Move the extra host work named above out of the step: callbacks (checkpoints, TensorBoard "
            "writes) every N steps or asynchronously.",
        ],
        "": ["Move the extra host work named above out of the step loop, or run it asynchronously."],
    },
    CAUSE_INPUT: {
        JAX: ["The data loader stalls now and then: increase its prefetch depth or use more workers."],
        PYTORCH_XLA: ["The DataLoader stalls now and then: raise num_workers and prefetch_factor."],
        TENSORFLOW: ["tf.data stalls now and then: raise the prefetch buffer (tf.data.AUTOTUNE)."],
        "": ["The input pipeline stalls now and then: prefetch deeper."],
    },
    CAUSE_HOST_GAP: {
        "": [
            "Nothing named explains the slow steps: wrap suspected host work (checkpoints, logging, "
            "evaluation) in trace annotations to see it, or disable Python's GC in the loop and collect "
            "every N steps. On a shared machine this is often just noise.",
        ],
    },
    CAUSE_DEVICE: {"": []},
}


@record
class _Parts:
    """Per-step time split, ps, parallel to the steps."""

    period: np.ndarray
    device: np.ndarray
    input: np.ndarray
    gap: np.ndarray


@record(frozen=True)
class SteadySteps:
    """The steps this rule scores (warm-up left out) and their median: what the rule and the
    `steady_step_time_median` metric (`tpuscope.analysis.metrics`) both read."""

    usable: np.ndarray  # positions of the steps that are not warm-up
    median_us: float | None
    reason: str = ""


def steady_steps(ctx: Context) -> SteadySteps:
    p0, p1 = ctx.periods
    usable = np.flatnonzero(~ctx.warm_up)
    if len(p0) == 0:
        return SteadySteps(usable, None, "the profile has no steps")
    if len(usable) == 0:
        return SteadySteps(usable, None, "every step is warm-up (the first step or one that compiled)")
    return SteadySteps(usable, float(order_statistics.median((p1 - p0)[usable].astype(np.float64))) / 1e6)


def run(ctx: Context) -> RuleOutcome:
    p0, p1 = ctx.periods
    warm = ctx.warm_up
    steady = ctx.get(STEADY_STEPS)
    usable = steady.usable
    counted = f"{len(p0)} steps, {int(warm.sum())} warm-up left out"
    if len(p0) == 0:
        return RuleOutcome([], "no steps found, step times not compared")
    if len(usable) < MIN_STEPS:
        return RuleOutcome([], f"{counted}: fewer than {MIN_STEPS} steps to score, step times not compared")
    times = (p1 - p0).astype(np.float64)
    values_ms = times[usable] / 1e9
    median_ms = float(steady.median_us or 0.0) / 1e3
    z = modified_z(values_ms)
    slow = (z > MODIFIED_Z_OUTLIER) & (values_ms > median_ms * (1 + MIN_RELATIVE_EXCESS))
    spread = (
        f"{counted}; steady-state median {median_ms:.3f} ms, "
        f"p90 {order_statistics.percentile(values_ms, 90):.3f} ms, "
        f"max {values_ms.max():.3f} ms"
    )
    if not slow.any():
        return RuleOutcome([], f"{spread}: no step a modified-z outlier above {MODIFIED_Z_OUTLIER:g}")
    outliers = usable[slow]
    typical = usable[~slow]
    parts = _split(ctx)
    excess_ps = float((times[outliers] - median_ms * 1e9).sum())
    excess_by_part = {
        CAUSE_DEVICE: _excess(parts.device, outliers, typical),
        CAUSE_INPUT: _excess(parts.input, outliers, typical),
        CAUSE_HOST_GAP: _excess(parts.gap, outliers, typical),
    }
    extra = _extra_host_events(ctx, outliers, typical)
    cause = _cause(excess_by_part, extra.total_ps, excess_ps)
    share = percent(excess_ps, float(times.sum()))
    actionable = cause in (CAUSE_INPUT, CAUSE_HOST_EVENTS)
    impact = step_time_impact(ctx.periods, excess_ps, "time the slow steps took beyond the median step")
    severity = IMPACT_THRESHOLDS.severity(impact) if actionable else Severity.INFO
    labels = ctx.step_labels(outliers)
    slow_ms = [ms(t) for t in times[outliers].tolist()]
    metrics = {
        "steps": len(p0),
        "steps_scored": len(usable),
        "steps_left_out_for_warm_up": int(warm.sum()),
        "steps_left_out_for_compiling": int(ctx.compiling_steps.sum()),
        "median_step_ms": round(median_ms, 3),
        "p90_step_ms": round(float(order_statistics.percentile(values_ms, 90)), 3),
        "max_step_ms": round(float(values_ms.max()), 3),
        "slow_steps": labels,
        "slow_step_ms": slow_ms,
        "excess_ms": ms(excess_ps),
        "excess_percent_of_step_time": share,
        "cause": cause,
        "excess_device_compute_ms": ms(excess_by_part[CAUSE_DEVICE]),
        "excess_input_wait_ms": ms(excess_by_part[CAUSE_INPUT]),
        "excess_host_gap_ms": ms(excess_by_part[CAUSE_HOST_GAP]),
        "extra_host_events_ms": ms(extra.total_ps),
    }
    if extra.names:
        metrics["extra_host_events"] = extra.names
    title, why = _words(cause, len(outliers), median_ms, extra.names)
    explanation = (
        f"{len(outliers)} of {len(usable)} steps (warm-up left out: the first step and steps that compiled) "
        f"are outliers by XProf's modified z-score (> {MODIFIED_Z_OUTLIER:g}): {', '.join(labels[:10])}. "
        f"Together they took {ms(excess_ps)} ms more than median steps would ({share}% of step time). "
        f"Beyond the typical step, device compute took {metrics['excess_device_compute_ms']} ms longer, "
        f"input wait {metrics['excess_input_wait_ms']} ms, host time with the device idle "
        f"{metrics['excess_host_gap_ms']} ms, of which host events the typical step does not run "
        f"{metrics['extra_host_events_ms']} ms. {why}"
    )
    host = ctx.steps.host
    evidence = [
        range_ev(f"slow {label} ({took} ms)", start, end, host)
        for label, took, start, end in zip(
            labels, slow_ms, p0[outliers].tolist(), p1[outliers].tolist(), strict=True
        )
    ]
    evidence += [event_evidence(f"extra host work: {t.event_name(i)}", t, i) for t, i in extra.events]
    advice = ctx.advice_for(ADVICE[cause]) if severity > Severity.INFO or cause == CAUSE_HOST_GAP else []
    finding = Finding(RULE_ID, severity, title, explanation, metrics, largest_first(evidence), advice, impact)
    return RuleOutcome([finding], f"{spread}: {len(outliers)} slow step(s), cause {cause}")


def _words(cause: str, n: int, median_ms: float, names: list[str]) -> tuple[str, str]:
    head = f"{n} step(s) much slower than the steady-state median {median_ms:.3f} ms"
    if cause == CAUSE_HOST_EVENTS:
        return (
            f"Step time variance: {head}, in extra host work ({', '.join(names[:3])})",
            f"The slow steps run host work the others do not: {', '.join(names[:5])}.",
        )
    if cause == CAUSE_INPUT:
        return (
            f"Step time variance: {head}, waiting for input",
            "Most of the extra time the device waited for the step's input.",
        )
    if cause == CAUSE_HOST_GAP:
        return (
            f"Step time variance: {head} (host time, no named cause)",
            "Most of the extra time the device idled while the host ran nothing the other steps do not: "
            "a GC pause, unannotated host work, or a busy machine.",
        )
    return (
        f"Step time variance: {head} (the device ran the same work slower)",
        "Most of the extra time the device was computing: the same work ran slower, which is noise "
        "(a shared or throttled machine), not something in the program.",
    )


def _cause(excess_by_part: dict[str, float], extra_ps: float, excess_ps: float) -> str:
    if excess_ps > 0 and extra_ps >= EXTRA_HOST_SHARE * excess_ps:
        return CAUSE_HOST_EVENTS
    return max(excess_by_part, key=lambda k: excess_by_part[k])


def _excess(part: np.ndarray, outliers: np.ndarray, typical: np.ndarray) -> float:
    """How much longer this part ran in the outliers than in a typical step, summed (ps)."""
    baseline = float(order_statistics.median(part[typical])) if len(typical) else 0.0
    return float(np.clip(part[outliers] - baseline, 0, None).sum())


def _split(ctx: Context) -> _Parts:
    p0, p1 = ctx.periods
    period = (p1 - p0).astype(np.float64)
    compiling = window_total(intervals_of(ctx.compiles), p0, p1).astype(np.float64)
    device = ctx.device_busy_coverage(p0, p1).astype(np.float64)
    waiting = input_wait_intervals(ctx)
    wait = window_total(waiting, p0, p1).astype(np.float64)
    gap = np.clip(period - device - wait - compiling, 0, None)
    return _Parts(period, device, wait, gap)


@record
class _Extra:
    total_ps: float
    names: list[str]
    events: list[tuple[Track, int]]


def _extra_host_events(ctx: Context, outliers: np.ndarray, typical: np.ndarray) -> _Extra:
    """Host events on the step threads whose names most typical steps never run, inside the slow steps.

    One pass of numpy columns per step thread, no sort of all its events: each name is numbered
    densely (`distinct_ids`) so that "which names do most typical steps run" and "how much host time
    does each extra name take" are counts per number (`_steps_running`, `np.bincount`)."""
    p0, p1 = ctx.periods
    tracks = {id(t): t for t, _ in ctx.launches}
    if ctx.steps.track is not None and not ctx.steps.track.plane.is_device:
        tracks[id(ctx.steps.track)] = ctx.steps.track
    is_slow = np.zeros(len(p0), bool)
    is_slow[outliers] = True
    is_typical = np.zeros(len(p0), bool)
    is_typical[typical] = True
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    per_name: dict[int, float] = {}  # name id -> host-only ps
    found: list[tuple[Track, int]] = []
    for track in tracks.values():
        events, steps_of = events_in_periods(track.start_ps, p0, p1)
        name_ids, codes = distinct_ids(track.name_id[events])
        runs = _steps_running(codes, steps_of, is_typical, len(name_ids))
        # Per name: extra where most typical steps do not run it; the step annotation itself and
        # nested duplicates are not extra work. Then one lookup per event.
        usual = runs >= USUAL_NAME_SHARE * max(len(typical), 1)
        extra_name = ~usual & (name_ids != _step_name_id(ctx, track))
        pick = is_slow[steps_of] & extra_name[codes]
        chosen, chosen_codes = events[pick], codes[pick]
        # Only host work while no device computes counts: on XLA:CPU the step thread itself runs the
        # device thunks (ThunkExecutor::Execute and the ops inside it), which are device compute.
        ends_in_step = np.minimum(track.end_ps[chosen], p1[steps_of[pick]])
        host_only = (ends_in_step - track.start_ps[chosen]) - ctx.device_busy_coverage(
            track.start_ps[chosen], ends_in_step
        )
        keep = host_only > 0
        chosen, chosen_codes = chosen[keep], chosen_codes[keep]
        ends_in_step, host_only = ends_in_step[keep], host_only[keep]
        if not len(chosen):
            continue
        starts.append(track.start_ps[chosen])
        ends.append(ends_in_step)
        for i in chosen[np.argsort(-host_only, kind="stable")][:10]:
            found.append((track, int(i)))
        events_per_code = np.bincount(chosen_codes, minlength=len(name_ids))
        sums = np.bincount(chosen_codes, weights=host_only, minlength=len(name_ids))
        for code in np.flatnonzero(events_per_code).tolist():  # one per name, in name id order
            name_id = int(name_ids[code])
            per_name[name_id] = per_name.get(name_id, 0) + float(sums[code])
    if not starts:
        return _Extra(0.0, [], [])
    union = difference(merge_intervals(np.concatenate(starts), np.concatenate(ends)), ctx.device_busy)
    total = float(window_total(union, p0[outliers], p1[outliers]).sum())
    top = sorted(per_name, key=lambda k: -per_name[k])[:5]
    found.sort(key=lambda e: -int(e[0].duration_ps[e[1]]))
    return _Extra(total, [ctx.trace.strings[k] for k in top], found[:10])


def events_in_periods(starts: np.ndarray, p0: np.ndarray, p1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The events (of a track: `starts` in order) that start inside a period, in time order, and the
    period each starts in: the last one begun at its start (as `np.searchsorted(p0, starts, "right")
    - 1`, `p0` in order), if the event starts before that period's end.

    Each period's events are one run of the track's, found by two binary searches per period
    (thousands of steps) instead of one per event (a step thread of a million events)."""
    first = np.searchsorted(starts, p0, side="left")  # a period's first event: none start before it
    following = np.append(first[1:], len(starts))  # from there, the next period's
    last = np.minimum(np.searchsorted(starts, p1, side="left"), following)
    lengths = np.maximum(last - first, 0)
    period = np.repeat(np.arange(len(p0), dtype=np.int64), lengths)
    run_start = np.cumsum(lengths) - lengths  # where each period's run sits in the result
    events = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(first - run_start, lengths)
    return events, period


def _steps_running(codes: np.ndarray, steps: np.ndarray, counted: np.ndarray, n_codes: int) -> np.ndarray:
    """Per name code: how many distinct `counted` steps (a flag per step) run it, from one thread's
    events in time order (so `steps` never decreases).

    Where a flag per (step, code) pair takes no more room than a few per event, the pairs that
    occur are flagged and counted per code (one pass, no sort). Otherwise a stable sort by code
    keeps each code's events in time order, so its steps come in order and each change of step
    starts a new one. NumPy sorts integers of 16 bits or fewer stably by radix sort (`numpy.sort`,
    kind="stable"), in linear time: the codes take that type when they fit."""
    if len(codes) == 0:
        return np.zeros(n_codes, np.int64)
    if len(counted) * n_codes <= PAIR_FLAGS_PER_EVENT * len(codes):
        seen = np.zeros((len(counted), n_codes), bool)
        seen[steps, codes] = True
        return seen[counted].sum(axis=0, dtype=np.int64)
    keep = counted[steps]
    codes, steps = codes[keep], steps[keep]
    small = codes.astype(np.uint16) if n_codes <= np.iinfo(np.uint16).max + 1 else codes
    order = np.argsort(small, kind="stable")
    by_code, step_of = codes[order], steps[order]
    new_pair = np.ones(len(order), bool)
    new_pair[1:] = (by_code[1:] != by_code[:-1]) | (step_of[1:] != step_of[:-1])
    return np.bincount(by_code[new_pair], minlength=n_codes)


def _step_name_id(ctx: Context, track: Track) -> int:
    steps = ctx.steps
    if steps.track is track and len(steps.event_index):
        return int(track.name_id[steps.event_index[0]])
    return -1
