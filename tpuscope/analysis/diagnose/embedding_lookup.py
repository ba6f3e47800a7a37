"""Rule `embedding_lookup`: gather/scatter-heavy TPU programs that do not use the SparseCores.

Embedding lookups written as plain gathers (`jnp.take`, `tf.gather`, `nn.Embedding`) run on the
TensorCore, which is built for dense matmuls; TPUs with SparseCores run them far better through
the TPU embedding APIs. When gathers and scatters hold a large share of TensorCore time and no
SparseCore ran anything, the advice is to move the lookups there.
"""

from __future__ import annotations

import re

from tpuscope.analysis.diagnose.finding import (
    STEP_TIME_BANDS,
    RuleOutcome,
    costed_outcome,
    device_time_impact,
    ms,
    percent,
)
from tpuscope.analysis.diagnose.op_evidence import lines_words, longest_op_events, op_source
from tpuscope.analysis.diagnose.tpu_cores import sparsecores, tensorcores
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW

RULE_ID = "embedding_lookup"
IMPACT_THRESHOLDS = STEP_TIME_BANDS
TOP_OPS_NAMED = 10  # ops the metrics list
# Gathers and scatters "dominate" at this share of TensorCore time. Our heuristic (the 30% level XProf
# uses for a dominating collective or data shuffle, openxla/xprof xprof/convert/smart_suggestion/constants.h).
GATHER_PERCENT = 30.0
# XLA's HLO opcodes and op categories: the same in every format that carries HLO ops, so matched here.
GATHER_OP = re.compile(r"(^|[_.\-])(gather|scatter)($|[_.\-])")

ADVICE = {
    JAX: [
        "Move embedding lookups to the SparseCores with the JAX TPU embedding library "
        "(jax_tpu_embedding), instead of jnp.take / gathers on the TensorCore.",
        "If tables are small, a one-hot matmul can be faster on the TensorCore than a gather.",
    ],
    TENSORFLOW: [
        "Use tf.tpu.experimental.embedding.TPUEmbedding (or tfrs.layers.embedding.TPUEmbedding) so lookups "
        "run on the SparseCores, instead of tf.gather / Keras Embedding on the TensorCore.",
    ],
    PYTORCH_XLA: [
        "Large nn.Embedding lookups run as gathers on the TensorCore: batch ids, deduplicate them, or use "
        "one-hot matmuls for small tables.",
    ],
    "": ["Run embedding lookups through the TPU embedding APIs (SparseCore offload) instead of gathers."],
}


def run(ctx: Context) -> RuleOutcome:
    cores = tensorcores(ctx.devices)
    if not cores:
        return RuleOutcome([], "no TPU TensorCore in the profile")
    if sparsecores(ctx.devices):
        return RuleOutcome([], "the SparseCores run ops: embedding lookups are offloaded (see sparsecore)")
    table = ctx.op_table
    names = table.names()
    on_tensorcore = {id(d.plane) for d in cores}
    total = table.total_self_ps
    rows = [
        r
        for r, name in enumerate(names)
        if GATHER_OP.search(name) or (table.category[r] and GATHER_OP.search(table.label(table.category[r])))
    ]
    rows = [r for r in rows if any(id(t.plane) in on_tensorcore for t, _ in table.events_of_row(r))]
    gather_ps = int(table.self_ps[rows].sum()) if rows else 0
    share = percent(gather_ps, total)
    checked = (
        f"gather/scatter ops {share:g}% of TensorCore time ({len(rows)} op(s)), no SparseCore in use; "
        f"{'at or above' if share >= GATHER_PERCENT else 'below'} {GATHER_PERCENT:g}%"
    )
    if share < GATHER_PERCENT:
        return RuleOutcome([], checked)
    rows.sort(key=lambda r: -int(table.self_ps[r]))
    ops = [
        {
            "op": names[r],
            "source": op_source(ctx, r),
            "self_ms": ms(table.self_ps[r]),
            "percent": percent(table.self_ps[r], total),
        }
        for r in rows[:TOP_OPS_NAMED]
    ]
    metrics = {
        "gather_scatter_percent_of_device_time": share,
        "gather_scatter_ms": ms(gather_ps),
        "ops": ops,
    }
    explanation = (
        f"Gathers and scatters hold {share}% of TensorCore op time ({ms(gather_ps)} ms; "
        f"{', '.join(names[r] for r in rows[:4])}{lines_words([str(o['source']) for o in ops[:4]])}) "
        "and no SparseCore ran anything: embedding-style lookups "
        "run on the TensorCore, which is built for dense matmuls."
    )
    evidence = [e for r in rows[:5] for e in longest_op_events(table, r, f"lookup: {names[r]}", 5)]
    title = f"Embedding lookups on the TensorCore: gathers/scatters {share:.1f}% of device time"
    impact = device_time_impact(
        ctx.periods,
        gather_ps,
        len(table.devices),
        "TensorCore time in gathers and scatters, which SparseCore offload would free",
    )
    return costed_outcome(
        RULE_ID, title, explanation, metrics, evidence, ctx.advice_for(ADVICE), checked, impact
    )
