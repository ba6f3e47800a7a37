"""Rule `input_bound`: the device waits for the host to hand it the next step's input.

Measured as the share of step time during which no device ran an op *and* the host was
still preparing the step: before the step's first program launch (and, for steps taken
from the device timeline, anywhere between two executions of the step program), or inside
input work (tf.data `IteratorGetNext`, infeed, host-to-device copies, user data-loader
annotations); `tpuscope.analysis.facts.waits` measures it, for the overview and the pod table
too. Compilation and blocking device-to-host reads are excluded (their own rules report them).
Without any device activity (TensorFlow on CPU), XProf's generic definition is used: time in
input events over step time.
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.diagnose.finding import (
    Finding,
    ImpactThresholds,
    RuleOutcome,
    Severity,
    ms,
    percent,
    step_time_impact,
)
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.facts.evidence import MAX_EVIDENCE, event_evidence, largest_first
from tpuscope.analysis.facts.evidence import range_evidence as range_ev
from tpuscope.analysis.facts.intervals import Intervals, intersect, total, window_total
from tpuscope.analysis.facts.waits import input_wait_intervals, input_work_events, input_work_intervals
from tpuscope.analysis.framework import JAX, PYTORCH, PYTORCH_XLA, TENSORFLOW
from tpuscope.model import order_statistics

RULE_ID = "input_bound"
# XProf input-pipeline analyzer: input >= 20 % of step time is "HIGHLY input-bound", >= 5 % "MODERATELY"
# (xprof op_stats_to_input_pipeline_analysis.cc kHighlyInfeedBoundThresholdInPercent /
# kModeratelyInfeedBoundThresholdInPercent, openxla/xprof).
HIGHLY_INPUT_BOUND_PERCENT = 20.0
MODERATELY_INPUT_BOUND_PERCENT = 5.0
IMPACT_THRESHOLDS = ImpactThresholds(
    MODERATELY_INPUT_BOUND_PERCENT, HIGHLY_INPUT_BOUND_PERCENT, "XProf's input-pipeline bands (5% / 20%)"
)

# Idle ranges shorter than this fraction of the longest one are left out of the evidence list.
MIN_EVIDENCE_FRACTION = 0.1

ADVICE = {
    JAX: [
        "Prepare the next batch while the device computes: prefetch batches to the device ahead of use "
        "(e.g. a background thread calling jax.device_put, or flax.jax_utils.prefetch_to_device).",
        "Use a parallel input pipeline (Grain with worker processes, or tf.data with "
        "num_parallel_calls and prefetch) instead of loading in the training loop.",
        "Profile the loader: wrap it in jax.profiler.TraceAnnotation so its time shows by name.",
    ],
    TENSORFLOW: [
        "Add .prefetch(tf.data.AUTOTUNE) at the end of the tf.data pipeline and use "
        "num_parallel_calls=tf.data.AUTOTUNE in map/interleave.",
        "Cache expensive preprocessing (.cache()) or move it offline; see the tf.data performance guide.",
    ],
    PYTORCH_XLA: [
        "Wrap the DataLoader in torch_xla.distributed.parallel_loader.MpDeviceLoader so batches are "
        "transferred to the device in the background.",
        "Raise DataLoader num_workers and use persistent_workers=True; annotate loading with xp.Trace.",
    ],
    PYTORCH: [
        "Load batches in parallel: DataLoader(num_workers>0, pin_memory=True, persistent_workers=True, "
        "prefetch_factor=2..4), and copy them with .to(device, non_blocking=True).",
        "Name the loader in the profile with torch.profiler.record_function to see where its time goes.",
    ],
    "": [
        "Overlap input preparation with device compute (prefetch to the device, parallel loaders).",
    ],
}


def run(ctx: Context) -> RuleOutcome:
    steps = ctx.steps
    if len(steps) == 0:
        return RuleOutcome([], "no steps found, so no step time to measure input wait against")
    p0, p1 = ctx.periods
    step_time = int((p1 - p0).sum())
    if step_time <= 0:
        return RuleOutcome(
            [], f"{len(steps)} steps of zero length: no step time to measure input wait against"
        )
    input_events = input_work_events(ctx)
    work = input_work_intervals(ctx)
    waiting = input_wait_intervals(ctx)  # the waiting_intervals of `work`, shared with the figures
    if not ctx.devices:
        return _without_devices(ctx, input_events, waiting, step_time)

    waiting_ps = total(waiting)
    share = percent(waiting_ps, step_time)
    severity = _severity(share)
    checked = (
        f"device waiting for input {share:g}% of step time ({ms(waiting_ps)} ms over {len(steps)} steps), "
        f"{'at or above' if severity else 'below'} {MODERATELY_INPUT_BOUND_PERCENT:g}%"
    )
    if severity is None:
        return RuleOutcome([], checked)
    attributed_ps = total(intersect(waiting, work))
    per_step = window_total(waiting, p0, p1)
    worst = np.argsort(-per_step, kind="stable")[:3]
    metrics = {
        "input_percent_of_step_time": share,
        "device_waiting_ms": ms(waiting_ps),
        "waiting_in_input_work_ms": ms(attributed_ps),
        "waiting_before_launch_other_ms": ms(waiting_ps - attributed_ps),
        "step_time_ms": ms(step_time),
        "steps": len(steps),
        "median_wait_per_step_ms": ms(float(order_statistics.median(per_step))),
        "worst_steps": [ctx.step_label(int(i)) for i in worst],
    }
    level = "highly" if severity == Severity.CRITICAL else "moderately"
    limit = HIGHLY_INPUT_BOUND_PERCENT if severity == Severity.CRITICAL else MODERATELY_INPUT_BOUND_PERCENT
    explanation = (
        f"The device sat idle, waiting for the host, for {share:.1f}% of step time "
        f"({ms(waiting_ps)} ms over {len(steps)} steps, steps from {steps.description}). "
        f"XProf calls a program {level} input-bound at >= {limit:g}%. "
        f"{ms(attributed_ps)} ms of the wait overlaps input work (data loading, infeed, host-to-device "
        f"copies); the rest is host time before each step's first launch (Python, loader code that is "
        f"not annotated)."
    )
    evidence = _evidence(ctx, input_events, waiting)
    title = f"Input-bound: device waits for the host {share:.1f}% of step time"
    impact = step_time_impact(ctx.periods, waiting_ps, "device idle inside the steps, waiting for the host")
    finding = Finding(
        RULE_ID, severity, title, explanation, metrics, evidence, ctx.advice_for(ADVICE), impact
    )
    return RuleOutcome([finding], checked)


def _severity(share: float) -> Severity | None:
    """The severity of an input wait of `share` percent of step time; None below the moderate band,
    where the wait is not worth a finding at all."""
    if share < MODERATELY_INPUT_BOUND_PERCENT:
        return None
    return Severity.CRITICAL if share >= HIGHLY_INPUT_BOUND_PERCENT else Severity.WARNING


def _without_devices(ctx: Context, input_events: list, inside: Intervals, step_time: int) -> RuleOutcome:
    input_ps = total(inside)
    share = percent(input_ps, step_time)
    severity = _severity(share)
    checked = (
        f"no device activity; time in input events {share:g}% of step time ({ms(input_ps)} ms over "
        f"{len(ctx.steps)} steps), {'at or above' if severity else 'below'} "
        f"{MODERATELY_INPUT_BOUND_PERCENT:g}%"
    )
    if severity is None:
        return RuleOutcome([], checked)
    metrics = {
        "input_percent_of_step_time": share,
        "input_ms": ms(input_ps),
        "step_time_ms": ms(step_time),
        "steps": len(ctx.steps),
        "device_activity": "none recorded (host-only profile)",
    }
    explanation = (
        f"The profile holds no device activity, so input time is measured as XProf does on CPU/GPU: "
        f"time in input events (tf.data IteratorGetNext, host-to-device copies, data-loader annotations) "
        f"is {share:.1f}% of step time ({ms(input_ps)} ms over {len(ctx.steps)} steps)."
    )
    title = f"Input-bound: {share:.1f}% of step time is spent waiting for input"
    evidence = _evidence(ctx, input_events, inside)
    impact = step_time_impact(ctx.periods, input_ps, "time inside the steps spent in input events")
    finding = Finding(
        RULE_ID, severity, title, explanation, metrics, evidence, ctx.advice_for(ADVICE), impact
    )
    return RuleOutcome([finding], checked)


def _evidence(ctx: Context, input_events: list, waiting) -> list[dict]:
    items = []
    for track, idx in input_events:
        overlaps = window_total(waiting, track.start_ps[idx], track.end_ps[idx])
        hit = idx[overlaps > 0]
        for i in hit[np.argsort(-track.duration_ps[hit], kind="stable")[:MAX_EVIDENCE]]:
            items.append(event_evidence(f"input work: {track.event_name(int(i))}", track, int(i)))
    host = ctx.steps.host or (ctx.trace.hosts[0] if ctx.trace.hosts else "")
    w0, w1 = waiting
    lengths = w1 - w0
    # Slivers between device ops say nothing a user can act on; list the real waits.
    big = np.flatnonzero(lengths >= MIN_EVIDENCE_FRACTION * lengths.max()) if len(lengths) else lengths
    for k in big[np.argsort(-lengths[big], kind="stable")][:MAX_EVIDENCE]:
        a, b = int(w0[k]), int(w1[k])
        items.append(range_ev(f"device idle, waiting for the host ({ms(b - a)} ms)", a, b, host))
    return largest_first(items)
