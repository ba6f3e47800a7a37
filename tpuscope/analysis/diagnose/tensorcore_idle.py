"""Rule `tensorcore_idle`: TPU TensorCores idle inside steps beyond what input and compilation explain.

XProf's TPU analysis reports TensorCore idle time within steps as host overhead that is not
input-related (a host training loop that cannot keep up, host work between dispatches). Here the
idle time of each steady-state step is what no TensorCore op covers, minus the time `input_bound`
counts as waiting for input and the time spent compiling; the least idle core is taken, so one
busy core is enough to say the step was working.
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis import device_ops
from tpuscope.analysis.diagnose.finding import (
    STEP_TIME_BANDS,
    Impact,
    ImpactThresholds,
    RuleOutcome,
    costed_outcome,
    ms,
    percent,
)
from tpuscope.analysis.diagnose.tpu_cores import tensorcores
from tpuscope.analysis.facts.context import Context, intervals_of
from tpuscope.analysis.facts.evidence import range_evidence as range_ev
from tpuscope.analysis.facts.intervals import difference, merge_intervals, window_total
from tpuscope.analysis.facts.waits import input_wait_intervals
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW
from tpuscope.analysis.metrics.format import format_percent
from tpuscope.model import order_statistics

RULE_ID = "tensorcore_idle"
# XProf smart suggestions: TensorCore idle above 10% of step time (openxla/xprof
# xprof/convert/smart_suggestion/constants.h, the TensorCore idle threshold).
IDLE_PERCENT = 10.0
IMPACT_THRESHOLDS = ImpactThresholds(
    IDLE_PERCENT,
    STEP_TIME_BANDS.critical,
    "XProf's TensorCore idle suggestion (10%), critical from 20% (our heuristic)",
)

ADVICE = {
    JAX: [
        "The host does not dispatch the next program in time: keep the whole step in one jax.jit, avoid "
        "Python work and host reads between steps, and run several steps per call with jax.lax.scan.",
    ],
    PYTORCH_XLA: [
        "Cut host work between steps: one graph per step (torch_xla.compile), no .item() or printing, "
        "MpDeviceLoader for input.",
    ],
    TENSORFLOW: ["Run several steps per tf.function call (steps_per_execution) to cut host overhead."],
    "": ["Reduce host work between device programs, or give the device more work per dispatch."],
}


def run(ctx: Context) -> RuleOutcome:
    cores = tensorcores(ctx.devices)
    if not cores:
        return RuleOutcome([], "no TPU TensorCore in the profile")
    p0, p1 = ctx.periods
    steady = np.flatnonzero(~ctx.warm_up)
    if len(steady) == 0:
        return RuleOutcome([], "no steady-state steps on the TPU")
    w0, w1 = p0[steady], p1[steady]
    wait = input_wait_intervals(ctx)
    compiling = intervals_of(ctx.compiles)
    explained = merge_intervals(
        np.concatenate([wait[0], compiling[0]]), np.concatenate([wait[1], compiling[1]])
    )
    idle_per_core = []
    for core in cores:
        idle = difference(difference((w0, w1), device_ops.busy_intervals(core)), explained)
        idle_per_core.append((core, idle, window_total(idle, w0, w1)))
    least = np.min(np.stack([per_step for _, _, per_step in idle_per_core]), axis=0)
    step_ps = float((w1 - w0).sum())
    idle_ps = float(least.sum())
    share = percent(idle_ps, step_ps)
    checked = (
        f"TensorCore idle within steps beyond input and compilation {share:g}% of step time "
        f"({len(steady)} steady steps), {'at or above' if share >= IDLE_PERCENT else 'below'} "
        f"{IDLE_PERCENT:g}%"
    )
    if share < IDLE_PERCENT:
        return RuleOutcome([], checked)
    core, idle, _ = min(idle_per_core, key=lambda item: float(item[2].sum()))
    i0, i1 = idle
    top = np.argsort(-(i1 - i0), kind="stable")[:20]
    evidence = [
        range_ev(
            f"TensorCore idle ({ms(i1[k] - i0[k])} ms)", int(i0[k]), int(i1[k]), core.host, core.plane.name
        )
        for k in top
    ]
    metrics = {
        "idle_percent_of_step_time": share,
        "idle_ms": ms(idle_ps),
        "step_time_ms": ms(step_ps),
        "steps": len(steady),
        "cores": len(cores),
        "median_idle_per_step_ms": ms(float(order_statistics.median(least))),
    }
    explanation = (
        f"In {len(steady)} steady-state steps the least idle TensorCore sat idle {format_percent(share)} of "
        f"step time ({ms(idle_ps)} ms) while no input wait or compilation explains it: the host did not "
        f"hand the device its next program in time. XProf flags TensorCore idle above {IDLE_PERCENT:g}%."
    )
    title = f"TensorCore idle: {format_percent(share)} of step time beyond input and compilation"
    impact = Impact(
        "TensorCore idle inside steady-state steps that no input wait or compilation explains",
        share,
        ms(idle_ps / len(steady)),
    )
    advice = ctx.advice_for(ADVICE)
    return costed_outcome(
        RULE_ID, title, explanation, metrics, evidence, advice, checked, impact, IMPACT_THRESHOLDS
    )
