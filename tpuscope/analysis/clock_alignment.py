"""The hosts' clock offsets of a trace of several hosts, measured once, and the trace aligned by them.

`CLOCKS` (`tpuscope.analysis.pod.clocks`) is the estimate the `clock_offset` rule reports (from the
pod's host summaries, on every path). The app aligns the merged timeline when it loads a trace
(`align_clocks`): it measures the same per-host data before any analysis (each host's collective
instances, as the summaries hold them), shifts the hosts whose clock is visibly off, and hands the
estimate of the recorded times to the analysis of the shifted trace, so its diagnosis says what
`tpuscope diagnose` says.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from tpuscope.analysis.pod.clocks import (
    APPLIED_SHIFTS,
    ClockEstimate,
    collective_ends,
    estimate_offsets,
    launch_skew,
)
from tpuscope.analysis.pod.collectives import CollectiveNames, device_collective_events
from tpuscope.analysis.pod.results import CLOCKS, LAUNCH_SKEWS
from tpuscope.model.clock_shift import shift_hosts, shift_planes
from tpuscope.model.trace import Trace

if TYPE_CHECKING:
    from tpuscope.analysis.facts.context import Context
    from tpuscope.analysis.session import TraceAnalysis


def host_collective_ends(ctx: Context):
    """One host's collective instances, as `summarize_host` keeps them (its first device that has any)."""
    names = CollectiveNames(ctx.trace.strings, ctx.trace.dialect)
    events = []
    for device in ctx.devices:
        events = device_collective_events(device, names)
        if events:
            break
    p0, p1 = ctx.periods
    return collective_ends(events, ctx.steps.number, p0, p1)


def measure_clocks(trace: Trace) -> ClockEstimate:
    """The estimate of `trace`'s hosts' clocks, from each host's planes alone."""
    from tpuscope.analysis.pod.summary import host_trace
    from tpuscope.analysis.session import TraceAnalysis

    per_host = []
    for host in trace.hosts:
        analysis = TraceAnalysis(host_trace(trace, host))
        per_host.append((host, analysis.reading_facts(partial(host_collective_ends, analysis.context))))
    return estimate_offsets(per_host)


def align_clocks(trace: Trace) -> TraceAnalysis:
    """The analysis of `trace` with its visibly-off hosts moved onto the others' clock, and each
    device whose ops start before their launches moved after them (in place: new start columns),
    knowing the estimates of the recorded times and the shifts applied (labelled for the status bar)."""
    from tpuscope.analysis.pod.summary import host_trace
    from tpuscope.analysis.session import TraceAnalysis

    hosts = list(trace.hosts) or [""]
    estimate = measure_clocks(trace) if len(hosts) > 1 else ClockEstimate([], "")
    one = len(hosts) == 1
    skews = [(h, k) for h in hosts for k in launch_skew(trace if one else host_trace(trace, h))]
    shifts = estimate.offsets_ps()
    shift_hosts(trace, shifts)
    applied: dict[str, int] = dict(shifts)
    devices = []
    for host, skew in skews:
        plane = trace.find_plane(skew.device, host if host else None)
        if skew.visibly_off and plane is not None:
            devices.append((plane, skew.offset_ps))
            applied[skew.device if one else f"{host} {skew.device}"] = skew.offset_ps
    shift_planes(trace, devices)
    return TraceAnalysis(trace, known={CLOCKS: estimate, LAUNCH_SKEWS: skews, APPLIED_SHIFTS: applied})
