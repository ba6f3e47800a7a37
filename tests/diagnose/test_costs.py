"""Every finding says what it costs, and only costly ones warn: held over every real profile here.

Each warning or critical finding carries an impact at or above its rule's warning level (the engine's
IMPACT_THRESHOLDS), and its severity is exactly what that impact gives; a finding without an impact
is info and says why. The healthy recordings, including PyTorch profiler traces with a logging
`.item()` per step, get no warning at all.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import require_shared_traces
from tests.paths import SAMPLES, SHARED_TRACES
from tpuscope.analysis.diagnose import Severity
from tpuscope.analysis.diagnose.engine import IMPACT_THRESHOLDS
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main

PROFILES = sorted(
    [
        *SHARED_TRACES.glob("*/*.xplane.pb"),
        *SHARED_TRACES.glob("kineto/*.json.gz"),
        *SAMPLES.glob("*.xplane.pb"),
    ]
)
# Real PyTorch profiler traces whose only host reads are a few logging `aten::item` calls per step
# (facebookresearch/HolisticTraceAnalysis test data): the reads cost the step well under 1%.
LOGGING_READS_ONLY = ("trace_filter__sampled_rank-0.json.gz", "trace_filter__sampled_rank-1.json.gz")


@pytest.fixture(scope="module")
def reports():
    require_shared_traces()
    return {path: TraceAnalysis(open_trace(path, use_cache=False)).report for path in PROFILES}


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_every_warning_costs_at_least_its_rules_level(reports, path):
    report = reports[path]
    assert report.rule_errors == {}
    for finding in report.findings:
        thresholds = IMPACT_THRESHOLDS[finding.id]
        if finding.impact is None:
            assert finding.severity == Severity.INFO, finding.title
            assert finding.impact_note, finding.title
            continue
        assert finding.impact.basis
        if finding.severity > Severity.INFO:
            assert finding.impact.percent >= thresholds.warning, (finding.title, finding.impact)
        if finding.severity == Severity.CRITICAL:
            assert finding.impact.percent >= thresholds.critical, (finding.title, finding.impact)


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_findings_sort_by_impact_within_severity(reports, path):
    findings = reports[path].findings
    for a, b in zip(findings, findings[1:], strict=False):
        assert a.severity >= b.severity
        if a.severity == b.severity and a.impact is not None and b.impact is not None:
            assert a.impact.percent >= b.impact.percent


@pytest.mark.parametrize("name", LOGGING_READS_ONLY)
def test_a_few_logging_reads_per_step_are_info_with_their_cost(reports, name):
    (report,) = [r for p, r in reports.items() if p.name == name]
    (sync,) = [f for f in report.findings if f.id == "host_device_sync"]
    assert sync.severity == Severity.INFO
    assert sync.impact is not None and sync.impact.percent_of_step_time < 1
    assert sync.metrics["syncs_per_step"] >= 1  # the count stays, as evidence


@pytest.mark.parametrize("name", LOGGING_READS_ONLY)
def test_one_rank_is_not_worded_as_a_pod(reports, name):
    (report,) = [r for p, r in reports.items() if p.name == name]
    (collective,) = [f for f in report.findings if f.id == "collective_bound"]
    text = collective.title + collective.explanation
    assert "this rank" in text
    assert "no host arrives" not in text.lower() and "between" not in text
    assert "mean over hosts" not in collective.impact.basis


def test_json_keeps_a_null_impact_and_says_why(capsys):
    require_shared_traces()
    path = SHARED_TRACES / "gpu" / "jax_mi300x_attention.xplane.pb"  # no steps in the profile
    assert main(["diagnose", str(path), "--json", "--no-cache"]) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    low = next(f for f in findings if f["id"] == "low_device_utilization")
    assert low["impact"] is None and low["severity"] == "info"
    assert "no steps" in low["impact_note"]


def test_every_rule_has_impact_levels_with_a_source():
    from tpuscope.analysis.diagnose.engine import RULES

    assert set(IMPACT_THRESHOLDS) == set(RULES)
    for thresholds in IMPACT_THRESHOLDS.values():
        assert 0 < thresholds.warning < thresholds.critical and thresholds.source
