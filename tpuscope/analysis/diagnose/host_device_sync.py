"""Rule `host_device_sync`: the host blocks on device results inside the step loop.

A device-to-host read (`float(x)`, `np.asarray(jax_array)`, `loss.item()`, printing a
tensor) makes the host wait for the device to drain its queue, and then the device waits
for the host to dispatch the next step: async dispatch is lost. The events are the
blocking reads each framework annotates (JAX `jax/_src/array.py`, pytorch/xla `torch_xla/csrc`): JAX
`np.asarray(jax.Array)`, PyTorch/XLA `PjRtComputationClient::TransferFromDevice` and
`_local_scalar_dense`, TPU `TfrtTpuBuffer::ToLiteral`. For each one the rule measures how
long the device then sat idle before it ran its next op: that idle time, inside the steps, is what
the reads cost and what decides the severity (the reads per step are evidence, not the trigger). In
PyTorch/XLA a read also forces the lazy graph to run while the host waits, so the host cannot trace
the next step meanwhile: there the blocked time counts too.
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.diagnose.finding import (
    NO_STEPS_NOTE,
    STEP_TIME_BANDS,
    Finding,
    Impact,
    RuleOutcome,
    Severity,
    ms,
    step_time_impact,
)
from tpuscope.analysis.facts.context import Context, flat_events, intervals_of
from tpuscope.analysis.facts.evidence import MAX_EVIDENCE, event_evidence, largest_first
from tpuscope.analysis.facts.evidence import range_evidence as range_ev
from tpuscope.analysis.facts.intervals import intersect, merge_intervals, total, window_total
from tpuscope.analysis.framework import JAX, PYTORCH, PYTORCH_XLA, TENSORFLOW
from tpuscope.model import order_statistics

RULE_ID = "host_device_sync"
# The severity comes from the time the reads cost (STEP_TIME_BANDS), not from their count: PyTorch/XLA's
# metrics analysis flags TransferFromDeviceTime above 0.5 samples per step (torch_xla/csrc/runtime/
# metrics_analysis.cpp, pytorch/xla), but one logging read per step that costs nothing is healthy.
IMPACT_THRESHOLDS = STEP_TIME_BANDS
# Frameworks whose host read executes the pending lazy graph while the host waits.
LAZY_GRAPH_FRAMEWORKS = frozenset({PYTORCH_XLA})

ADVICE = {
    JAX: [
        "Do not convert device values to Python inside the step (float(loss), np.asarray, .item(), "
        "print): keep metrics as jax.Arrays and read them every N steps or after the loop.",
        "If a value is needed on the host, start the copy early with x.copy_to_host_async() and read it "
        "one step later.",
        "Use jax.debug.print / jax.debug.callback for debugging instead of host reads.",
    ],
    PYTORCH_XLA: [
        "Avoid loss.item(), tensor.cpu(), print(tensor) and Python control flow on tensor values inside "
        "the step; they force a graph cut and a device-to-host transfer (aten::_local_scalar_dense).",
        "Log with torch_xla's xm.add_step_closure so reads happen after the step is dispatched, and only "
        "every N steps.",
    ],
    TENSORFLOW: [
        "Avoid .numpy() and Python conditions on tensors inside the training step; log through "
        "Keras callbacks every N steps.",
    ],
    PYTORCH: [
        "Avoid loss.item(), tensor.cpu(), print(tensor) and torch.cuda.synchronize() inside the step: each "
        "blocks the Python thread until the GPU drains its queue (cudaStreamSynchronize / aten::item).",
        "Accumulate metrics on the GPU and read them every N steps; use non_blocking=True copies to pinned "
        "memory when a value must reach the host.",
    ],
    "": ["Read device results on the host only every N steps, or asynchronously."],
}


def run(ctx: Context) -> RuleOutcome:
    which, index, starts, ends = flat_events(ctx.syncs)
    if len(starts) == 0:
        return RuleOutcome([], "no blocking device-to-host reads on host threads")
    tracks = [t for t, _ in ctx.syncs]
    idle_after = _idle_after(ctx, ends)
    p0, p1 = ctx.periods
    n_steps = len(p0)
    if n_steps:
        pos = np.searchsorted(p0, starts, side="right") - 1
        in_step = (pos >= 0) & (starts < p1[-1])
        per_step = np.bincount(pos[in_step], minlength=n_steps)
        syncs_in_steps = int(in_step.sum())
        rate = syncs_in_steps / n_steps
        step_time = int((p1 - p0).sum())
    else:
        in_step = np.zeros(len(starts), bool)
        per_step = np.zeros(0, np.int64)
        syncs_in_steps, rate, step_time = 0, 0.0, 0
    impact = _impact(
        ctx, starts[in_step], ends[in_step], idle_after[in_step] if idle_after is not None else None
    )
    severity = IMPACT_THRESHOLDS.severity(impact)
    sync_ps = int((ends - starts).sum())
    idle_ps = int(idle_after.sum()) if idle_after is not None else None
    name_ids = order_statistics.sorted_distinct(np.concatenate([t.name_id[idx] for t, idx in ctx.syncs]))
    names = sorted(ctx.trace.strings[int(n)] for n in name_ids)
    metrics = {
        "syncs": len(starts),
        "syncs_in_steps": syncs_in_steps,
        "steps": n_steps,
        "syncs_per_step": round(rate, 3),
        "steps_with_sync": int((per_step > 0).sum()),
        "host_blocked_ms": ms(sync_ps),
        "event_names": names,
    }
    if idle_after is not None and idle_ps is not None:
        metrics["device_idle_after_ms"] = ms(idle_ps)
        metrics["median_device_idle_after_ms"] = ms(float(order_statistics.median(idle_after)))
        if step_time and impact is not None:  # once where idle spans overlap, inside the steps only
            metrics["device_idle_after_percent_of_step_time"] = impact.percent_of_step_time
    if n_steps:
        explanation = (
            f"The host blocked on {len(starts)} device-to-host read(s) ({', '.join(names)}), "
            f"{ms(sync_ps)} ms in total; {syncs_in_steps} of them inside the {n_steps} steps "
            f"({rate:.2f} per step)."
        )
    else:
        explanation = f"The host blocked on {len(starts)} device-to-host read(s) ({', '.join(names)})."
    if idle_ps is not None:
        explanation += (
            f" After each read the device sat idle for {metrics['median_device_idle_after_ms']} ms "
            f"(median; {ms(idle_ps)} ms in total) until the host dispatched more work."
        )
    explanation += " Each read drains the device queue, so the host can no longer run ahead of the device."
    if severity > Severity.INFO and impact is not None:
        title = (
            f"Host-device sync in the step loop: {impact.percent_of_step_time:.1f}% of step time lost "
            f"({rate:.2f} blocking reads per step)"
        )
    else:
        title = f"{len(starts)} blocking device-to-host read(s)"
    evidence = _evidence(ctx, tracks, which, index, ends, idle_after)
    advice = ctx.advice_for(ADVICE) if severity > Severity.INFO else []
    cost = f"costing {impact.percent_of_step_time:g}% of step time" if impact is not None else "cost unknown"
    checked = (
        f"{len(starts)} blocking device-to-host read(s), {syncs_in_steps} in {n_steps} steps "
        f"({rate:.2f} per step), {cost}; {IMPACT_THRESHOLDS.words()}"
    )
    finding = Finding(RULE_ID, severity, title, explanation, metrics, evidence, advice, impact)
    if impact is None:
        finding.impact_note = NO_STEPS_NOTE if not n_steps else "its cost cannot be measured: no device plane"
    return RuleOutcome([finding], checked)


def _impact(
    ctx: Context, starts: np.ndarray, ends: np.ndarray, idle_after: np.ndarray | None
) -> Impact | None:
    """The step time the in-step reads `starts`..`ends` cost: the device idle after each (once where
    the idle spans overlap), and for a lazy-graph framework the host's wait in the read as well."""
    lazy = ctx.framework.name in LAZY_GRAPH_FRAMEWORKS
    if idle_after is None and not lazy:
        return None
    span_start = starts if lazy else ends
    span_end = ends + (idle_after if idle_after is not None else 0)
    lost = intersect(merge_intervals(span_start, span_end), ctx.periods)
    if lazy:
        basis = (
            "the host waiting in the reads while the graph runs, then the device idle until the next dispatch"
        )
    else:
        basis = "device idle after the blocking reads until the host dispatched more work"
    return step_time_impact(ctx.periods, total(lost), basis)


def _idle_after(ctx: Context, ends: np.ndarray) -> np.ndarray | None:
    """Device idle time from each sync's end to the next device op (0 if the device was busy)."""
    if not ctx.devices:
        return None
    b0, b1 = ctx.device_busy
    if len(b0) == 0:
        return None
    j = np.searchsorted(b0, ends, side="right") - 1
    busy_now = (j >= 0) & (b1[np.maximum(j, 0)] > ends)
    nxt = j + 1
    has_next = nxt < len(b0)
    gap = np.where(has_next, b0[np.minimum(nxt, len(b0) - 1)] - ends, 0)
    gap = np.where(busy_now, 0, np.maximum(gap, 0)).astype(np.int64)
    # Idle time spent compiling is the recompilation rule's, not the sync's.
    compiling = window_total(intervals_of(ctx.compiles), ends, ends + gap)
    return np.maximum(gap - compiling, 0)


def _evidence(ctx, tracks, which, index, ends, idle_after) -> list[dict]:
    items = []
    order = np.arange(len(index))
    if idle_after is not None:
        order = np.argsort(-idle_after, kind="stable")
    for k in order[:MAX_EVIDENCE]:
        track = tracks[int(which[k])]
        i = int(index[k])
        items.append(event_evidence(f"blocking read: {track.event_name(i)}", track, i))
        if idle_after is not None and idle_after[k] > 0:
            a, b = int(ends[k]), int(ends[k] + idle_after[k])
            items.append(range_ev(f"device idle after the read ({ms(b - a)} ms)", a, b, track.plane.host))
    return largest_first(items, 2 * MAX_EVIDENCE)
