"""Stragglers across the ranks of a PyTorch job: a folder of Kineto traces, one per rank, is a pod.

The real ranks: HTA's `trace_filter/sampled_rank-0/1` (facebookresearch/HolisticTraceAnalysis
tests/data), two of the 128 ranks of one NCCL job (`distributedInfo` rank 0 and 1, world size 128),
each with the same two `ProfilerStep`s (551, 552) and ten `ncclKernel_SendRecv` kernels. Two ranks
are too few for a straggler score (XProf's needs 3 hosts), so the four-rank sets are derived from
them, each change minimal and said here:

- `healthy`: ranks 0 and 1 as recorded, plus a copy of each as ranks 2 and 3 (only
  `distributedInfo.rank` changed): a job whose ranks behave as the recorded two;
- `late`: the same, but rank 3 arrives late at every collective: each of its NCCL kernels starts
  LATE_FRACTION of its duration later and ends when it did (the others' kernels are untouched,
  so they are the ones that waited for it).

Expected numbers are computed from the JSON records themselves, not from tpuscope.
"""

from __future__ import annotations

import gzip
import json
import shutil

import numpy as np
import pytest

from tests.conftest import SHARED_TRACES, require_shared_traces
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main

RANK_FILES = [SHARED_TRACES / "kineto" / f"trace_filter__sampled_rank-{r}.json.gz" for r in (0, 1)]
LATE_RANK = 3
LATE_FRACTION = 0.9  # of each NCCL kernel's duration, by which the late rank's kernel starts later
PS_PER_US = 1_000_000


def _records(path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def _write(payload: dict, path) -> None:
    path.write_bytes(gzip.compress(json.dumps(payload).encode()))


def _is_nccl_kernel(record: dict) -> bool:
    return record.get("ph") == "X" and record.get("cat") == "kernel" and record["name"].startswith("nccl")


def _derived_ranks(folder, late: bool):
    folder.mkdir()
    for rank in range(4):
        payload = _records(RANK_FILES[rank % 2])
        payload["distributedInfo"]["rank"] = rank
        if late and rank == LATE_RANK:
            for record in payload["traceEvents"]:
                if _is_nccl_kernel(record):
                    shift = LATE_FRACTION * record["dur"]
                    record["ts"] += shift
                    record["dur"] -= shift
        _write(payload, folder / f"rank-{rank}.json.gz")
    return folder


def _collective_ms_per_step(payload: dict) -> tuple[list[int], np.ndarray, np.ndarray]:
    """(step numbers, ms in NCCL kernels per step, step ms): the union of the kernels' intervals inside
    each step, a step lasting from its `ProfilerStep#N` start to the next one's (the last: its end)."""
    steps = sorted(
        (r["ts"], r["dur"], int(r["name"].split("#")[1]))
        for r in payload["traceEvents"]
        if r.get("ph") == "X" and r.get("cat") == "user_annotation" and r["name"].startswith("ProfilerStep#")
    )
    starts = [s for s, _, _ in steps]
    ends = starts[1:] + [steps[-1][0] + steps[-1][1]]
    kernels = sorted((r["ts"], r["ts"] + r["dur"]) for r in payload["traceEvents"] if _is_nccl_kernel(r))
    merged: list[list[float]] = []
    for start, end in kernels:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    per_step = [
        sum(max(0.0, min(end, e) - max(start, s)) for start, end in merged)
        for s, e in zip(starts, ends, strict=True)
    ]
    step_ms = (np.array(ends) - np.array(starts)) / 1e3
    return [n for _, _, n in steps], np.array(per_step) / 1e3, step_ms


def _merged(intervals: list[tuple[float, float]]) -> list[list[float]]:
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def _covered(merged: list[list[float]], s: float, e: float) -> float:
    return sum(max(0.0, min(end, e) - max(start, s)) for start, end in merged)


def _exposed_ms_per_step(payload: dict) -> np.ndarray:
    """Per step, ms in NCCL kernels while no compute kernel ran (copies and sets are not compute, as
    HTA counts them): the time a rank waited in collectives, from the records alone."""
    kernels = [r for r in payload["traceEvents"] if r.get("ph") == "X" and r.get("cat") == "kernel"]
    steps = sorted(
        (r["ts"], r["dur"])
        for r in payload["traceEvents"]
        if r.get("ph") == "X" and r.get("cat") == "user_annotation" and r["name"].startswith("ProfilerStep#")
    )
    starts = [s for s, _ in steps]
    ends = starts[1:] + [steps[-1][0] + steps[-1][1]]
    nccl = _merged([(r["ts"], r["ts"] + r["dur"]) for r in kernels if r["name"].startswith("nccl")])
    skip = ("nccl", "Memcpy", "Memset")  # not compute
    compute = _merged([(r["ts"], r["ts"] + r["dur"]) for r in kernels if not r["name"].startswith(skip)])
    # NCCL time overlapped by compute: the NCCL intervals cut to each compute interval.
    both = _merged([(max(a, c), min(b, d)) for a, b in nccl for c, d in compute if max(a, c) < min(b, d)])
    exposed = [_covered(nccl, s, e) - _covered(both, s, e) for s, e in zip(starts, ends, strict=True)]
    return np.array(exposed) / 1e3


@pytest.fixture(scope="module")
def real_ranks(tmp_path_factory):
    require_shared_traces()
    folder = tmp_path_factory.mktemp("kineto_ranks")
    for path in RANK_FILES:
        shutil.copy(path, folder / path.name)
    return folder


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    require_shared_traces()
    return _derived_ranks(tmp_path_factory.mktemp("ranks") / "healthy", late=False)


@pytest.fixture(scope="module")
def late(tmp_path_factory):
    require_shared_traces()
    return _derived_ranks(tmp_path_factory.mktemp("ranks") / "late", late=True)


def test_the_real_ranks_load_as_a_pod_with_their_nccl_time_per_step(real_ranks):
    trace = open_trace(real_ranks, use_cache=False)
    assert list(trace.hosts) == ["rank 0", "rank 1"]
    overview = TraceAnalysis(trace).overview
    pod = overview.pod
    assert pod is not None and pod.hosts == ["rank 0", "rank 1"]
    assert pod.alignment == "step number" and pod.step_number.tolist() == [551, 552]
    collective = pod.matrix("collective") / 1e9
    shares = {}
    for row, path in enumerate(RANK_FILES):
        numbers, expected, step_ms = _collective_ms_per_step(_records(path))
        assert numbers == [551, 552]
        assert collective[row] == pytest.approx(expected, abs=1e-6)
        assert pod.matrix("step")[row] / 1e9 == pytest.approx(step_ms, abs=1e-6)
        shares[pod.hosts[row]] = 100 * expected.sum() / step_ms.sum()
    # What is true of these two ranks: each spends 30.6-32.2% of its steps in NCCL kernels, over
    # XProf's collective-bound threshold (30%), and neither is consistently the last to arrive.
    assert min(shares.values()) >= 30.0
    report = TraceAnalysis(trace).report
    bound = [f for f in report.findings if f.id == "collective_bound"]
    assert len(bound) == 1
    assert bound[0].metrics["collective_percent_of_step_time"] == pytest.approx(shares, abs=0.06)
    # Two ranks are too few to name a straggler, and the rule says so.
    assert "straggler" not in {f.id for f in report.findings}
    checked = {c["rule"]: c["summary"] for c in report.checked}
    assert checked["straggler"].startswith("fewer than 3 hosts")


def test_ranks_that_behave_alike_have_no_straggler(healthy):
    report = TraceAnalysis(open_trace(healthy, use_cache=False)).report
    assert "straggler" not in {f.id for f in report.findings}
    checked = {c["rule"]: c["summary"] for c in report.checked}
    assert checked["straggler"].startswith("4 hosts over 2 steps aligned by step number")


def test_a_rank_late_at_every_collective_is_the_straggler(late):
    trace = open_trace(late, use_cache=False)
    found = [f for f in TraceAnalysis(trace).report.findings if f.id == "straggler"]
    assert len(found) == 1, [f.title for f in found]
    metrics = found[0].metrics
    assert metrics["straggler"] == f"rank {LATE_RANK}" and metrics["unit"] == "host"
    assert metrics["late_steps"] == metrics["steps"] == 2
    # How long the others waited, from the records: the others' median time waiting in NCCL kernels (no
    # compute kernel running) minus the late rank's.
    per_rank = [_exposed_ms_per_step(_records(p)) for p in sorted(late.glob("rank-*.json.gz"))]
    others = np.median([per_rank[r] for r in range(4) if r != LATE_RANK], axis=0)
    waited = np.maximum(others - per_rank[LATE_RANK], 0.0)
    assert metrics["wait_per_step_ms"] == pytest.approx(float(np.median(waited)), abs=1e-3)
    assert metrics["collective_ms_per_step"][f"rank {LATE_RANK}"] == pytest.approx(
        float(np.median(per_rank[LATE_RANK])), abs=1e-3
    )
    assert metrics["modified_z_score"] < -3.5
    assert "rank 3" in found[0].title and found[0].evidence[0]["host"] == f"rank {LATE_RANK}"


def test_host_by_host_gives_the_same_straggler(late, capsys):
    """`--per-host` summarizes each rank's file alone; the verdict is the in-process one."""
    verdicts = []
    for extra in ([], ["--per-host"]):
        main(["diagnose", str(late), "--json", "--no-cache", *extra])
        payload = json.loads(capsys.readouterr().out)
        verdicts.append([f["metrics"] for f in payload["findings"] if f["id"] == "straggler"])
    assert verdicts[0] and verdicts[0] == verdicts[1]


def test_overview_json_has_one_row_per_rank(real_ranks, capsys):
    assert main(["overview", str(real_ranks), "--json", "--no-cache"]) == 0
    pod = json.loads(capsys.readouterr().out)["pod"]
    assert pod["hosts"] == ["rank 0", "rank 1"] and pod["steps"] == [551, 552]
    for row, path in zip(pod["per_host"], RANK_FILES, strict=True):
        _, collective_ms, _ = _collective_ms_per_step(_records(path))
        assert row["collective_us"] == pytest.approx(1e3 * collective_ms.mean(), abs=1e-3)
