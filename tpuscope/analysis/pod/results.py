"""The pod results of a trace: its host x step table and the hosts' clocks, computed once per trace.

A trace of one host is summarized from its own facts; each host of several from an analysis of its
planes alone (`HOST_ANALYSES`, shared with the per-host rules), as a pod's files read one at a
time are (`tpuscope.analysis.pod_run`).
"""

from __future__ import annotations

from functools import partial

from tpuscope.analysis.facts.context import CONTEXT
from tpuscope.analysis.host_analyses import HOST_ANALYSES
from tpuscope.analysis.pod.analysis import PodAnalysis, analyze_pod
from tpuscope.analysis.pod.clocks import ClockEstimate, LaunchSkew, estimate_offsets
from tpuscope.analysis.pod.summary import summarize_host
from tpuscope.analysis.results import Result, ResultSource


def _pod(source: ResultSource) -> PodAnalysis:
    hosts = list(source.trace.hosts) or [""]
    if len(hosts) == 1:
        return analyze_pod([summarize_host(source.get(CONTEXT), hosts[0])])
    return analyze_pod(
        [
            one.reading_facts(partial(summarize_host, one.get(CONTEXT), host))
            for host, one in source.get(HOST_ANALYSES).items()
        ]
    )


POD: Result[PodAnalysis] = Result("pod", _pod, reads_facts=True)

# The estimate of the hosts' clocks the `clock_offset` rule reports, from the pod's host summaries
# (known already where the app aligned the trace when it loaded: `tpuscope.analysis.clock_alignment`).
CLOCKS: Result[ClockEstimate] = Result(
    "clocks", lambda a: estimate_offsets([(s.host, s.collective_ends) for s in a.get(POD).summaries])
)
# Each host's devices' ops against their launches (host, skew), from the pod's host summaries.
LAUNCH_SKEWS: Result[list[tuple[str, LaunchSkew]]] = Result(
    "launch_skews", lambda a: [(s.host, k) for s in a.get(POD).summaries for k in s.launch_skew]
)
