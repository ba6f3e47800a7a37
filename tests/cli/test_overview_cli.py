"""`tpuscope overview` end to end on real profiles: text, JSON, and one-sentence errors (exit 2)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import GPU_TRACE, SAMPLES, TF_TRACE, TPU_TRACE, require_shared_traces
from tpuscope.analysis.ops import op_breakdown
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.analysis.steps import find_steps
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.model.units import format_duration

INPUT_BOUND_SAMPLE = SAMPLES / "jax_cpu_input_bound.xplane.pb"


def test_json_carries_the_summary(capsys):
    require_shared_traces()
    assert main(["overview", str(TPU_TRACE), "--json", "--no-cache", "--top", "3"]) == 0
    payload = json.loads(capsys.readouterr().out)
    trace = open_trace(TPU_TRACE)
    steps = find_steps(trace)
    assert payload["devices"]["kind"] == "TPU"
    assert payload["devices"]["count"] == len(trace.device_planes("TPU"))
    assert payload["hosts"] == trace.hosts
    assert payload["span_us"] == pytest.approx(trace.duration_ps / 1e6)
    assert payload["steps"]["count"] == len(steps) and payload["steps"]["source"] == steps.source
    assert len(payload["per_step"]) == len(steps)
    assert [r["name"] for r in payload["top_ops"]] == [r["name"] for r in op_breakdown(trace).rows_json(3)]
    assert [f["id"] for f in payload["findings"]] == [f.id for f in TraceAnalysis(trace).report.findings]
    assert 0 < payload["duty_cycle"] <= 1


def test_text_names_the_problem_and_the_numbers(capsys):
    assert main(["overview", str(INPUT_BOUND_SAMPLE), "--no-cache"]) == 0
    out = capsys.readouterr().out
    trace = open_trace(INPUT_BOUND_SAMPLE)
    report = TraceAnalysis(trace).report
    assert out.startswith("Profile:")
    assert f"Steps:       {len(find_steps(trace))} from host step annotations" in out
    assert f"Span:        {format_duration(trace.duration_ps)}" in out
    assert "waiting for input" in out
    assert f"[CRITICAL] {report.findings[0].title}" in out
    assert "Top ops by self time" in out


def test_profiles_without_steps_or_devices_say_so(capsys):
    require_shared_traces()
    assert main(["overview", str(GPU_TRACE), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "Steps:       none (" in out and "Step time:" not in out
    assert "(1 ran ops)" in out  # eight GPUs in the profile, one ran kernels
    assert main(["overview", str(TF_TRACE), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "Devices:     none recorded" in out
    assert "Duty cycle:  - (no device activity recorded)" in out
    assert "No device ops in this profile" in out


def test_missing_path_is_one_sentence_and_exit_2(tmp_path, capsys):
    assert main(["overview", str(tmp_path / "missing.xplane.pb")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.xplane.pb" in err


def test_garbage_file_is_one_sentence_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.xplane.pb"
    bad.write_bytes(b"\xff\x00 not a profile " * 50)
    assert main(["overview", str(bad), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.xplane.pb" in err and "Traceback" not in err


def test_top_must_be_positive(capsys):
    assert main(["overview", str(INPUT_BOUND_SAMPLE), "--top", "0"]) == 2
    assert "--top must be a positive number" in capsys.readouterr().err
