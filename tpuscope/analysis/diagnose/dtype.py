"""Rule `dtype`: TPU matmuls fed f32 where bf16 is the norm, and bf16 promoted to f32 in reductions.

The TPU's matrix units multiply bf16 natively; f32 matmuls run as several bf16 passes and move
twice the bytes. XProf's overview recommends 16-bit compute when little of the device computation
is 16-bit (openxla/xprof xprof/convert/op_stats_to_overview_page.cc, the "Only X% of device
computation is 16 bit" recommendation, below 10%), and its static suggestions warn against bf16 ->
f32 promotion inside reductions. Element types come from the ops' HLO text.
"""

from __future__ import annotations

import re
from typing import Any

from tpuscope.analysis.diagnose.finding import (
    NO_STEPS_NOTE,
    STEP_TIME_BANDS,
    Finding,
    RuleOutcome,
    device_time_impact,
    ms,
    percent,
)
from tpuscope.analysis.diagnose.matmul_ops import tpu_matmuls
from tpuscope.analysis.diagnose.op_evidence import lines_words, longest_op_events, op_source
from tpuscope.analysis.diagnose.tpu_cores import tensorcores
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.facts.evidence import largest_first
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW

RULE_ID = "dtype"
# XProf's overview recommends 16-bit compute when under 10% of device computation is 16-bit (see above).
MIN_16BIT_PERCENT = 10.0
# f32 matmuls must hold this share of device time to matter. Our heuristic.
MIN_F32_MATMUL_PERCENT = 10.0
# Promoting reductions must hold this share of device time to be listed. Our heuristic.
MIN_PROMOTION_PERCENT = 1.0
# XLA's HLO element types and opcodes: the same in every format that carries HLO ops, so matched here.
# The share of an f32 matmul's (or a promoting reduction's) time that 16-bit inputs would save: our
# heuristic, the lower bound of what halving the bytes moved gives (the MXU also takes several passes per
# f32 product, so the saving is usually larger).
SIXTEEN_BIT_SAVING = 0.5
IMPACT_THRESHOLDS = STEP_TIME_BANDS
SIXTEEN_BIT = {"bf16", "f16"}
REDUCTION = re.compile(r"(^|[_.\-])reduce|reduction")

ADVICE = {
    JAX: [
        "Keep parameters in f32 if you need to, but cast matmul inputs to bf16 "
        "(x.astype(jnp.bfloat16), dtype=jnp.bfloat16 in flax layers) or use "
        "jax.default_matmul_precision('bfloat16').",
        "In reductions over bf16 values, keep the accumulation dtype explicit (e.g. jnp.sum(x, dtype=...)) "
        "instead of promoting whole arrays to f32 first.",
    ],
    PYTORCH_XLA: [
        "Use torch.autocast('xla', dtype=torch.bfloat16) or bf16 model weights (model.to(torch.bfloat16))."
    ],
    TENSORFLOW: ["Use tf.keras.mixed_precision.set_global_policy('mixed_bfloat16')."],
    "": ["Feed matmuls bf16 inputs on TPU; avoid promoting bf16 to f32 inside reductions."],
}


def run(ctx: Context) -> RuleOutcome:
    if not tensorcores(ctx.devices):
        return RuleOutcome([], "no TPU TensorCore in the profile")
    # The HLO text parser (~1.5 ms of import): for TPU ops only.
    from tpuscope.analysis.diagnose.hlo_text import FLOAT_TYPES

    table = ctx.op_table
    total = table.total_self_ps
    matmuls = tpu_matmuls(ctx)
    float_inputs = [
        (op, {s.element_type for s in op.instruction.operands if s.element_type in FLOAT_TYPES})
        for op in matmuls
    ]
    f32 = [op for op, types in float_inputs if types and types <= {"f32", "f64"}]
    sixteen = [op for op, types in float_inputs if types and types <= SIXTEEN_BIT]
    matmul_ps = sum(op.self_ps for op, types in float_inputs if types)
    f32_ps = sum(op.self_ps for op in f32)
    sixteen_share = percent(sum(op.self_ps for op in sixteen), matmul_ps)
    f32_share = percent(f32_ps, total)
    promotions = _promoting_reductions(ctx, total)
    checked = (
        f"{len(matmuls)} TPU matmul/convolution op(s): {len(f32)} with f32 inputs ({f32_share:g}% of device "
        f"time), 16-bit {sixteen_share:g}% of matmul time; {len(promotions)} bf16 -> f32 reduction(s)"
    )
    findings = []
    if f32 and f32_share >= MIN_F32_MATMUL_PERCENT and sixteen_share < MIN_16BIT_PERCENT:
        f32.sort(key=lambda op: -op.self_ps)
        ops = [
            {
                "op": op.name,
                "source": op_source(ctx, op.row),
                "self_ms": ms(op.self_ps),
                "percent": percent(op.self_ps, total),
            }
            for op in f32[:10]
        ]
        metrics = {
            "f32_matmul_percent_of_device_time": f32_share,
            "sixteen_bit_percent_of_matmul_time": sixteen_share,
            "ops": ops,
        }
        explanation = (
            f"Matmuls and convolutions with f32 inputs hold {f32_share}% of device time "
            f"({', '.join(op.name for op in f32[:4])}{lines_words([str(o['source']) for o in ops[:4]])}), "
            f"and only {sixteen_share}% of matmul time is 16-bit. "
            "The TPU's matrix units are built for bf16: f32 inputs take several passes and twice the memory "
            f"traffic. XProf recommends 16-bit compute when under {MIN_16BIT_PERCENT:g}% of it is 16-bit."
        )
        evidence = [
            e for op in f32[:5] for e in longest_op_events(table, op.row, f"f32 matmul: {op.name}", 5)
        ]
        title = f"f32 matmuls on TPU: {f32_share:.1f}% of device time, {sixteen_share:.1f}% of it in 16-bit"
        impact = device_time_impact(
            ctx.periods,
            SIXTEEN_BIT_SAVING * f32_ps,
            len(table.devices),
            "half the device time of f32 matmuls, the least bf16 inputs would save",
        )
        findings.append(
            Finding(
                RULE_ID,
                IMPACT_THRESHOLDS.severity(impact),
                title,
                explanation,
                metrics,
                largest_first(evidence),
                ctx.advice_for(ADVICE),
                impact,
                "" if impact is not None else NO_STEPS_NOTE,
            )  # fmt: skip
        )
    if promotions:
        rows = [int(p["_row"]) for p in promotions]
        share = round(sum(p["percent"] for p in promotions), 2)
        explanation = (
            f"{len(promotions)} reduction(s) take bf16 inputs and produce f32 ({share}% of device time; "
            f"{', '.join(p['op'] for p in promotions[:4])}"
            f"{lines_words([p['source'] for p in promotions[:4]])}): "
            "the bf16 values are promoted to f32 before "
            "reducing, which doubles the bytes the reduction reads when done on whole arrays."
        )
        evidence = [
            e
            for p in promotions[:5]
            for e in longest_op_events(table, p.pop("_row"), f"promotes: {p['op']}", 5)
        ]
        for p in promotions:
            p.pop("_row", None)
        title = f"bf16 -> f32 promotion in {len(promotions)} reduction(s) ({share:.1f}% of device time)"
        promoted_ps = SIXTEEN_BIT_SAVING * sum(int(table.self_ps[r]) for r in rows)
        impact = device_time_impact(
            ctx.periods, promoted_ps, len(table.devices), "half the device time of the promoting reductions"
        )
        findings.append(
            Finding(
                RULE_ID,
                IMPACT_THRESHOLDS.severity(impact),
                title,
                explanation,
                {"reductions": promotions},
                largest_first(evidence),
                ctx.advice_for(ADVICE)[1:] or ctx.advice_for(ADVICE),
                impact,
                "" if impact is not None else NO_STEPS_NOTE,
            )  # fmt: skip
        )
    return RuleOutcome(findings, checked)


def _promoting_reductions(ctx: Context, total: int) -> list[dict[str, Any]]:
    from tpuscope.analysis.diagnose.hlo_text import FLOAT_TYPES, parse_instruction

    table = ctx.op_table
    cores = {id(d.plane) for d in tensorcores(ctx.devices)}
    found: list[dict[str, Any]] = []
    for r, name in enumerate(table.names()):
        category = table.label(table.category[r]) if table.category[r] else ""
        if not (REDUCTION.search(name) or REDUCTION.search(category)):
            continue
        if percent(int(table.self_ps[r]), total) < MIN_PROMOTION_PERCENT:
            continue
        if not any(id(t.plane) in cores for t, _ in table.events_of_row(r)):
            continue
        instruction = parse_instruction(ctx.op_text(r))
        if instruction is None or not instruction.results:
            continue
        inputs = {s.element_type for s in instruction.operands if s.element_type in FLOAT_TYPES and s.dims}
        outputs = {s.element_type for s in instruction.results if s.element_type in FLOAT_TYPES}
        if inputs and inputs <= SIXTEEN_BIT and "f32" in outputs:
            share = percent(table.self_ps[r], total)
            found.append(
                {"op": name, "source": op_source(ctx, r), "self_ms": ms(table.self_ps[r]), "percent": share,
                 "_row": r}
            )  # fmt: skip
    found.sort(key=lambda p: -p["percent"])
    return found
