"""Rule `step_time_variance`: some steps take much longer than the typical step.

Step time is measured start-to-start. Steps that compiled are left out (the
`recompilation` rule explains them); the rest are scored with XProf's modified z-score.
Slow outliers point at periodic host work: checkpoints, evaluation, logging, garbage
collection, a data loader that stalls now and then.
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.diagnose.context import Context, intervals_of
from tpuscope.analysis.diagnose.finding import Finding, Severity, largest_first, ms, percent
from tpuscope.analysis.diagnose.finding import range_evidence as range_ev
from tpuscope.analysis.diagnose.intervals import window_total
from tpuscope.analysis.diagnose.stats import MODIFIED_Z_OUTLIER, modified_z
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW

RULE_ID = "step_time_variance"
MIN_STEPS = 5
# A slow step must also exceed the median by this fraction, so sub-millisecond jitter on tiny steps is
# never reported even when the MAD is small. Suggested heuristic.
MIN_RELATIVE_EXCESS = 0.2
# Warning when the outliers' time beyond the median is at least this share of all step time (XProf's
# "moderately" level for input time, research/xprof_features.md 2a, reused as the bar for "matters").
WARNING_EXCESS_PERCENT = 5.0

ADVICE = {
    JAX: [
        "Look at what the host does in the slow steps (checkpointing, evaluation, logging, Python GC); "
        "move it off the step loop or make it asynchronous (e.g. orbax async checkpointing).",
        "If the data loader stalls now and then, increase its prefetch depth.",
    ],
    PYTORCH_XLA: [
        "Look at the slow steps for graph recompilation, checkpoint saves or logging; use "
        "xm.add_step_closure for logging and save checkpoints asynchronously.",
    ],
    TENSORFLOW: [
        "Look at the slow steps for callbacks (checkpoints, TensorBoard writes) and tf.data stalls; "
        "raise the prefetch buffer.",
    ],
    "": ["Find what the host does during the slow steps and move it out of the step loop."],
}


def run(ctx: Context) -> list[Finding]:
    p0, p1 = ctx.periods
    if len(p0) < MIN_STEPS:
        return []
    times = (p1 - p0).astype(np.float64)
    compiling = window_total(intervals_of(ctx.compiles), p0, p1) > 0
    usable = np.flatnonzero(~compiling)
    if len(usable) < MIN_STEPS:
        return []
    values_ms = times[usable] / 1e9
    median_ms = float(np.median(values_ms))
    z = modified_z(values_ms)
    slow = (z > MODIFIED_Z_OUTLIER) & (values_ms > median_ms * (1 + MIN_RELATIVE_EXCESS))
    if not slow.any():
        return []
    outliers = usable[slow]
    excess_ps = float((times[outliers] - median_ms * 1e9).sum())
    share = percent(excess_ps, float(times.sum()))
    severity = Severity.WARNING if share >= WARNING_EXCESS_PERCENT else Severity.INFO
    labels = [ctx.step_label(int(i)) for i in outliers]
    metrics = {
        "steps": len(p0),
        "steps_scored": len(usable),
        "steps_left_out_for_compiling": int(compiling.sum()),
        "median_step_ms": round(median_ms, 3),
        "p90_step_ms": round(float(np.percentile(values_ms, 90)), 3),
        "max_step_ms": round(float(values_ms.max()), 3),
        "slow_steps": labels,
        "slow_step_ms": [ms(times[i]) for i in outliers],
        "excess_ms": ms(excess_ps),
        "excess_percent_of_step_time": share,
    }
    title = f"Step time variance: {len(outliers)} step(s) much slower than the median {median_ms:.3f} ms"
    explanation = (
        f"{len(outliers)} of {len(usable)} steps (not counting steps that compiled) are outliers by XProf's "
        f"modified z-score (> {MODIFIED_Z_OUTLIER:g}): {', '.join(labels[:10])}. Together they took "
        f"{ms(excess_ps)} ms more than median steps would ({share}% of step time)."
    )
    host = ctx.steps.host
    evidence = largest_first(
        [
            range_ev(f"slow {ctx.step_label(int(i))} ({ms(times[i])} ms)", int(p0[i]), int(p1[i]), host)
            for i in outliers
        ]
    )
    return [Finding(RULE_ID, severity, title, explanation, metrics, evidence, ctx.advice_for(ADVICE))]
