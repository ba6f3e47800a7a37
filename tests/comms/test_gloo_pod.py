"""A real 4-process JAX run whose every step ends in a blocking all-reduce over gloo: nearly all of its
communication is exposed, on every host, the same read as one trace and host by host."""

from __future__ import annotations

import json

import pytest

from tpuscope.analysis.pod.comms_report import CommsReport
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main

HOSTS = ["worker0", "worker1", "worker2", "worker3"]
# XLA:CPU runs the gloo all-reduce inside its thunk while the device does nothing else: a blocking
# collective, so at most this share of it can overlap compute (our bound for "nearly all exposed").
MOST_OVERLAPPED_PERCENT = 5.0
# f32[1024,1024] and an f32[] scalar: the recording's HEAVY_SHAPE weights' gradient and the loss.
ALL_REDUCE_BYTES = 1024 * 1024 * 4 + 4


def _comms(capsys, *args) -> dict:
    assert main(["comms", *map(str, args), "--json", "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


def test_blocking_collectives_are_nearly_all_exposed(gloo_pod, capsys):
    payload = _comms(capsys, gloo_pod)
    summary = payload["summary"]
    assert summary["hosts"] == 4 and summary["steps"] > 0
    assert summary["communication_us"] > 0
    assert summary["overlap_percent"] <= MOST_OVERLAPPED_PERCENT
    assert [h["host"] for h in payload["per_host"]] == HOSTS
    for host in payload["per_host"]:
        assert host["exposed_us"] >= (1 - MOST_OVERLAPPED_PERCENT / 100) * host["communication_us"] > 0
    (row,) = [r for r in payload["collectives"] if r["kind"] == "all-reduce"]
    assert row["transport"] == "host" and row["count"] == 4 * summary["steps"]
    assert row["bytes_per_op"] == ALL_REDUCE_BYTES
    # replica_groups={}: every device of the program, the run's 4; nccl-tests' factor 2(n-1)/n = 1.5.
    assert row["group_size"] == 4
    # Both are rounded to 1e-3: busbw by up to 0.0005, 1.5 x the rounded algbw by up to 0.00075.
    assert row["busbw_gbps"] == pytest.approx(1.5 * row["algbw_gbps"], abs=1.25e-3 + 1e-9)
    assert row["source"].endswith("recordings.py:84") or "recordings.py" in row["source"]


def test_host_by_host_gives_the_same_answer_as_one_trace(gloo_pod, capsys):
    whole = _comms(capsys, gloo_pod)
    engine = _comms(capsys, gloo_pod, "--per-host", "--workers", "here")
    assert engine == whole


def test_comms_agrees_with_the_pod_table_and_names_who_waits_least(gloo_pod, capsys):
    payload = _comms(capsys, gloo_pod)
    pod = TraceAnalysis(open_trace(gloo_pod)).pod
    report = CommsReport.of(pod)
    for k, host in enumerate(payload["per_host"]):
        assert host["communication_us"] == pytest.approx(pod.matrix("collective")[k].sum() / 1e6, abs=0.01)
        assert host["exposed_us"] == pytest.approx(pod.exposed_collective_matrix()[k].sum() / 1e6, abs=0.01)
    least = min(payload["per_host"], key=lambda h: h["exposed_us"])["host"]
    assert payload["summary"]["waits_least"] == report.waits_least()
    assert report.waits_least() in HOSTS and least in HOSTS


def test_the_exposed_time_is_reported_once(gloo_pod, capsys):
    """Every host spends most of its step in the all-reduce: collective_bound reports it (its impact is
    the exposed time); exposed_communication, whose level is for accelerators, says why it does not
    report the same time again."""
    assert main(["diagnose", str(gloo_pod), "--json", "--no-cache"]) == 0
    report = json.loads(capsys.readouterr().out)
    ids = [f["id"] for f in report["findings"]]
    assert "collective_bound" in ids and "exposed_communication" not in ids
    (line,) = [c for c in report["checked"] if c["rule"] == "exposed_communication"]
    assert "not reported" in line["summary"] and "the devices are CPUs" in line["summary"]
