"""All rules on every real profile in ../shared/traces: no crash, and defensible results."""

from __future__ import annotations

import json

import pytest

from tests.conftest import (
    ALL_SHARED_TRACES,
    GPU_TRACE,
    PTXLA_TRACE,
    TF_TRACE,
    TPU_TRACE,
)
from tpuscope.analysis.diagnose import Severity
from tpuscope.analysis.session import TraceAnalysis


@pytest.fixture(scope="module")
def reports(shared_traces):
    """path -> (Trace, its report once a test asked for it)."""
    return {path: (trace, None) for path, trace in shared_traces.items()}


def _report(reports, path):
    trace, report = reports[path]
    if report is None:
        report = TraceAnalysis(trace).report
        reports[path] = (trace, report)
    return report


def _one(report, rule_id):
    found = [f for f in report.findings if f.id == rule_id]
    assert len(found) == 1, [f.title for f in report.findings]
    return found[0]


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.parent.name)
def test_every_rule_runs_and_the_report_is_json(reports, path):
    report = _report(reports, path)
    assert report.rule_errors == {}
    payload = json.loads(json.dumps(report.to_json()))
    assert set(payload) >= {"framework", "steps", "findings"}
    for finding in payload["findings"]:
        assert set(finding) >= {"id", "severity", "title", "metrics", "evidence", "advice"}
        assert finding["severity"] in ("info", "warning", "critical")


def test_pytorch_xla_host_syncs_are_found_once_per_step(reports):
    report = _report(reports, PTXLA_TRACE)
    sync = _one(report, "host_device_sync")
    # One loss.item() per step costs the step about 2%: found and counted, but info.
    assert sync.severity == Severity.INFO
    assert sync.impact is not None and 1 < sync.impact.percent_of_step_time < 5
    assert sync.metrics["syncs"] == 15  # 15 PjRtComputationClient::TransferFromDevice (loss.item())
    assert sync.metrics["syncs_per_step"] == 1.0
    compiles = _one(report, "recompilation")
    assert compiles.metrics["compilations"] == 2  # 2 XLAGraphExecutor::Compile
    assert {"graph_hash" in d for f in compiles.metrics["functions"] for d in f["what_differed"]} == {True}
    assert "cpu_fallback" not in {f.id for f in report.findings}  # .item() is not a fallback


def test_tensorflow_prefetched_pipeline_is_not_input_bound(reports):
    report = _report(reports, TF_TRACE)
    assert report.steps.to_json()["count"] == 20
    # IteratorGetNext returns fast from a prefetched pipeline: no input-bound warning.
    assert "input_bound" not in {f.id for f in report.findings if f.severity >= Severity.WARNING}


def test_tpu_devices_wait_equally_so_no_straggler(reports):
    trace, _ = reports[TPU_TRACE]
    report = _report(reports, TPU_TRACE)
    assert len(report.steps) == 100
    assert "straggler" not in {f.id for f in report.findings}
    compiles = _one(report, "recompilation")
    assert compiles.severity == Severity.INFO
    compile_events = sum(len(idx) for _, idx in trace.events_named("backend_compile"))
    assert compiles.metrics["compilations"] == compile_events == 4


def test_eager_gpu_attention_has_low_utilization(reports):
    report = _report(reports, GPU_TRACE)
    low = _one(report, "low_device_utilization")
    # The profile has no steps: its idle time cannot be weighed against one, so it is info and says why.
    assert low.severity == Severity.INFO
    assert low.impact is None and "no steps" in low.impact_note
    assert low.metrics["max_duty_cycle_percent"] < 50
