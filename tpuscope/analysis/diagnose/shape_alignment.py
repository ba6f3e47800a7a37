"""Rule `shape_alignment`: TPU matmuls whose operands' minor dimensions are not tile multiples.

The TPU lays arrays out in tiles of 8 x 128 (second-minor x minor dimension; the `T(8,128)` in
a layout) and its matrix units work on 128-wide blocks: a dimension of 300 is padded to 304 and
one of 1000 to 1024, and the padding is computed and moved like real data. The Cloud TPU
performance guide (cloud.google.com/tpu/docs/performance-guide) asks for feature dimensions
that are multiples of 128 and batch dimensions multiples of 8. Operand shapes and tiles come
from the ops' HLO text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tpuscope.analysis.diagnose.finding import (
    STEP_TIME_BANDS,
    RuleOutcome,
    costed_outcome,
    device_time_impact,
    ms,
    percent,
)
from tpuscope.analysis.diagnose.matmul_ops import tpu_matmuls
from tpuscope.analysis.diagnose.op_evidence import longest_op_events, op_source, short_source
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW

if TYPE_CHECKING:
    from tpuscope.analysis.diagnose.hlo_text import Shape

RULE_ID = "shape_alignment"
IMPACT_THRESHOLDS = STEP_TIME_BANDS
# The TPU tile, second-minor x minor (cloud.google.com/tpu/docs/performance-guide: "tile data into
# 128x8 chunks"); used when an operand's layout names no tile.
DEFAULT_TILE = (8, 128)
# A warning when the time the padding is estimated to cost is at least this share of device time.
# Our heuristic (XProf's 5% "moderately" level for input time, reused as the bar for "matters").
WASTE_PERCENT = 5.0
TOP_OPS = 5

ADVICE = {
    JAX: [
        "Make the dimensions named here multiples of 128 (features, hidden sizes, vocab) and batch "
        "dimensions multiples of 8 per device; pad once outside the step if the data does not divide.",
    ],
    PYTORCH_XLA: [
        "Pick hidden sizes and vocabularies that are multiples of 128, per-core batches multiples of 8."
    ],
    TENSORFLOW: ["Pick layer widths that are multiples of 128 and per-core batch sizes multiples of 8."],
    "": ["Make matmul feature dimensions multiples of 128 and batch dimensions multiples of 8."],
}


def run(ctx: Context) -> RuleOutcome:
    matmuls = tpu_matmuls(ctx)
    if not matmuls:
        return RuleOutcome([], "no TPU matmul or convolution with readable operand shapes")
    from tpuscope.analysis.diagnose.hlo_text import ELEMENT_BYTES, FLOAT_TYPES  # TPU ops only (~1.5 ms)

    table = ctx.op_table
    total = table.total_self_ps
    rows: list[dict[str, Any]] = []
    wasted_ps = 0.0
    for op in matmuls:
        worst, worst_ratio, wasted_bytes = None, 1.0, 0
        for shape in op.instruction.operands:
            if shape.element_type not in FLOAT_TYPES or len(shape.dims) < 2:
                continue
            tile = shape.tile[-2:] if len(shape.tile) >= 2 else DEFAULT_TILE
            padded = shape.padded_elements(tile)
            ratio = padded / max(shape.elements, 1)
            wasted_bytes += (padded - shape.elements) * ELEMENT_BYTES.get(shape.element_type, 4)
            if ratio > worst_ratio:
                worst, worst_ratio = shape, ratio
        if worst is None:
            continue
        waste = op.self_ps * (1 - 1 / worst_ratio)
        wasted_ps += waste
        flops = float(table.flops[op.row])
        rows.append(
            {
                "op": op.name,
                "source": op_source(ctx, op.row),
                "operand": _shape_text(worst),
                "change": _what_to_change(worst),
                "padding_percent": round(100 * (worst_ratio - 1), 2),
                "self_ms": ms(op.self_ps),
                "wasted_ms_estimate": ms(waste),
                "wasted_flops_estimate": round(flops * (1 - 1 / worst_ratio)) if flops == flops else None,
                "wasted_bytes_per_call": int(wasted_bytes),
                "_row": op.row,
            }
        )
    share = percent(wasted_ps, total)
    checked = (
        f"{len(matmuls)} TPU matmul/convolution op(s), {len(rows)} with padded operands; padding costs about "
        f"{share:g}% of device time, {'at or above' if share >= WASTE_PERCENT else 'below'} "
        f"{WASTE_PERCENT:g}%"
    )
    if share < WASTE_PERCENT:
        return RuleOutcome([], checked)
    rows.sort(key=lambda r: -r["wasted_ms_estimate"])
    evidence = [
        e for r in rows[:TOP_OPS] for e in longest_op_events(table, r["_row"], f"padded: {r['op']}", 5)
    ]
    for r in rows:
        del r["_row"]
    metrics = {
        "padding_time_percent_of_device_time": share,
        "wasted_ms_estimate": ms(wasted_ps),
        "ops": rows[:10],
    }
    first = rows[0]
    explanation = (
        f"{len(rows)} matmul/convolution op(s) run on operands whose minor dimensions are not multiples "
        f"of the TPU tile (8 x 128), so part of each is padding: about {ms(wasted_ps)} ms ({share}% of "
        f"device time) goes to padded rows and columns. Worst: `{first['op']}`{_at(first['source'])} on "
        f"{first['operand']} "
        f"({first['padding_percent']}% padding): {first['change']}."
    )
    title = f"Misaligned matmul shapes: padding costs about {share:.1f}% of device time"
    impact = device_time_impact(
        ctx.periods, wasted_ps, len(table.devices), "device time matmuls spend on padded rows and columns"
    )
    return costed_outcome(
        RULE_ID, title, explanation, metrics, evidence, ctx.advice_for(ADVICE), checked, impact
    )


def _at(source: str) -> str:
    return f" (from {short_source(source)})" if source else ""


def _shape_text(shape: Shape) -> str:
    return f"{shape.element_type}[{','.join(str(d) for d in shape.dims)}]"


def _what_to_change(shape: Shape) -> str:
    tile = shape.tile[-2:] if len(shape.tile) >= 2 else DEFAULT_TILE
    minors = shape.minor_dims()
    changes = []
    for k, size in enumerate(reversed(tile)):
        if k >= len(minors):
            break
        d = minors[k]
        value = shape.dims[d]
        if value % size:
            padded = -(-value // size) * size
            changes.append(f"dimension {d} is {value}, padded to {padded} (make it a multiple of {size})")
    return "; ".join(changes) or "aligned"
