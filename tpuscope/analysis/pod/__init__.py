"""Pods: one profile per host, analysed host by host and then compared across hosts.

`summarize_host` turns one host's planes into a small, picklable `HostSummary` (per-step arrays
and a few evidence items), so a pod's summaries can be computed one host at a time, or on other
machines, and only the summaries brought together. `analyze_pod` aligns the hosts' steps and
builds the host x step table (a trace's is `TraceAnalysis.pod`); `late` finds the host the others
wait for and measures how much of each step every host spends in collectives.
"""

from tpuscope.analysis.pod.analysis import PodAnalysis, analyze_pod
from tpuscope.analysis.pod.summary import HostSummary, host_trace, summarize_host

__all__ = [
    "HostSummary",
    "PodAnalysis",
    "analyze_pod",
    "host_trace",
    "summarize_host",
]
