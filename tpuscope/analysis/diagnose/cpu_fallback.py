"""Rule `cpu_fallback`: PyTorch/XLA ops that ran on the CPU because XLA has no lowering for them.

PyTorch/XLA's own analysis reports any `aten::` counter other than
`aten::_local_scalar_dense` (which `.item()` produces) as an unlowered op
(pytorch/xla torch_xla/csrc/runtime/metrics_analysis.cpp `UnloweredOp`; docs/source/learn/troubleshoot.md).

Those counters live in the metrics report, not in the profile: torch_xla 2.9's fallback kernel
(`xla_fallback`) counts the op but emits no TraceMe, so a real XPlane holds no `aten::` event
(samples/ptxla_cpu_fallback.xplane.pb: 9 fallbacks counted, none in the trace; a capture through
`start_server` + `trace(host_tracer_level=3)` held none either). What the trace does hold is the
fallback's shape on the calling thread: a `TransferFromDevice` of the op's inputs, the untraced
CPU op, then a `TransferToDevice` of its result, with no graph run in between
(pytorch/xla `torch_xla/csrc/runtime/pjrt_computation_client.cpp` TraceMes around the fallback;
docs/source/learn/xla-profiling.md). A `.item()` read has the first half only, so
it is left to `host_device_sync`. Host events named `aten::<op>`, should a profile carry them,
are still reported by name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpuscope.analysis.diagnose.finding import (
    STEP_TIME_BANDS,
    RuleOutcome,
    costed_outcome,
    ms,
    step_time_impact,
)
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.facts.evidence import event_evidence
from tpuscope.analysis.framework import PYTORCH
from tpuscope.model import order_statistics
from tpuscope.model.trace import Track
from tpuscope.model.vocabulary import EventClass

RULE_ID = "cpu_fallback"
IMPACT_THRESHOLDS = STEP_TIME_BANDS
# The events of a round trip, in time order per thread: a transfer pair with graph work between them
# is a graph boundary, not a CPU-side op.
ROUND_TRIP_EVENTS = EventClass.D2H | EventClass.H2D | EventClass.GRAPH_WORK

ADVICE = [
    "Replace the ops that fall back with ones XLA can lower, or move them out of the step; data-dependent "
    "ops such as nonzero, masked_select, unique, median or histc have no lowering (torch.where with a "
    "fixed size, sort-based or one-hot formulations do).",
    "torch_xla.debug.metrics.executed_fallback_ops() and the aten:: counters in metrics_report() name "
    "the ops: the profile only shows where they ran.",
]


def run(ctx: Context) -> RuleOutcome:
    if ctx.framework.name == PYTORCH:  # eager PyTorch runs every aten:: op on the host, by design
        return RuleOutcome([], "not checked: eager PyTorch runs aten:: ops on the host by design")
    named = _named_fallbacks(ctx)
    trips = _round_trips(ctx)
    checked = (
        f"{sum(v['count'] for v in named['ops'].values())} aten:: op event(s) on host threads, "
        f"{trips['count']} device-to-host-to-device round trip(s) without a graph run"
    )
    if not named["ops"] and trips["count"] == 0:
        return RuleOutcome([], checked)
    ops = named["ops"]
    metrics: dict[str, Any] = {"ops": ops, "total_ms": named["total_ms"], "round_trips": trips["count"]}
    metrics["round_trip_ms"] = trips["ms"]
    if trips["per_step"] is not None:
        metrics["round_trips_per_step"] = trips["per_step"]
    if ops:
        title = f"CPU fallback: {len(ops)} op type(s) ran on the CPU ({', '.join(list(ops)[:3])})"
        explanation = (
            f"{sum(v['count'] for v in ops.values())} executions of aten:: ops ran on the CPU instead of "
            f"the device ({named['total_ms']} ms). Each one copies its inputs to the host and the result "
            "back, and cuts the XLA graph."
        )
    else:
        rate = f", {trips['per_step']} per step" if trips["per_step"] is not None else ""
        title = f"CPU fallback: {trips['count']} device-to-host-to-device round trips{rate}"
        explanation = (
            f"{trips['count']} times the host copied tensors off the device and sent a result back with no "
            f"graph run in between ({trips['ms']} ms): the shape of an op PyTorch/XLA ran on the CPU "
            "because XLA cannot lower it (or of host code computing a tensor from device values). Each "
            "one cuts the XLA graph and stalls the device. The profile does not name the op."
        )
    impact = step_time_impact(
        ctx.periods,
        named["total_ps"] + trips["ps"],
        "host time in CPU-fallback ops and device-to-host-to-device round trips, while the graph waits",
    )
    evidence = named["evidence"] + trips["evidence"]
    return costed_outcome(
        RULE_ID, title, explanation, metrics, evidence, list(ADVICE), checked, impact, IMPACT_THRESHOLDS
    )


def _named_fallbacks(ctx: Context) -> dict[str, Any]:
    """Host events named `aten::<op>`: per op count and time, and evidence."""
    counts: dict[str, list[int]] = {}
    items: list[dict[str, Any]] = []
    for track, idx in ctx.host_events_of(EventClass.CPU_FALLBACK):
        names = track.name_id[idx]
        for name_id in order_statistics.sorted_distinct(names):
            sel = idx[names == name_id]
            name = ctx.trace.strings[int(name_id)]
            entry = counts.setdefault(name, [0, 0])
            entry[0] += len(sel)
            entry[1] += int(track.duration_ps[sel].sum())
            items.extend(event_evidence(f"CPU fallback: {name}", track, int(i)) for i in sel[:50])
    ops = {
        name: {"count": c, "ms": ms(t)} for name, (c, t) in sorted(counts.items(), key=lambda kv: -kv[1][1])
    }
    total_ms = round(sum(v["ms"] for v in ops.values()), 3)
    total_ps = sum(t for _, t in counts.values())
    return {"ops": ops, "total_ms": total_ms, "total_ps": total_ps, "evidence": items}


def round_trip_pairs(ctx: Context) -> list[tuple[Track, np.ndarray, np.ndarray]]:
    """(track, D2H indices, H2D indices) of each transfer pair with no graph work between them.

    Of the outermost transfer and graph-work events of each host thread, in time order, a pair is
    a `TransferFromDevice` directly followed by a `TransferToDevice` in the same step.
    """
    if not ctx.host_events_of(EventClass.D2H) or not ctx.host_events_of(EventClass.H2D):
        return []
    step_starts = ctx.periods[0]
    pairs = []
    for track, idx in ctx.host_events_of(ROUND_TRIP_EVENTS):
        if len(idx) < 2:
            continue
        classes = ctx.trace.classes_of(track.name_id[idx])
        is_d2h = (classes & np.uint32(EventClass.D2H)) != 0
        is_h2d = (classes & np.uint32(EventClass.H2D)) != 0
        first, second = idx[:-1], idx[1:]
        hit = is_d2h[:-1] & is_h2d[1:]
        if len(step_starts):
            same_step = np.searchsorted(step_starts, track.start_ps[first], side="right") == np.searchsorted(
                step_starts, track.start_ps[second], side="right"
            )
            hit &= same_step
        if hit.any():
            pairs.append((track, first[hit], second[hit]))
    return pairs


def _round_trips(ctx: Context) -> dict[str, Any]:
    """Count, time, rate per step and evidence of the D2H -> CPU -> H2D round trips."""
    pairs = round_trip_pairs(ctx)
    count = sum(len(d) for _, d, _ in pairs)
    total_ps = sum(int((t.end_ps[h] - t.start_ps[d]).sum()) for t, d, h in pairs)
    n_steps = len(ctx.periods[0])
    per_step = round(count / n_steps, 2) if n_steps and count else None
    items = []
    for track, d2h, h2d in pairs:
        for d, h in zip(d2h[:50].tolist(), h2d[:50].tolist(), strict=True):
            item = event_evidence("CPU fallback: device-to-host-to-device round trip", track, d)
            item["end_ps"] = int(track.end_ps[h])
            items.append(item)
    return {"count": count, "ms": ms(total_ps), "ps": total_ps, "per_step": per_step, "evidence": items}
