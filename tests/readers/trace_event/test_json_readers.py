"""Trace-event JSON readers on real files: PyTorch profiler (Kineto) traces and the TSL JSON JAX writes."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import SHARED_TRACES
from tpuscope.analysis.device_ops import find_devices
from tpuscope.analysis.framework import PYTORCH, detect_framework
from tpuscope.analysis.ops import op_breakdown
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.analysis.steps import find_steps
from tpuscope.app.opener import open_trace
from tpuscope.errors import ProfileError
from tpuscope.model.vocabulary import TrackKind

KINETO = SHARED_TRACES / "kineto"
KINETO_TRACES = sorted(KINETO.glob("*.json.gz"))
AMD = KINETO / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"
A100 = KINETO / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
STEPS5 = KINETO / "negative_queue_length_values_check__rank0.json.gz"


def _records(path):
    return json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


@pytest.mark.parametrize("path", KINETO_TRACES, ids=lambda p: p.name[:30])
def test_events_are_the_complete_and_instant_records(path):
    records = _records(path)
    trace = open_trace(path, use_cache=False)
    assert trace.event_count == sum(r.get("ph") in ("X", "i", "I") for r in records)
    durations = sorted(round(r.get("dur", 0) * 1e6) for r in records if r.get("ph") == "X")
    ours = sorted(np.concatenate([t.duration_ps[t.duration_ps > 0] for t in trace.tracks()]).tolist())
    assert ours == [d for d in durations if d > 0]


def test_gpu_streams_are_device_ops_with_kernel_categories():
    trace = open_trace(A100, use_cache=False)
    records = _records(A100)
    kernels = sum(r.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") for r in records if r["ph"] == "X")
    devices = find_devices(trace)
    assert [d.kind for d in devices] == ["GPU"]
    assert devices[0].op_count == kernels
    assert trace.planes[[p.name for p in trace.planes].index("GPU 0")].device_type == "NVIDIA A100-PG509-200"
    names = set(op_breakdown(trace, by="category").names())
    assert {"gemm", "convolution", "memcpy HtoD"} <= names


def test_profiler_steps_syncs_launches_and_framework():
    trace = open_trace(STEPS5, use_cache=False)
    steps = find_steps(trace)
    expected = sorted(
        int(r["name"].split("#")[1]) for r in _records(STEPS5)
        if r.get("ph") == "X" and r.get("cat") == "user_annotation" and r["name"].startswith("ProfilerStep#")
    )  # fmt: skip
    assert steps.number.tolist() == expected and len(expected) == 5
    assert detect_framework(trace).name == PYTORCH
    ctx = TraceAnalysis(trace).context
    launch_names = {t.event_name(int(i)) for t, idx in ctx.launches for i in idx}
    assert "cudaLaunchKernel" in launch_names
    critical = TraceAnalysis(open_trace(A100, use_cache=False)).context
    sync_names = {t.event_name(int(i)) for t, idx in critical.syncs for i in idx}
    assert "cudaStreamSynchronize" in sync_names


def test_launch_to_kernel_flows_pair_the_ac2g_records():
    trace = open_trace(AMD, use_cache=False)
    records = _records(AMD)
    starts = {r["id"] for r in records if r.get("ph") == "s" and r.get("cat") == "ac2g"}
    ends = {r["id"] for r in records if r.get("ph") == "f" and r.get("cat") == "ac2g"}
    ac2g = trace.strings.id_of("ac2g")
    flows = trace.flows
    assert int((flows.category == ac2g).sum()) == len(starts & ends)
    tracks = trace.track_list()
    for k in np.flatnonzero(flows.category == ac2g):
        source, target = tracks[flows.source_track[k]], tracks[flows.target_track[k]]
        assert source.kind == TrackKind.HOST_THREAD and target.kind == TrackKind.DEVICE_OPS
        assert source.event_name(int(flows.source_event[k])).startswith(("hip", "cuda"))


def test_run_folder_with_both_files_loads_each_host_once_from_xplane(jax_run_folder):
    trace = open_trace(jax_run_folder, use_cache=False)
    assert all(s.name.endswith(".xplane.pb") for s in trace.sources)
    assert any("trace.json.gz was not loaded" in w for w in trace.warnings)
    alone = open_trace(next(jax_run_folder.glob("*.trace.json.gz")), use_cache=False)
    assert alone.event_count == trace.event_count
    assert len(find_steps(alone)) == len(find_steps(trace)) == 3
    assert detect_framework(alone).name == "JAX"


def test_info_json_counts_events_of_a_kineto_file():
    out = subprocess.run(
        [sys.executable, "-m", "tpuscope", "info", "--json", str(AMD)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout)["events"] == sum(r.get("ph") in ("X", "i") for r in _records(AMD))


@pytest.mark.parametrize(
    "content, cause",
    [
        (b"", "empty"),
        (b"   \n", "no JSON"),
        (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1', "cut short"),
        (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": "soon"}]}', "not a trace-event JSON"),
        (b'{"traceEvents": 3}', "not a trace-event JSON"),
        (b'{"hello": "world"}', "no trace events"),
        (b"[1, 2, 3]", "not a trace-event JSON"),
        (b"{not json", "not valid JSON"),
    ],
)
def test_bad_json_is_one_sentence(tmp_path, content, cause):
    path = tmp_path / "bad.pt.trace.json"
    path.write_bytes(content)
    with pytest.raises(ProfileError) as error:
        open_trace(path, use_cache=False)
    message = str(error.value)
    assert cause in message and "\n" not in message and str(path) in message
