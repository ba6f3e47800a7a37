"""The hosts' clock offsets of a trace of several hosts, measured once, and the trace aligned by them.

`CLOCKS` (`tpuscope.analysis.pod.clocks`) is the estimate the `clock_offset` rule reports (from the
pod's host summaries, on every path). The app aligns the merged timeline when it loads a trace
(`align_clocks`): it measures the same per-host data before any analysis (each host's collective
instances, as the summaries hold them), shifts the hosts whose clock is visibly off, and hands the
estimate of the recorded times to the analysis of the shifted trace, so its diagnosis says what
`tpuscope diagnose` says.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpuscope.analysis.pod.clocks import (
    APPLIED_SHIFTS,
    CLOCKS,
    ClockEstimate,
    collective_ends,
    estimate_offsets,
)
from tpuscope.analysis.pod.collectives import CollectiveNames, device_collective_events
from tpuscope.model.clock_shift import shift_hosts
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
        with analysis.context_lock:
            per_host.append((host, host_collective_ends(analysis.context)))
    return estimate_offsets(per_host)


def align_clocks(trace: Trace) -> TraceAnalysis:
    """The analysis of `trace` with its visibly-off hosts moved onto the others' clock (in place:
    new start columns), knowing the estimate of the recorded times and the shifts applied."""
    from tpuscope.analysis.session import TraceAnalysis

    if len(trace.hosts) < 2:
        return TraceAnalysis(trace)
    estimate = measure_clocks(trace)
    shifts = estimate.offsets_ps()
    if not shifts:
        return TraceAnalysis(trace, known={CLOCKS: estimate, APPLIED_SHIFTS: {}})
    shift_hosts(trace, shifts)
    return TraceAnalysis(trace, known={CLOCKS: estimate, APPLIED_SHIFTS: shifts})
