"""The BERT trace against TraceLens' own numbers for it (its regression CSVs, kept beside the trace).

TraceLens (AMD-AGI/TraceLens, TreePerf/gpu_event_analyser.py) counts GPU work as the `kernel`,
`gpu_memcpy` and `gpu_memset` records; the trace also holds Python-tracer frames on pid 0 / tid 0,
the pid Kineto labels "GPU 0", which are not GPU work.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from tests.kineto.conftest import BERT_REFERENCE, read_csv
from tpuscope.analysis.device_ops import device_activity, find_devices
from tpuscope.analysis.diagnose.finding import Severity
from tpuscope.analysis.ops import op_breakdown
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.model.vocabulary import Stat

US_PER_MS = 1000.0
PS_PER_US = 1e6
# TraceLens writes its figures from the trace's microseconds with three decimals (ns); float sums.
SAME_US = 0.002
# The bound on busy time (the union of GPU work).
BUSY_TOLERANCE_US = 2.0


def _timeline() -> dict[str, float]:
    return {
        row["type"]: float(row["time ms"]) * US_PER_MS
        for row in read_csv(BERT_REFERENCE / "gpu_timeline.csv")
    }


def test_one_gpu_busy_as_tracelens_says(bert_trace):
    devices = find_devices(bert_trace)
    assert [(d.kind, d.name) for d in devices] == [("GPU", "GPU 0")]
    busy_us = device_activity(devices[0]).busy_ps / PS_PER_US
    assert abs(busy_us - _timeline()["busy_time"]) <= BUSY_TOLERANCE_US


def test_python_frames_on_the_gpu_pid_are_no_device_ops(bert_trace):
    (device,) = find_devices(bert_trace)
    names = {t.event_name(int(i)) for t, idx in device.events for i in idx}
    assert not any(name.endswith((": wait", ": run", ": _bootstrap")) for name in names)
    assert device.op_count == 61  # 60 kernels and one copy, TraceLens' 60 kernel calls plus its memcpy


def test_framework_op_times_are_tracelens_direct_kernel_times(bert_trace):
    table = op_breakdown(bert_trace, by="framework")
    ours = {name: int(total) / PS_PER_US for name, total in zip(table.names(), table.total_ps, strict=True)}
    theirs = {
        r["name"]: float(r["total_direct_kernel_time_sum"])
        for r in read_csv(BERT_REFERENCE / "ops_summary.csv")
    }
    assert set(ours) == set(theirs)
    for name, expected in theirs.items():
        assert abs(ours[name] - expected) <= SAME_US, name


def test_each_kernel_has_tracelens_parent_op(bert_trace):
    (device,) = find_devices(bert_trace)
    ours: dict[tuple[str, str], list[float]] = defaultdict(list)
    strings = bert_trace.strings
    for track, idx in device.events:
        framework = track.stat_values(Stat.FRAMEWORK_OP, fill=0)
        assert framework is not None
        for i in idx.tolist():
            key = (strings[int(framework[i])], track.event_name(i))
            ours[key].append(int(track.duration_ps[i]) / PS_PER_US)
    for row in read_csv(BERT_REFERENCE / "kernel_summary.csv"):
        durations = ours.pop((row["Parent cpu_op"], row["Kernel name"]))
        assert len(durations) == int(row["Kernel duration (µs)_count"])
        assert abs(sum(durations) - float(row["Kernel duration (µs)_sum"])) <= SAME_US
    assert [key[1].startswith("Memcpy") for key in ours] == [True]  # the copy: not a kernel to TraceLens


def test_op_stack_ends_at_the_framework_op(bert_trace):
    (device,) = find_devices(bert_trace)
    strings = bert_trace.strings
    for track, _ in device.events:
        framework = track.stat_values(Stat.FRAMEWORK_OP, fill=0)
        scope = track.stat_values(Stat.NAME_SCOPE, fill=0)
        assert framework is not None and scope is not None
        for op, path in zip(framework.tolist(), scope.tolist(), strict=True):
            assert strings[int(path)].split("/")[-1] == strings[int(op)]
    paths = {
        strings[int(p)] for t, _ in device.events for p in np.unique(t.stat_values(Stat.NAME_SCOPE, fill=0))
    }
    # The model's structure around the ops: its nn.Module calls (without the profiler's step ranges).
    first_linear = "BertLMHeadModel_0/BertModel_0/BertEncoder_0/BertLayer_0/BertAttention_0"
    assert f"{first_linear}/BertSdpaSelfAttention_0/Linear_0/aten::linear/aten::addmm" in paths
    assert not any("ProfilerStep#" in p or "nn.Module: " in p for p in paths)


def test_low_utilization_is_critical(bert_trace):
    report = TraceAnalysis(bert_trace).report
    found = {f.id: f for f in report.findings}
    assert "low_device_utilization" in found
    assert found["low_device_utilization"].severity == Severity.CRITICAL
