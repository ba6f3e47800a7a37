"""The pod rules stay silent where no host waits for another: every real shared profile, and
single-host JAX CPU recordings (one host: nothing to compare, no collectives)."""

from __future__ import annotations

import pytest

from tests.conftest import ALL_SHARED_TRACES
from tests.diagnose import recordings
from tpuscope.analysis.session import TraceAnalysis

POD_RULES = {"straggler", "collective_bound"}


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.parent.name)
def test_shared_profiles_get_no_pod_findings(shared_traces, path):
    report = TraceAnalysis(shared_traces[path]).report
    assert POD_RULES.isdisjoint(f.id for f in report.findings)
    checked = {c["rule"]: c["summary"] for c in report.checked}
    assert checked["straggler"] and checked["collective_bound"]


@pytest.mark.parametrize("scenario", recordings.SCENARIOS)
def test_single_host_recordings_get_no_pod_findings(recorded_trace, scenario):
    report = TraceAnalysis(recorded_trace(scenario)).report
    assert report.rule_errors == {}
    assert POD_RULES.isdisjoint(f.id for f in report.findings)
