"""`tpuscope overview` on a recorded pod run: the per-host rows and the host x step table."""

from __future__ import annotations

import json

import numpy as np

from tests.pods import recordings
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.cli import main

LATE_HOST = f"worker{recordings.STRAGGLER}"


def test_json_has_one_row_per_host_and_a_host_by_step_table(pod_run, pod_trace, capsys):
    assert main(["overview", str(pod_run("straggler")), "--json", "--no-cache"]) == 0
    payload = json.loads(capsys.readouterr().out)
    pod = payload["pod"]
    hosts = [f"worker{i}" for i in range(recordings.PROCESSES)]
    assert pod["hosts"] == hosts and pod["alignment"] == "step number"
    assert pod["steps"] == list(range(recordings.STEPS))
    table = pod["per_host_step_us"]
    assert set(table) == {"step", "compute", "collective", "input", "compile", "host", "exposed_collective"}
    assert np.array(table["collective"]).shape == (recordings.PROCESSES, recordings.STEPS)
    expected = TraceAnalysis(pod_trace("straggler")).pod
    np.testing.assert_allclose(table["collective"], expected.matrix("collective") / 1e6, atol=1e-3)
    exposed = expected.exposed_collective_matrix() / 1e6
    np.testing.assert_allclose(table["exposed_collective"], exposed, atol=1e-3)
    rows = {r["host"]: r for r in pod["per_host"]}
    assert min(rows, key=lambda h: rows[h]["collective_us"]) == LATE_HOST
    assert max(rows, key=lambda h: rows[h]["input_us"]) == LATE_HOST
    assert all(r["busiest_op"] for r in rows.values())
    # The late host's own input-bound finding (its rules run on it alone, as --per-host does) and the
    # straggler are both critical, ordered by their cost.
    critical = [f for f in payload["findings"] if f["severity"] == "critical"]
    assert {f["id"] for f in critical} == {"straggler", "input_bound"}
    assert all(LATE_HOST in f["title"] for f in critical)


def test_text_lists_the_hosts_and_their_collective_time_per_step(pod_run, capsys):
    assert main(["overview", str(pod_run("straggler")), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert f"Hosts ({recordings.STEPS} steps aligned by step number" in out
    table = out.split("Time in collectives per step, ms:")[1].split("\n\n")[0].splitlines()
    assert table[1].split()[1:] == [str(n) for n in range(recordings.STEPS)]
    per_host = {line.split()[0]: [float(v) for v in line.split()[1:]] for line in table[2:]}
    assert set(per_host) == {f"worker{i}" for i in range(recordings.PROCESSES)}
    late = np.array(per_host.pop(LATE_HOST))
    assert (late < np.median(list(per_host.values()), axis=0)).mean() >= 0.5
    assert f"for {LATE_HOST}, which is loading data" in out


def test_single_host_json_has_a_one_row_table(capsys):
    from tests.conftest import TPU_TRACE, require_shared_traces

    require_shared_traces()
    assert main(["overview", str(TPU_TRACE), "--json", "--no-cache"]) == 0
    pod = json.loads(capsys.readouterr().out)["pod"]
    assert len(pod["hosts"]) == 1 and len(pod["per_host"]) == 1
    assert pod["per_host"][0]["collective_us"] == 0
