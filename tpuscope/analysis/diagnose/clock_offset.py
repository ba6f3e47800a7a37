"""Rule `clock_offset`: a host's clock (or a device's) is visibly off, and by how much.

A host whose collectives lie wholly before or after the other hosts' instances of the same
collective, time after time, has a clock that is off: collectives synchronize, so on true time
they overlap (`tpuscope.analysis.pod.clocks` says how it is measured, from the pod's per-host
summaries, the same on every path). A device whose ops start before the host launches that
started them has a clock that is off its host's. Neither costs time, but both misplace events on
the merged timeline: a host can look late, or early, by the offset. The app aligns the merged
timeline by the offsets found (`tpuscope.model.clock_shift`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpuscope.analysis.diagnose.finding import STEP_TIME_BANDS, Finding, RuleOutcome, Severity, ms
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.pod.clocks import MIN_MATCHED_INSTANCES, ClockEstimate
from tpuscope.analysis.pod.results import CLOCKS, LAUNCH_SKEWS, POD
from tpuscope.model import order_statistics

RULE_ID = "clock_offset"
# Findings are info, whatever the offset (our heuristic): an offset costs no step time, and misleads
# none of the other rules, which compare hosts by their own durations (time in collectives per step,
# the parts of each step) and align steps by number, never by one host's times against another's.
# It misplaces events on the merged timeline only, which the app aligns. So it carries no impact.
IMPACT_THRESHOLDS = STEP_TIME_BANDS
NO_COST = (
    "costs no step time: the host's events sit {ms:g} ms off the others' on the merged timeline "
    "(the app aligns them)"
)
ADVICE = [
    "Keep the hosts' clocks in sync (chrony or NTP on every VM; Cloud TPU VMs sync to the metadata "
    "server's clock): an offset makes a host look late or early on the merged timeline.",
    "The app aligns the merged timeline by the offset measured here (View > Align Host Clocks).",
]


def run(ctx: Context) -> RuleOutcome:
    pod = ctx.get(POD)
    summaries = pod.summaries
    estimate = ctx.get(CLOCKS)  # of the recorded times, also where the app aligned them
    steps = [float(order_statistics.median(s.step_ps)) for s in summaries if len(s)]
    step_ps = float(order_statistics.median(steps)) if steps else 0.0
    findings = [_host_finding(estimate, h.host, step_ps, _evidence(summaries, h.host)) for h in estimate.off]
    devices = ctx.get(LAUNCH_SKEWS)  # of the recorded times, also where the app aligned them
    findings += [_device_finding(host, skew, step_ps) for host, skew in devices if skew.visibly_off]
    return RuleOutcome(findings, _checked(estimate, devices))


def _checked(estimate: ClockEstimate, devices) -> str:
    parts = []
    if estimate.hosts:
        matched = min(h.matched for h in estimate.hosts)
        parts.append(
            f"{len(estimate.off)} of {len(estimate.hosts)} hosts' collectives lie outside the others' "
            f"(>= {MIN_MATCHED_INSTANCES} shared instances; fewest shared: {matched})"
        )
    if devices:
        early = sum(1 for _, s in devices if s.visibly_off)
        parts.append(f"{early} of {len(devices)} devices start ops before their launches")
    return "; ".join(parts) or "one host and no launch flows: no clocks to compare"


def _evidence(summaries, host: str) -> list[dict[str, Any]]:
    """The off host's first step and another host's same step: on the recorded times they sit apart."""
    mine = next(s for s in summaries if s.host == host)
    other = next((s for s in summaries if s.host != host and len(s)), None)
    if not len(mine) or other is None:
        return []
    number = int(mine.step_number[0])
    found = [mine.step_evidence(0, f"{host}'s step {number}")]
    at = np.flatnonzero(other.step_number == number)
    if len(at):
        found.append(other.step_evidence(int(at[0]), f"{other.host}'s step {number}"))
    return found


def _host_finding(estimate: ClockEstimate, host: str, step_ps: float, evidence) -> Finding:
    clock = next(h for h in estimate.hosts if h.host == host)
    way = "ahead of" if clock.offset_ps > 0 else "behind"
    offset = ms(clock.offset_ps)
    title = f"{host}'s clock is {abs(offset):g} ms {way} {estimate.reference}"
    explanation = (
        f"In {clock.disjoint} of the {clock.matched} collective instances {host} shares with the other "
        f"hosts, its instance lies wholly {'after' if clock.offset_ps > 0 else 'before'} theirs, although "
        f"a collective holds every host until the last one arrives: its clock reads "
        f"{abs(offset):g} ms {'later' if clock.offset_ps > 0 else 'earlier'} than {estimate.reference} "
        f"(median of its instances' end minus the others' median end; spread {ms(clock.spread_ps):g} ms). "
        "Its events sit that far off the others' on the merged timeline; the app aligns them by it."
    )
    metrics: dict[str, Any] = {
        "host": host,
        "offset_ms": offset,
        "reference": estimate.reference,
        "matched_instances": clock.matched,
        "disjoint_instances": clock.disjoint,
        "spread_ms": ms(clock.spread_ps),
    }
    finding = _finding(title, explanation, metrics, clock.offset_ps, step_ps)
    finding.evidence = evidence
    return finding


def _device_finding(host: str, skew, step_ps: float) -> Finding:
    title = f"{host}: {skew.device}'s ops start up to {ms(skew.offset_ps):g} ms before their launches"
    explanation = (
        f"{skew.early} of the {skew.flows} ops launched onto {skew.device} start before the host event "
        f"that launched them, by up to {ms(skew.offset_ps):g} ms: the device's clock reads at least that "
        "much earlier than its host's. Its ops sit that far off the host's on the timeline."
    )
    metrics: dict[str, Any] = {
        "host": host,
        "device": skew.device,
        "offset_ms": -ms(skew.offset_ps),
        "launch_flows": skew.flows,
        "early_ops": skew.early,
    }
    return _finding(title, explanation, metrics, float(skew.offset_ps), step_ps)


def _finding(title: str, explanation: str, metrics: dict[str, Any], offset_ps: float, step_ps: float):
    if step_ps > 0:
        metrics["offset_percent_of_step"] = round(100.0 * abs(offset_ps) / step_ps, 1)
    note = NO_COST.format(ms=ms(abs(offset_ps)))
    return Finding(RULE_ID, Severity.INFO, title, explanation, metrics, [], list(ADVICE), None, note)
