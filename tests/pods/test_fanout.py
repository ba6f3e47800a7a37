"""Pods analysed host by host (bounded memory) and on Dask workers give the one-trace answer.

Real 4-process JAX CPU runs (tests/pods/recordings.py): the host-by-host pod table equals the one
the whole run loaded as one trace gives, and a local Dask cluster of 2 worker processes returns
exactly what the in-process, one-host-at-a-time path returns.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.pods import recordings
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.per_host import analyze_hosts
from tpuscope.readers.files import resolve_profile_files

LATE_HOST = f"worker{recordings.STRAGGLER}"


def _files(run):
    return [str(f) for f in resolve_profile_files(run)]


def test_host_by_host_equals_the_run_loaded_as_one_trace(pod_run, pod_trace):
    run = analyze_hosts(_files(pod_run("straggler")))
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


def test_dask_workers_return_exactly_the_in_process_answer(pod_run):
    distributed = pytest.importorskip("distributed")
    assert distributed
    files = _files(pod_run("straggler"))
    here = analyze_hosts(files)
    there = analyze_hosts(files, workers=2)
    assert json.dumps(there.diagnose_json(), sort_keys=True, default=str) == json.dumps(
        here.diagnose_json(), sort_keys=True, default=str
    )
    assert there.op_rows() == here.op_rows()
    assert there.pod.to_json() == here.pod.to_json()


def test_op_rows_add_up_the_hosts(pod_run, pod_trace):
    run = analyze_hosts(_files(pod_run("balanced")))
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
