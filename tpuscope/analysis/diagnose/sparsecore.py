"""Rule `sparsecore`: TPU SparseCores (embedding lookups) busy for a large share of the step.

SparseCore planes (`/device:TPU:N SparseCore M`) run the embedding lookups that TPU embedding
APIs offload; their `Sparse Core Ops` line holds the work. XProf's SparseCore-bound rule flags
SparseCore time above 10% of the step: the step then waits on embeddings.
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis import device_ops
from tpuscope.analysis.diagnose.finding import (
    STEP_TIME_BANDS,
    ImpactThresholds,
    RuleOutcome,
    costed_outcome,
    ms,
    percent,
    step_time_impact,
)
from tpuscope.analysis.diagnose.tpu_cores import sparsecores
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.facts.evidence import range_evidence as range_ev
from tpuscope.analysis.facts.intervals import window_total
from tpuscope.analysis.framework import JAX, TENSORFLOW

RULE_ID = "sparsecore"
# XProf smart suggestions: SparseCore time above 10% of the step (openxla/xprof
# xprof/convert/smart_suggestion/constants.h, the SparseCore threshold; SparseCoreBoundRule).
SPARSECORE_PERCENT = 10.0
IMPACT_THRESHOLDS = ImpactThresholds(
    SPARSECORE_PERCENT,
    STEP_TIME_BANDS.critical,
    "XProf's SparseCore suggestion (10%), critical from 20% (our heuristic)",
)

ADVICE = {
    TENSORFLOW: [
        "Embedding lookups bound the step: deduplicate ids per batch, shrink or combine tables "
        "(tf.tpu.experimental.embedding feature configs), and pipeline SparseCore work with the "
        "TensorCore step (TPUEmbedding pipelining).",
    ],
    JAX: [
        "Embedding lookups bound the step: deduplicate ids, combine small tables, and enable SparseCore "
        "pipelining in the JAX TPU embedding library (jax_tpu_embedding) so lookups overlap the dense step.",
    ],
    "": ["Embedding lookups on the SparseCores bound the step: deduplicate ids, combine tables, pipeline."],
}


def run(ctx: Context) -> RuleOutcome:
    cores = sparsecores(ctx.devices)
    if not cores:
        return RuleOutcome([], "no SparseCore plane with ops in the profile")
    p0, p1 = ctx.periods
    steady = ~ctx.warm_up if len(p0) else np.zeros(0, bool)
    if len(p0) and steady.any():
        w0, w1 = p0[steady], p1[steady]
    else:
        b0, b1 = ctx.device_busy
        w0, w1 = b0[:1], b1[-1:]
    window_ps = float((w1 - w0).sum())
    busiest, busiest_ps, busiest_busy = None, 0.0, None
    for core in cores:
        busy = device_ops.busy_intervals(core)
        covered = float(window_total(busy, w0, w1).sum())
        if busiest is None or covered > busiest_ps:
            busiest, busiest_ps, busiest_busy = core, covered, busy
    share = percent(busiest_ps, window_ps)
    checked = (
        f"busiest of {len(cores)} SparseCore(s) {share:g}% of step time, "
        f"{'at or above' if share >= SPARSECORE_PERCENT else 'below'} {SPARSECORE_PERCENT:g}%"
    )
    if share < SPARSECORE_PERCENT or busiest is None or busiest_busy is None:
        return RuleOutcome([], checked)
    b0, b1 = busiest_busy
    top = np.argsort(-(b1 - b0), kind="stable")[:20]
    evidence = [
        range_ev(
            f"SparseCore busy ({ms(b1[k] - b0[k])} ms)",
            int(b0[k]),
            int(b1[k]),
            busiest.host,
            busiest.plane.name,
        )
        for k in top
    ]
    metrics = {
        "sparsecore_percent_of_step_time": share,
        "sparsecore_busy_ms": ms(busiest_ps),
        "window_ms": ms(window_ps),
        "sparsecores": len(cores),
        "busiest": busiest.plane.name,
    }
    explanation = (
        f"The busiest SparseCore ({busiest.plane.name}) ran ops {share}% of the steady-state step time "
        f"({ms(busiest_ps)} ms of {ms(window_ps)} ms): embedding lookups take a large part of each step. "
        f"XProf flags SparseCore time above {SPARSECORE_PERCENT:g}%."
    )
    title = f"SparseCore-bound: embeddings busy {share:.1f}% of step time"
    steps = (w0, w1) if len(p0) and steady.any() else (w0[:0], w1[:0])
    impact = step_time_impact(
        steps, busiest_ps, "busiest SparseCore's busy time inside the steady-state steps"
    )
    advice = ctx.advice_for(ADVICE)
    return costed_outcome(
        RULE_ID, title, explanation, metrics, evidence, advice, checked, impact, IMPACT_THRESHOLDS
    )
