"""Rule `infeed_outfeed`: TPU steps spend their time in infeed/outfeed ops.

Infeed and outfeed ops move data between the host and a running TPU program; while one waits,
the TensorCore waits with it. As XProf's input analysis on TPU does, the time is taken per step
as the maximum over the cores (openxla/xprof xprof/convert/op_stats_to_input_pipeline_analysis.cc).
"""

from __future__ import annotations

import re

import numpy as np

from tpuscope.analysis.diagnose.finding import (
    STEP_TIME_BANDS,
    Impact,
    ImpactThresholds,
    RuleOutcome,
    costed_outcome,
    ms,
    percent,
)
from tpuscope.analysis.diagnose.op_evidence import intervals_per_device, longest_op_events
from tpuscope.analysis.diagnose.tpu_cores import tensorcores
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.facts.intervals import window_total
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW

RULE_ID = "infeed_outfeed"
# XProf smart suggestions: infeed above 10% of step time (openxla/xprof
# xprof/convert/smart_suggestion/constants.h, the infeed threshold).
INFEED_PERCENT = 10.0
IMPACT_THRESHOLDS = ImpactThresholds(
    INFEED_PERCENT,
    STEP_TIME_BANDS.critical,
    "XProf's infeed suggestion (10%), critical from 20% (our heuristic)",
)
# XLA's HLO opcodes and op categories: the same in every format that carries HLO ops, so matched here.
FEED_OP = re.compile(r"^(infeed|outfeed)(\.\d+)?$")
FEED_CATEGORY = re.compile(r"^(infeed|outfeed)$")

ADVICE = {
    TENSORFLOW: [
        "The TPU waits on infeed: make the host input pipeline faster (tf.data prefetch, "
        "num_parallel_calls, interleave reads, cache), and run several steps per call "
        "(steps_per_execution) so infeed runs ahead.",
        "Outfeed: return fewer or smaller summaries from the step.",
    ],
    JAX: [
        "Infeed/outfeed in a JAX program come from host callbacks or explicit infeed: pass inputs as "
        "arguments (prefetched with jax.device_put) and return outputs instead.",
    ],
    PYTORCH_XLA: ["Feed the device with MpDeviceLoader so batches are transferred ahead of the step."],
    "": ["Feed the TPU ahead of time: prefetch input on the host and keep outfeed small."],
}


def run(ctx: Context) -> RuleOutcome:
    cores = tensorcores(ctx.devices)
    if not cores:
        return RuleOutcome([], "no TPU TensorCore in the profile")
    p0, p1 = ctx.periods
    if len(p0) == 0:
        return RuleOutcome([], "no steps found on the TPU, so no step time to compare infeed with")
    table = ctx.op_table
    names = table.names()
    rows = [
        r
        for r, name in enumerate(names)
        if FEED_OP.match(name) or (table.category[r] and FEED_CATEGORY.match(table.label(table.category[r])))
    ]
    steady = ~ctx.warm_up
    step_ps = float((p1 - p0)[steady].sum())
    per_device = intervals_per_device(table, rows)
    core_positions = [k for k, d in enumerate(table.devices) if d in cores]
    per_step = np.zeros(len(p0))
    for k in core_positions:
        if k in per_device:
            per_step = np.maximum(per_step, window_total(per_device[k], p0, p1))
    feed_ps = float(per_step[steady].sum())
    share = percent(feed_ps, step_ps)
    checked = (
        f"infeed/outfeed {share:g}% of TPU step time ({len(rows)} op(s)), "
        f"{'at or above' if share >= INFEED_PERCENT else 'below'} {INFEED_PERCENT:g}%"
    )
    if share < INFEED_PERCENT:
        return RuleOutcome([], checked)
    ops = [
        {"op": names[r], "self_ms": ms(table.self_ps[r]), "occurrences": int(table.occurrences[r])}
        for r in rows
    ]
    metrics = {
        "infeed_outfeed_percent_of_step_time": share,
        "infeed_outfeed_ms": ms(feed_ps),
        "step_time_ms": ms(step_ps),
        "steps": int(steady.sum()),
        "ops": ops,
    }
    explanation = (
        f"In {int(steady.sum())} steps (warm-up left out) the TPU spent {share}% of step time "
        f"({ms(feed_ps)} ms, the busiest core per step) in infeed/outfeed ops "
        f"({', '.join(names[r] for r in rows[:4])}): the program waited for the host to send or take data. "
        f"XProf suggests acting above {INFEED_PERCENT:g}%."
    )
    evidence = [e for r in rows for e in longest_op_events(table, r, f"feed: {names[r]}")]
    title = f"Infeed/outfeed: {share:.1f}% of TPU step time"
    impact = Impact(
        "TPU time in infeed/outfeed ops inside the steps (busiest core per step)",
        share,
        ms(feed_ps / steady.sum()),
    )
    advice = ctx.advice_for(ADVICE)
    return costed_outcome(
        RULE_ID, title, explanation, metrics, evidence, advice, checked, impact, IMPACT_THRESHOLDS
    )
