"""Rule `flops_utilization`: compute-bound ops whose achieved FLOP/s stays far below the chip's peak.

An op is compute-bound when its FLOPs per byte reach the roofline's ridge point (peaks from the
device plane's stats). For those ops the achieved rate (FLOPs over self time, as XProf's
hlo_stats) is compared with the peak: a large gap means the matrix units idle inside the op
(small or misaligned matmuls, f32 inputs, poor fusion). XProf's smart suggestions call MXU
utilization below 50% low.
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.bound_codes import BOUND_COMPUTE
from tpuscope.analysis.diagnose.finding import (
    STEP_TIME_BANDS,
    RuleOutcome,
    costed_outcome,
    device_time_impact,
    ms,
    percent,
)
from tpuscope.analysis.diagnose.op_evidence import lines_words, longest_op_events, op_source
from tpuscope.analysis.diagnose.rule_results import COMPUTE_BOUND_UTILIZATION
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW
from tpuscope.analysis.metrics.format import format_percent
from tpuscope.analysis.ops import OpTable
from tpuscope.model.records import record

RULE_ID = "flops_utilization"
IMPACT_THRESHOLDS = STEP_TIME_BANDS
# XProf smart suggestions: MXU utilization low below 50% (openxla/xprof
# xprof/convert/smart_suggestion/constants.h, the MXU/HBM low and high levels 50 / 70).
LOW_UTILIZATION_PERCENT = 50.0
# Compute-bound ops must hold this share of device time to matter. Our heuristic.
MIN_COMPUTE_SHARE_PERCENT = 10.0
TOP_OPS = 5

ADVICE = {
    JAX: [
        "Feed the matrix units bigger, aligned matmuls: batch and feature dimensions multiples of 128 "
        "(see shape_alignment), larger per-device batches, bf16 inputs (see dtype).",
        "Check the ops named here in the Ops view: fusion and layout choices show in their HLO text.",
    ],
    PYTORCH_XLA: ["Use bf16 (autocast), larger batches, and dimensions that are multiples of 128."],
    TENSORFLOW: ["Use mixed_bfloat16, larger batches, and dimensions that are multiples of 128."],
    "": ["Use larger, aligned matmuls and 16-bit inputs so the matrix units stay busy."],
}


NO_PEAK = "no peak FLOP/s known for these devices, so no roofline to compare with"


@record(frozen=True)
class ComputeBound:
    """The compute-bound ops of the op table (by op, all devices) and the FLOP/s they reach: what this
    rule and the `flop_utilization` metric (`tpuscope.analysis.metrics`) both read."""

    rows: np.ndarray  # the table's rows of compute-bound ops with FLOPs and self time
    compute_ps: int
    total_ps: int
    achieved_flops_per_s: float | None
    peak_flops_per_s: float | None
    reason: str = ""

    @property
    def utilization_percent(self) -> float | None:
        """Their FLOP/s as a share of the peak (percent), None without a peak or such ops."""
        if self.achieved_flops_per_s is None or not self.peak_flops_per_s:
            return None
        return 100.0 * self.achieved_flops_per_s / self.peak_flops_per_s


def compute_bound(table: OpTable | None) -> ComputeBound:
    none = np.empty(0, np.int64)
    if table is None or table.total_self_ps <= 0:
        return ComputeBound(none, 0, 0, None, None, "no device op time")
    if table.peaks is None:
        return ComputeBound(none, 0, int(table.total_self_ps), None, None, NO_PEAK)
    peak = table.peaks.teraflops_per_second * 1e12
    rows = np.flatnonzero((table.bound == BOUND_COMPUTE) & np.isfinite(table.flops) & (table.self_ps > 0))
    compute_ps = int(table.self_ps[rows].sum())
    if compute_ps <= 0:
        return ComputeBound(rows, 0, int(table.total_self_ps), None, peak, "no compute-bound op with FLOPs")
    achieved = float(table.flops[rows].sum()) / (compute_ps * 1e-12)
    return ComputeBound(rows, compute_ps, int(table.total_self_ps), achieved, peak)


def run(ctx: Context) -> RuleOutcome:
    if not ctx.devices:
        return RuleOutcome([], "no device activity in the profile")
    table = ctx.op_table
    if table.peaks is None:
        return RuleOutcome([], NO_PEAK)
    found = ctx.get(COMPUTE_BOUND_UTILIZATION)
    total = table.total_self_ps
    compute = found.rows
    compute_ps = found.compute_ps
    compute_share = percent(compute_ps, total)
    peak = table.peaks.teraflops_per_second * 1e12
    if compute_share < MIN_COMPUTE_SHARE_PERCENT:
        return RuleOutcome(
            [], f"compute-bound ops {compute_share:g}% of device time, below {MIN_COMPUTE_SHARE_PERCENT:g}%"
        )
    achieved = float(found.achieved_flops_per_s or 0.0)
    utilization = percent(achieved, peak)
    shown = format_percent(found.utilization_percent or 0.0)
    checked = (
        f"compute-bound ops ({compute_share:g}% of device time) reach {utilization:g}% of the peak "
        f"{table.peaks.teraflops_per_second:g} TFLOP/s, "
        f"{'below' if utilization < LOW_UTILIZATION_PERCENT else 'at or above'} {LOW_UTILIZATION_PERCENT:g}%"
    )
    if utilization >= LOW_UTILIZATION_PERCENT:
        return RuleOutcome([], checked)
    rate = table.flop_rate[compute]
    gap_ps = table.self_ps[compute] * np.clip(1 - rate / peak, 0, 1)
    order = compute[np.argsort(-gap_ps, kind="stable")][:TOP_OPS]
    names = table.names()
    ops = [
        {
            "op": names[r],
            "source": op_source(ctx, int(r)),
            "self_ms": ms(table.self_ps[r]),
            "percent_of_device_time": percent(table.self_ps[r], total),
            "achieved_tflops": round(float(table.flop_rate[r]) / 1e12, 2),
            "utilization_percent": percent(float(table.flop_rate[r]), peak),
        }
        for r in order
    ]
    metrics = {
        "utilization_percent": utilization,
        "achieved_tflops": round(achieved / 1e12, 2),
        "peak_tflops": table.peaks.teraflops_per_second,
        "compute_bound_percent_of_device_time": compute_share,
        "ops": ops,
    }
    explanation = (
        f"Compute-bound ops hold {compute_share}% of device time but reach {metrics['achieved_tflops']} "
        f"TFLOP/s, {shown} of the chip's {table.peaks.teraflops_per_second:g} TFLOP/s peak "
        "(XProf calls "
        f"MXU utilization below {LOW_UTILIZATION_PERCENT:g}% low). The biggest gaps: "
        + ", ".join(f"`{o['op']}` at {o['utilization_percent']}%" for o in ops[:3])
        + lines_words([o["source"] for o in ops[:3]])
        + "."
    )
    evidence = [e for r in order for e in longest_op_events(table, int(r), f"low FLOP/s: {names[r]}", 5)]
    title = f"Low FLOP/s utilization: compute-bound ops at {shown} of peak"
    impact = device_time_impact(
        ctx.periods,
        float(gap_ps.sum()),
        len(table.devices),
        "device time compute-bound ops would save at the chip's peak FLOP/s",
    )
    return costed_outcome(
        RULE_ID, title, explanation, metrics, evidence, ctx.advice_for(ADVICE), checked, impact
    )
