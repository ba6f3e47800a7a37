"""What each Kineto record is, from its category, wherever its pid points (small hand-made traces
in the shapes the PyTorch profiler writes: pytorch/kineto libkineto/src/output_json.cpp)."""

from __future__ import annotations

import json

from tpuscope.analysis.device_ops import device_activity, find_devices
from tpuscope.analysis.memory.report import memory_report
from tpuscope.analysis.ops import op_breakdown
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.model.vocabulary import TrackKind

PS_PER_US = 1_000_000


def _write(tmp_path, events, **top) -> object:
    path = tmp_path / "run.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, **top}))
    return open_trace(path, use_cache=False)


def _labels(pid: int, label: str, name: str = "python") -> list[dict]:
    return [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}},
        {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": label}},
    ]


def _kernel(pid, tid, ts, dur, name="gemm_kernel", correlation=1, cat="kernel") -> dict:
    args = {"correlation": correlation, "stream": tid, "device": pid}
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _host(name, ts, dur, cat="cpu_op", pid=100, tid=100, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def test_python_frames_on_pid_0_make_no_phantom_gpu(tmp_path):
    trace = _write(
        tmp_path,
        _labels(100, "CPU") + _labels(0, "GPU 0") + _labels(1, "GPU 1") + [
            _host("threading.py(359): wait", 0, 5000, cat="python_function", pid=0, tid=0),
            _host("aten::mm", 10, 20),
            _host("cudaLaunchKernel", 12, 5, cat="cuda_runtime", correlation=7),
            _kernel(1, 7, 40, 10, correlation=7),
        ],
    )  # fmt: skip
    devices = find_devices(trace)
    assert [d.name for d in devices] == ["GPU 1"]
    assert device_activity(devices[0]).busy_ps == 10 * PS_PER_US
    pid_0 = [p for p in trace.planes if "pid 0" in p.name]
    assert len(pid_0) == 1 and not pid_0[0].is_device


def test_counter_ranges_are_counters_not_kernels(tmp_path):
    ranges = [_kernel(0, 7, 100 * k, 100, name=f"range {k}", cat="cuda_profiler_range") for k in range(3)]
    trace = _write(tmp_path, _labels(0, "GPU 0") + ranges + [_kernel(0, 7, 50, 4)])
    (device,) = find_devices(trace)
    assert device.op_count == 1
    counters = [t for t in trace.tracks() if t.kind == TrackKind.COUNTER]
    assert sum(len(t) for t in counters) == 3


def test_an_mtia_device_is_a_device(tmp_path):
    work = [_kernel(0, 3, 10 * k, 5, name="mtia_kernel", cat="mtia_ccp_events") for k in range(4)]
    trace = _write(tmp_path, _labels(0, "MTIA 0") + work)
    (device,) = find_devices(trace)
    assert (device.kind, device.name, device.op_count) == ("MTIA", "MTIA 0", 4)


def test_each_kernel_names_its_innermost_launching_op(tmp_path):
    trace = _write(
        tmp_path,
        _labels(100, "CPU") + _labels(0, "GPU 0") + [
            _host("aten::linear", 0, 100),
            _host("nn.Module: Linear_0", 1, 98, cat="python_function"),
            _host("aten::addmm", 2, 90),
            _host("cudaLaunchKernel", 5, 3, cat="cuda_runtime", correlation=11),
            _host("aten::relu", 100, 10),
            _host("cudaLaunchKernel", 101, 3, cat="cuda_runtime", correlation=12),
            _host("cudaLaunchKernel", 200, 3, cat="cuda_runtime", correlation=13),
            _kernel(0, 7, 20, 30, correlation=11),
            _kernel(0, 7, 120, 4, name="relu_kernel", correlation=12),
            _kernel(0, 7, 220, 2, name="orphan_kernel", correlation=13),
        ],
    )  # fmt: skip
    table = op_breakdown(trace, by="framework")
    ours = {name: int(t) / PS_PER_US for name, t in zip(table.names(), table.total_ps, strict=True)}
    assert ours == {"aten::addmm": 30.0, "aten::relu": 4.0, "(none)": 2.0}


def test_2021_string_tids_and_async_flows_bind(tmp_path):
    events = _labels(25738, "CPU") + _labels(0, "GPU 0") + [
        {"ph": "M", "name": "thread_name", "pid": 25738, "tid": "25738", "args": {"name": "thread 25738"}},
        _host("aten::conv2d", 0, 50, cat="Operator", pid=25738, tid="25738"),
        _host("cudaLaunchKernel", 10, 5, cat="Runtime", pid=25738, tid="25738", correlation=5),
        {"ph": "s", "id": 5, "pid": 25738, "tid": 25738, "ts": 10, "cat": "async", "name": "launch"},
        _kernel(0, "stream 7", 60, 8, name="conv_kernel", correlation=5, cat="Kernel"),
        {"ph": "f", "id": 5, "pid": 0, "tid": "stream 7", "ts": 60, "cat": "async", "name": "launch",
         "bp": "e"},
    ]  # fmt: skip
    trace = _write(tmp_path, events)
    assert trace.flows is not None and len(trace.flows.source_track) == 1
    host_threads = [t.name for t in trace.tracks() if t.kind == TrackKind.HOST_THREAD]
    assert host_threads == ["thread 25738"]
    table = op_breakdown(trace, by="framework")
    assert table.names() == ["aten::conv2d"]


def test_memory_records_are_allocator_events(tmp_path):
    def memory(ts, address, size, allocated, device=0, kind=1) -> dict:
        args = {"Device Type": kind, "Device Id": device, "Addr": address, "Bytes": size,
                "Total Allocated": allocated, "Total Reserved": 4 << 20}  # fmt: skip
        return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 100,
                "tid": 100, "ts": ts, "args": args}  # fmt: skip

    gpu_memory = 80 << 30
    trace = _write(
        tmp_path,
        _labels(100, "CPU") + _labels(0, "GPU 0") + [
            _kernel(0, 7, 0, 1000),
            _host("aten::empty", 15, 10),
            memory(10, 0x1000, 1 << 20, 1 << 20),
            memory(20, 0x2000, 2 << 20, 3 << 20),
            memory(30, 0x1000, -(1 << 20), 2 << 20),
            memory(40, 0x50, 64, 64, device=-1, kind=0),
        ],
        deviceProperties=[{"id": 0, "name": "GPU", "totalGlobalMem": gpu_memory}],
    )  # fmt: skip
    report = memory_report(trace)
    by_id = {a.id: a for a in report.allocators}
    assert set(by_id) == {"GPU_0", "CPU"}
    gpu = by_id["GPU_0"]
    assert gpu.peak_in_profile_bytes == 3 << 20 and gpu.capacity_bytes == gpu_memory
    assert [(a.address, a.op) for a in gpu.live_at_peak] == [(0x2000, "aten::empty"), (0x1000, "")]
    assert gpu.in_use.tolist() == [1 << 20, 3 << 20, 2 << 20]


def test_a_device_with_no_work_we_read_is_named(tmp_path):
    records = [_host("hpu graph", 10 * k, 5, cat="hpu_op", pid=0, tid=1) for k in range(3)]
    trace = _write(tmp_path, _labels(0, "HPU 0") + records)
    assert find_devices(trace) == []
    (sentence,) = [w for w in trace.warnings if "HPU 0" in w]
    assert "hpu_op" in sentence and "kernel" in sentence


def test_memory_kept_step_after_step_is_memory_growth(tmp_path):
    step_us, kept = 1000, 64 << 20
    events = _labels(100, "CPU") + _labels(0, "GPU 0")
    for step in range(6):
        start = step * step_us
        events += [
            _host(f"ProfilerStep#{step}", start, step_us - 10, cat="user_annotation"),
            _host("aten::empty", start + 10, 20),
            _kernel(0, 7, start + 100, 50),
        ]
        args = {"Device Type": 1, "Device Id": 0, "Addr": 0x1000 * (step + 1), "Bytes": kept,
                "Total Allocated": kept * (step + 1), "Total Reserved": kept * (step + 1)}  # fmt: skip
        events.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 100,
                       "tid": 100, "ts": start + 15, "args": args})  # fmt: skip
    trace = _write(tmp_path, events, deviceProperties=[{"id": 0, "name": "GPU", "totalGlobalMem": 80 << 30}])
    findings = TraceAnalysis(trace).report.findings
    assert [f.id for f in findings if f.id == "memory_growth"] == ["memory_growth"]
