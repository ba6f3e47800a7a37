"""`tpuscope diagnose` end to end: text, JSON shape, and --fail-on exit codes."""

from __future__ import annotations

import json

import pytest

from tests.conftest import PTXLA_TRACE, require_shared_traces
from tests.paths import SAMPLES
from tpuscope.cli import main


def test_json_shape_and_exit_zero_without_fail_on(recorded_paths, capsys):
    assert main(["diagnose", str(recorded_paths["recompile"]), "--json", "--no-cache"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["framework"] == "JAX"
    assert payload["steps"]["count"] == 12 and payload["steps"]["source"] == "host_step_annotation"
    first = payload["findings"][0]
    assert first["id"] == "recompilation" and first["severity"] in ("warning", "critical")
    assert {"id", "severity", "title", "impact", "metrics", "evidence", "advice"} <= set(first)
    impact = first["impact"]
    assert impact["percent_of_step_time"] >= 5 and impact["ms_per_step"] > 0 and impact["basis"]


@pytest.mark.parametrize(
    ("scenario", "fail_on", "code"),
    [
        ("healthy", "warning", 0),
        ("recompile", "warning", 1),
        ("host_sync", "warning", 0),
        ("input_bound", "critical", 1),
    ],
)
def test_fail_on_gates(recorded_paths, capsys, scenario, fail_on, code):
    assert main(["diagnose", str(recorded_paths[scenario]), "--fail-on", fail_on, "--no-cache"]) == code
    out = capsys.readouterr().out
    assert out.startswith("Framework: JAX")


def test_text_output_names_the_problem_and_the_advice(capsys):
    require_shared_traces()
    assert main(["diagnose", str(PTXLA_TRACE), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "Framework: PyTorch/XLA" in out
    # One loss.item() per step costs about 2% of step time: info, with its cost, and no advice.
    assert "[info]     15 blocking device-to-host read(s)" in out
    assert "Costs 2.3% of each step" in out


def test_bad_path_is_one_sentence_and_exit_2(tmp_path, capsys):
    assert main(["diagnose", str(tmp_path / "missing.xplane.pb"), "--fail-on", "warning"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.xplane.pb" in err


def test_no_problems_found_comes_with_what_was_checked(capsys):
    """A clean report lists every rule that ran and its numbers, text and JSON alike."""
    from tests.conftest import TF_TRACE
    from tpuscope.analysis.diagnose import RULES

    require_shared_traces()
    assert main(["diagnose", str(TF_TRACE), "--no-cache", "--fail-on", "warning"]) == 0
    out = capsys.readouterr().out
    assert "No problems found." in out
    head, checked = out.split(f"What was checked ({len(RULES)} rules):")
    rule_lines = [
        line.split()[0] for line in checked.splitlines() if line.startswith("  ") and line[2] != " "
    ]
    assert rule_lines == list(RULES)
    assert (
        "input_bound             no device activity; time in input events" in checked
        and "below 5%" in checked
    )
    assert main(["diagnose", str(TF_TRACE), "--no-cache", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [c["rule"] for c in payload["checked"]] == list(RULES)
    assert all(set(c) == {"rule", "summary"} for c in payload["checked"])


def test_a_costly_sync_warns_with_its_cost_and_the_advice(capsys):
    # Reads that cut the PyTorch/XLA graph and leave the device idle a fifth of each step.
    assert main(["diagnose", str(SAMPLES / "ptxla_cpu_fallback.xplane.pb"), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "[WARNING]  Host-device sync in the step loop: 19.5% of step time lost" in out
    assert "Costs 19.5% of each step" in out
    assert "xm.add_step_closure" in out  # PyTorch/XLA-specific advice
