"""The analysis of each host's planes alone, of a trace holding several hosts: made once per trace
and shared by what reads the hosts one at a time (the pod table's host summaries in
`tpuscope.analysis.session`, the per-host rules in `tpuscope.analysis.diagnose.engine`), as a pod's
files read one at a time are each analysed once (`tpuscope.analysis.pod_run`)."""

from __future__ import annotations

from typing import Any

from tpuscope.analysis.pod.summary import host_trace
from tpuscope.analysis.results import Result, ResultSource


def _host_analyses(analysis: Any) -> dict[str, ResultSource]:
    """host -> the analysis of `host_trace(trace, host)`, in the trace's host order (of the same kind
    as `analysis`, so the session module need not be imported here)."""
    return {host: type(analysis)(host_trace(analysis.trace, host)) for host in analysis.trace.hosts}


HOST_ANALYSES: Result[dict[str, ResultSource]] = Result("host_analyses", _host_analyses)
