"""Pods analysed host by host (bounded memory), on worker processes and on Dask give the one-trace answer.

Real 4-process JAX CPU runs (tests/pods/recordings.py): the host-by-host pod table equals the one
the whole run loaded as one trace gives; local worker processes and a real local Dask cluster of 2
worker processes return exactly what the in-process, one-host-at-a-time path returns; and the light
pass (`overview`, the pod page's first picture) gives the full pass's pod table and pod findings.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from tests.pods import recordings
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.hosts import LIGHT, analyze_run
from tpuscope.readers.files import resolve_profile_files

LATE_HOST = f"worker{recordings.STRAGGLER}"


def _files(run):
    return [str(f) for f in resolve_profile_files(run)]


def test_host_by_host_equals_the_run_loaded_as_one_trace(pod_run, pod_trace):
    run = analyze_run(_files(pod_run("straggler")), where="here", use_cache=False)
    whole = TraceAnalysis(pod_trace("straggler")).pod
    assert run.pod.hosts == whole.hosts
    assert run.pod.alignment == whole.alignment
    np.testing.assert_array_equal(run.pod.step_number, whole.step_number)
    np.testing.assert_array_equal(run.pod.start_matrix(), whole.start_matrix())
    for part in ("step", "compute", "collective", "input", "compile", "host"):
        np.testing.assert_allclose(run.pod.matrix(part), whole.matrix(part), rtol=1e-9, atol=1.0)
    straggler = [f for f in run.findings() if f["id"] == "straggler"]
    assert len(straggler) == 1 and straggler[0]["metrics"]["straggler"] == LATE_HOST
    assert not [f for f in run.findings() if f["id"] == "collective_bound"]


def test_worker_processes_and_dask_return_exactly_the_in_process_answer(pod_run, dask_scheduler):
    files = _files(pod_run("straggler"))
    here = analyze_run(files, where="here", use_cache=False)
    for where in ["2", *([dask_scheduler] if dask_scheduler else [])]:
        there = analyze_run(files, where=where, use_cache=False)
        assert json.dumps(there.diagnose_json(), sort_keys=True, default=str) == json.dumps(
            here.diagnose_json(), sort_keys=True, default=str
        ), where
        assert there.op_rows() == here.op_rows()
        assert there.pod.to_json() == here.pod.to_json()


def test_the_light_pass_gives_the_full_pass_pod_table_and_pod_findings(pod_run):
    files = _files(pod_run("straggler"))
    full = analyze_run(files, where="here", use_cache=False)
    light = analyze_run(files, LIGHT, where="here", use_cache=False)
    assert light.pod.to_json() == full.pod.to_json()
    assert light.findings() == full.pod_findings
    assert [f["metrics"]["straggler"] for f in light.findings() if f["id"] == "straggler"] == [LATE_HOST]
    assert all(not h.report.get("findings") and h.op_rows == [] for h in light.hosts)


def test_op_rows_add_up_the_hosts(pod_run, pod_trace):
    run = analyze_run(_files(pod_run("balanced")), use_cache=False)
    rows = run.op_rows()
    per_host = [h.op_rows for h in run.hosts]
    total = sum(r["occurrences"] for rows_ in per_host for r in rows_)
    assert sum(r["occurrences"] for r in rows) == total
    assert rows == sorted(rows, key=lambda r: -r["self_time_us"])
    assert abs(sum(r["percent"] for r in rows) - 100.0) < 1e-6


def test_the_cli_analyses_host_by_host_on_request(pod_run):
    run = pod_run("straggler")
    result = subprocess.run(
        [sys.executable, "-m", "tpuscope", "diagnose", str(run), "--per-host", "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["analysed"] == "host by host"
    assert [f["metrics"]["straggler"] for f in report["findings"] if f["id"] == "straggler"] == [LATE_HOST]


def test_the_cli_overview_of_a_pod_is_the_light_pass(pod_run):
    """`overview --per-host` shows what the pod page shows first: every host's row and the pod rules'
    findings, the numbers of the full pass (`diagnose --per-host` finds the same straggler)."""
    run = pod_run("straggler")
    result = subprocess.run(
        [sys.executable, "-m", "tpuscope", "overview", str(run), "--per-host", "--json", "--no-cache"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    full = analyze_run(_files(run), where="here", use_cache=False)
    assert payload["analysed"] == "host by host" and payload["hosts"] == [h.host for h in full.hosts]
    assert payload["pod"] == json.loads(json.dumps(full.pod.to_json()))
    assert payload["top_findings"] == json.loads(json.dumps(full.pod_findings[:5]))
    assert "top_ops" not in payload  # the light pass reads no op table: `tpuscope ops RUN` does
