"""`tpuscope comms` on real profiles: the TPU sample's all-reduce with its bytes, NCCL kernels named by
the collective that launched them, the JSON's numbers equal to the pod table's, one-sentence errors."""

from __future__ import annotations

import json

import pytest

from tests.comms.conftest import QUEUE, RANK0
from tests.conftest import SAMPLES, require_shared_traces
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main

TPU_SAMPLE = SAMPLES / "tpu_v6e_inference_4chip.xplane.pb"
# f32[5,1024,1024,256]: the sample's all-reduce (its HLO text), 4 bytes per element.
ALL_REDUCE_BYTES = 5 * 1024 * 1024 * 256 * 4


def _comms(capsys, *args) -> dict:
    assert main(["comms", *map(str, args), "--json", "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


def test_tpu_all_reduce_is_listed_with_its_bytes(capsys):
    payload = _comms(capsys, TPU_SAMPLE)
    row = next(r for r in payload["collectives"] if r["kind"] == "all-reduce")
    assert row["name"] == "all-reduce" and row["count"] == 12  # 3 per chip, as `ops` counts them
    assert row["bytes_per_op"] == ALL_REDUCE_BYTES and row["bytes"] == 12 * ALL_REDUCE_BYTES
    assert row["transport"] == "ICI"
    # replica_groups=[4,2]<=[2,4]T(1,0): 4 groups of 2 chips; nccl-tests' all-reduce factor 2(n-1)/n = 1.
    assert row["group_size"] == 2
    assert row["algbw_gbps"] == pytest.approx(ALL_REDUCE_BYTES * 12 / (row["time_us"] * 1e3), rel=1e-3)
    assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"], rel=1e-6)
    assert row["source"].endswith("host_offload_stress_test.py:38")
    assert row["exposed_us"] + row["overlapped_us"] == pytest.approx(row["time_us"], abs=0.01)
    assert payload["summary"]["hosts"] == 1


def test_nccl_kernels_take_the_kind_of_the_collective_that_launched_them(capsys):
    require_shared_traces()
    payload = _comms(capsys, QUEUE)
    kinds = {r["kind"] for r in payload["collectives"]}
    # Every collective of this job runs as an ncclKernel_SendRecv kernel; c10d's op says which it is.
    assert {"all-reduce", "all-to-all", "all-gather", "reduce-scatter"} <= kinds
    assert all(r["name"] == "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t" for r in payload["collectives"])
    by_kind = {r["kind"]: r for r in payload["collectives"]}
    assert by_kind["all-reduce"]["source"] == "c10d::allreduce_"
    # Rows add up to the kernels' own time (one stream: no two collectives run at once).
    trace = open_trace(QUEUE)
    nccl_us = sum(
        float(track.duration_ps[idx].sum()) / 1e6
        for device in TraceAnalysis(trace).devices
        for track, idx in device.events
        for idx in [idx[[track.event_name(int(k)).startswith("nccl") for k in idx]]]
    )
    assert sum(r["time_us"] for r in payload["collectives"]) == pytest.approx(nccl_us, abs=0.01)


def test_summary_per_host_and_per_step_are_the_pod_tables(capsys):
    require_shared_traces()
    payload = _comms(capsys, RANK0)
    pod = TraceAnalysis(open_trace(RANK0)).pod
    summary = payload["summary"]
    assert summary["communication_us"] == pytest.approx(pod.matrix("collective").sum() / 1e6, abs=0.01)
    assert summary["exposed_us"] == pytest.approx(pod.exposed_collective_matrix().sum() / 1e6, abs=0.01)
    assert summary["overlapped_us"] == pytest.approx(
        summary["communication_us"] - summary["exposed_us"], abs=0.01
    )
    assert summary["overlap_percent"] == pytest.approx(
        100 * summary["overlapped_us"] / summary["communication_us"], abs=0.01
    )
    (host,) = payload["per_host"]
    assert host["host"] == "rank 0" and host["exposed_us"] == summary["exposed_us"]
    assert [s["step"] for s in payload["per_step"]] == [int(n) for n in pod.step_number]
    assert sum(s["exposed_us"] for s in payload["per_step"]) == pytest.approx(summary["exposed_us"], abs=0.01)


def test_text_lists_the_most_exposed_op_first(capsys):
    require_shared_traces()
    assert main(["comms", str(QUEUE), "--no-cache"]) == 0
    out = capsys.readouterr().out
    payload = _comms(capsys, QUEUE)
    exposed = [r["exposed_us"] for r in payload["collectives"]]
    assert exposed == sorted(exposed, reverse=True)
    lines = [line for line in out.splitlines() if "ncclKernel_SendRecv" in line]
    assert len(lines) == len(payload["collectives"])
    assert payload["collectives"][0]["kind"] in lines[0] and "overlapped with compute" in out


def test_a_path_that_cannot_be_read_is_one_sentence(tmp_path, capsys):
    missing = tmp_path / "nothing.xplane.pb"
    assert main(["comms", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "nothing.xplane.pb" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_profile_without_collectives_says_so(capsys):
    assert main(["comms", str(SAMPLES / "jax_cpu_healthy.xplane.pb"), "--no-cache"]) == 0
    assert "No collectives" in capsys.readouterr().out
    payload = _comms(capsys, SAMPLES / "jax_cpu_healthy.xplane.pb")
    assert payload["collectives"] == [] and payload["summary"]["overlap_percent"] is None


def test_the_metrics_are_the_reports(capsys):
    require_shared_traces()
    payload = _comms(capsys, QUEUE)
    assert main(["metrics", str(QUEUE), "--json", "--no-cache"]) == 0
    metrics = {r["name"]: r for r in json.loads(capsys.readouterr().out)["metrics"]}
    summary = payload["summary"]
    assert metrics["communication_overlap"]["value"] == pytest.approx(summary["overlap_percent"], abs=0.005)
    assert metrics["exposed_communication_share"]["value"] == pytest.approx(
        summary["exposed_percent_of_step_time"], abs=0.005
    )
