"""Rule `straggler`: one device (or host) makes the others wait at collectives and barriers.

With several devices, each one's time in synchronizing ops (all-reduce and other
collectives, `barrier-cores`) is compared: the device that waits least is the one the
others wait for. With three or more hosts, hosts are scored with XProf's modified z-score
on the same waiting share (research/integration.md 1.9).
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.diagnose.context import Context
from tpuscope.analysis.diagnose.finding import Finding, Severity, event_evidence, largest_first, ms, percent
from tpuscope.analysis.diagnose.stats import MODIFIED_Z_OUTLIER, modified_z
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW

RULE_ID = "straggler"
# xprof barrier_cores_rule.h: barrier time >= 10 % of each step flags multi-device synchronization waits
# (kSpecialOpBoundThresholdInPercent; research/integration.md 1.1). Used for the spread between the device
# that waits most and the one that waits least.
WAIT_SPREAD_PERCENT = 10.0
MIN_HOSTS_FOR_Z_SCORE = 3  # XProf needs at least 3 hosts for its host straggler score
# Collective and barrier op names/categories (research/integration.md 1.9).
SYNC_OP_PATTERN = (
    r"(?i)^%?(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|barrier-cores"
    r"|all-reduce-scatter)|^(nccl|rccl|ncclDevKernel|ncclKernel)"
)

ADVICE = {
    JAX: [
        "Check the straggler's host for extra work (input pipeline, logging, other processes) and its "
        "device for a different program or shapes.",
        "Balance per-device work: equal batch shards, no device-specific branches.",
    ],
    PYTORCH_XLA: ["Check the straggler's host for input pipeline or logging work the others do not do."],
    TENSORFLOW: ["Check the straggler's host for input pipeline or logging work the others do not do."],
    "": ["Find what the straggler does that the others do not (input, logging, uneven shards)."],
}


def run(ctx: Context) -> list[Finding]:
    devices = [d for d in ctx.devices if d.kind != "CPU"]
    if len(devices) < 2:
        return []
    ids = ctx.trace.strings.ids_matching(SYNC_OP_PATTERN, regex=True, ignore_case=False)
    waits, events = [], []
    for device in devices:
        tracks = device.tracks + [t for t in device.plane.tracks if t.name == "XLA TraceMe"]
        found = ctx.trace.events_with_name_ids(ids, tracks)
        waits.append(float(sum(int(t.duration_ps[idx].sum()) for t, idx in found)))
        events.append(found)
    waits_arr = np.array(waits)
    p0, p1 = ctx.periods
    step_ps = float((p1 - p0).sum()) if len(p0) else float(ctx.trace.duration_ps)
    spread = percent(waits_arr.max() - waits_arr.min(), step_ps)
    findings = []
    if waits_arr.max() > 0 and spread >= WAIT_SPREAD_PERCENT:
        k = int(np.argmin(waits_arr))
        findings.append(_finding(ctx, devices, waits_arr, k, spread, events))
    findings.extend(_host_stragglers(ctx, devices, waits_arr, step_ps))
    return findings


def _finding(ctx, devices, waits, k, spread, events) -> Finding:
    slow = devices[k]
    waiting = {d.label: ms(w) for d, w in zip(devices, waits, strict=True)}
    metrics = {
        "straggler": slow.label,
        "sync_wait_ms": waiting,
        "wait_spread_percent_of_step_time": spread,
    }
    title = f"Straggler: {slow.label} makes the other devices wait ({spread:.1f}% of step time)"
    explanation = (
        f"The devices spend different amounts of time in collectives and barriers: from {ms(waits.min())} ms "
        f"({slow.label}) to {ms(waits.max())} ms. The device that waits least is the last to arrive, so the "
        f"others wait for it; the spread is {spread:.1f}% of step time (XProf flags barrier waits >= "
        f"{WAIT_SPREAD_PERCENT:g}%)."
    )
    most = int(np.argmax(waits))
    items = [
        event_evidence("waiting in collective/barrier", t, int(i))
        for t, idx in events[most]
        for i in idx[:50]
    ]
    return Finding(
        RULE_ID, Severity.WARNING, title, explanation, metrics, largest_first(items), ctx.advice_for(ADVICE)
    )


def _host_stragglers(ctx, devices, waits, step_ps) -> list[Finding]:
    hosts = sorted({d.host for d in devices})
    if len(hosts) < MIN_HOSTS_FOR_Z_SCORE:
        return []
    per_host = np.array([waits[[d.host == h for d in devices]].mean() for h in hosts]) / 1e9
    z = modified_z(per_host)
    # A straggler host waits much *less* than the others (they wait for it).
    flagged = np.flatnonzero(-z > MODIFIED_Z_OUTLIER)
    findings = []
    for k in flagged:
        metrics = {
            "host": hosts[k],
            "sync_wait_ms_per_device": dict(zip(hosts, per_host.round(3), strict=True)),
        }
        title = f"Straggler host: {hosts[k]} makes the other hosts wait"
        explanation = (
            f"Host {hosts[k]}'s devices wait far less in collectives than the other hosts' (modified z-score "
            f"{z[k]:.1f}, XProf's bar is {MODIFIED_Z_OUTLIER:g}): the others wait for it."
        )
        findings.append(
            Finding(RULE_ID, Severity.WARNING, title, explanation, metrics, [], ctx.advice_for(ADVICE))
        )
    return findings
