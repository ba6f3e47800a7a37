"""Rule `host_callback`: the compiled step calls back into the host (prints, Python callbacks).

`jax.debug.print`, `jax.debug.callback`, `io_callback` and `pure_callback` compile to an op that
stops the device program, hands values to the host's Python, waits for it and resumes: one
device-host round trip per call, every step. They show as device ops named after the primitive
(`debug_print.1`, `io_callback.1` on XLA:CPU) or custom calls to the Python callback targets;
TensorFlow's `tf.print` runs as the host op `PrintV2`. XProf's smart suggestions flag debug
prints above 5% of the time.
"""

from __future__ import annotations

import re

import numpy as np

from tpuscope.analysis.diagnose.finding import (
    NO_STEPS_NOTE,
    STEP_TIME_BANDS,
    Finding,
    ImpactThresholds,
    RuleOutcome,
    ms,
    percent,
    step_time_impact,
)
from tpuscope.analysis.diagnose.op_evidence import EVIDENCE_PER_OP, lines_words, longest_op_events, op_source
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.facts.evidence import event_evidence, largest_first
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW
from tpuscope.model.vocabulary import EventClass

RULE_ID = "host_callback"
# XProf smart suggestions flag `debug_print` time at or above 5% (openxla/xprof
# xprof/convert/smart_suggestion/constants.h, the debug-print threshold).
DEBUG_PRINT_PERCENT = 5.0
IMPACT_THRESHOLDS = ImpactThresholds(
    DEBUG_PRINT_PERCENT,
    STEP_TIME_BANDS.critical,
    "XProf's debug-print suggestion (5%), critical from 20% (our heuristic)",
)
# Device ops of JAX's callback primitives (jax/_src/debugging.py, jax/_src/callback.py) and the custom
# call targets they lower to (jaxlib xla_python_*_callback / xla_ffi_python_*_callback). These are HLO
# instruction names, XLA's vocabulary in any format that carries HLO ops, so they stay here; the host
# ops that print are the reader's (EventClass.HOST_CALLBACK).
DEVICE_CALLBACK_OP = re.compile(
    r"^(debug_print|debug_callback|io_callback|pure_callback|callback)(\.\d+)?$"
    r"|xla_(ffi_)?python_(cpu|gpu|tpu)_callback"
)

ADVICE = {
    JAX: [
        "Remove jax.debug.print / jax.debug.callback from the step once debugging is done, or print "
        "every N steps outside the jitted function from returned values.",
        "For io_callback / pure_callback: move the host work out of the step (return the values and "
        "process them after the step), or batch it so the device calls back once per N steps.",
    ],
    TENSORFLOW: [
        "Remove tf.print from the tf.function step, or log from a Keras callback every N steps.",
    ],
    PYTORCH_XLA: [
        "Print or log from xm.add_step_closure every N steps, not from inside the traced step.",
    ],
    "": ["Take host callbacks and prints out of the compiled step, or call them every N steps."],
}


def run(ctx: Context) -> RuleOutcome:
    device_rows, device_ps, total_self = [], 0, 0
    evidence = []
    if ctx.devices:
        table = ctx.op_table
        total_self = table.total_self_ps
        names = table.names()
        device_rows = [r for r, name in enumerate(names) if DEVICE_CALLBACK_OP.search(name)]
        device_ps = int(table.self_ps[device_rows].sum()) if device_rows else 0
        for r in device_rows:
            evidence += longest_op_events(table, r, f"host callback: {names[r]}", EVIDENCE_PER_OP)
    host = ctx.host_events_of(EventClass.HOST_CALLBACK)
    host_count = sum(len(idx) for _, idx in host)
    host_ps = sum(int(t.duration_ps[idx].sum()) for t, idx in host)
    for track, idx in host:
        longest = idx[np.argsort(-track.duration_ps[idx], kind="stable")[:EVIDENCE_PER_OP]]
        evidence += [
            event_evidence(f"host print: {track.event_name(int(i))}", track, int(i)) for i in longest
        ]
    p0, p1 = ctx.periods
    step_ps = int((p1 - p0).sum())
    device_share = percent(device_ps, total_self)
    host_share = percent(host_ps, step_ps)
    share = max(device_share, host_share)
    checked = (
        f"{len(device_rows)} host-callback device op(s) ({device_share:g}% of device time), "
        f"{host_count} host print op(s) ({host_share:g}% of step time); a warning at {DEBUG_PRINT_PERCENT:g}%"
    )
    if not device_rows and not host_count:
        return RuleOutcome([], checked)
    table_names = ctx.op_table.names() if device_rows else []
    occurrences = [int(ctx.op_table.occurrences[r]) for r in device_rows]
    calls = sum(occurrences) + host_count
    ops = [table_names[r] for r in device_rows] + sorted({t.event_name(int(i[0])) for t, i in host})
    sources = [{"op": table_names[r], "source": op_source(ctx, r)} for r in device_rows]
    per_step = round(calls / len(p0), 2) if len(p0) else None
    devices = len(ctx.op_table.devices) if device_rows else 1
    impact = step_time_impact(
        ctx.periods,
        max(device_ps / max(devices, 1), host_ps),
        "device time stopped in host callbacks (per device), or host time in print ops if longer",
    )
    severity = IMPACT_THRESHOLDS.severity(impact)
    metrics = {
        "ops": ops,
        "op_sources": sources,  # the device ops' source lines ("" without one)
        "calls": calls,
        "calls_per_step": per_step,
        "device_callback_ms": ms(device_ps),
        "device_callback_percent_of_device_time": device_share,
        "host_print_ms": ms(host_ps),
        "host_print_percent_of_step_time": host_share,
    }
    rate = f" ({per_step} per step)" if per_step is not None else ""
    explanation = (
        f"The compiled program calls back into the host {calls} time(s){rate}: {', '.join(ops[:5])}"
        f"{lines_words([s['source'] for s in sources])}. "
        f"Each call stops the device program, runs Python on the host and waits for it: "
        f"{ms(device_ps)} ms of device time ({device_share}%)"
        + (f", and {ms(host_ps)} ms of host print ops ({host_share}% of step time)" if host_count else "")
        + f". XProf flags debug prints from {DEBUG_PRINT_PERCENT:g}% of the time."
    )
    title = f"Host callbacks in the step: {', '.join(ops[:3])} ({share:.1f}% of the time)"
    advice = ctx.advice_for(ADVICE)
    finding = Finding(RULE_ID, severity, title, explanation, metrics, largest_first(evidence), advice, impact)
    if impact is None:
        finding.impact_note = NO_STEPS_NOTE
    return RuleOutcome([finding], checked)
