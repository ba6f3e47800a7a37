"""Device ops and busy time: which events are device ops, and their union, on real profiles."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ALL_SHARED_TRACES, GPU_TRACE, PTXLA_TRACE, SAMPLES, TF_TRACE, TPU_TRACE
from tpuscope.analysis.device_ops import (
    Device,
    busy_coverage,
    busy_in_windows,
    busy_intervals,
    device_activity,
    find_devices,
    merge_intervals,
    select_devices,
)
from tpuscope.analysis.facts.intervals import window_total
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace


def _brute_busy(starts, ends, w0, w1, resolution=1):
    """Busy time by marking every picosecond slot: slow, obviously right, for small ranges."""
    covered = np.zeros(w1 - w0, dtype=bool)
    for s, e in zip(starts, ends, strict=True):
        lo, hi = max(s, w0), min(e, w1)
        if hi > lo:
            covered[lo - w0 : hi - w0] = True
    return int(covered.sum())


intervals = st.lists(st.tuples(st.integers(0, 300), st.integers(0, 60)), min_size=0, max_size=40).map(
    lambda pairs: (np.array([s for s, _ in pairs], np.int64), np.array([s + d for s, d in pairs], np.int64))
)


@settings(max_examples=200, deadline=None)
@given(intervals, st.integers(0, 380), st.integers(0, 380))
def test_busy_in_windows_matches_brute_force(pairs, a, b):
    starts, ends = pairs
    w0, w1 = min(a, b), max(a, b)
    merged = merge_intervals(starts, ends)
    assert np.all(merged[0][1:] > merged[1][:-1]), "merged intervals must be disjoint and sorted"
    got = busy_in_windows(*merged, np.array([w0]), np.array([w1]))[0]
    assert got == _brute_busy(starts, ends, w0, w1)


def test_tpu_devices_are_the_four_cores_and_their_xla_ops(tpu_trace):
    devices = find_devices(tpu_trace)
    assert [d.name for d in devices] == [f"/device:TPU:{i}" for i in range(4)]
    for device in devices:
        assert [t.name for t in device.tracks] == ["XLA Ops"]
        assert device.op_count == len(device.plane.track("XLA Ops"))


def test_tpu_busy_time_is_the_union_of_xla_ops(tpu_trace):
    device = find_devices(tpu_trace)[0]
    track = device.plane.track("XLA Ops")
    starts, ends = busy_intervals(device)
    # Every op lies inside one busy interval, and every busy interval starts with an op.
    k = np.searchsorted(starts, track.start_ps, side="right") - 1
    assert np.all(k >= 0) and np.all(track.end_ps <= ends[k])
    assert np.all(np.isin(starts, track.start_ps))
    activity = device_activity(device)
    assert activity.busy_ps == int((ends - starts).sum())
    # Ops at top level never overlap each other on one TPU core, so busy = their total duration.
    top = track.depth == 0
    assert activity.busy_ps == int(track.duration_ps[top].sum())
    assert 0 < activity.duty_cycle < 1


def test_gpu_devices_are_planes_with_kernel_streams():
    trace = open_trace(GPU_TRACE)
    devices = find_devices(trace)
    assert [d.name for d in devices] == ["/device:GPU:0"]  # GPUs 1-7 recorded nothing
    assert sorted(t.name for t in devices[0].tracks) == ["Stream #16(Kernel)", "Stream #17(Kernel)"]


def test_cpu_only_runs_use_thunk_events_on_host_threads(jax_cpu_trace):
    devices = find_devices(jax_cpu_trace)
    assert [d.kind for d in devices] == ["CPU"]
    for track, idx in devices[0].events:
        assert track.plane.name == "/host:CPU"
        ops = track.stat_values("hlo_op", fill=0)[idx]
        assert np.all(ops > 0)
        names = [track.event_name(i) for i in idx]
        assert names == [jax_cpu_trace.strings[int(o)] for o in ops]
    assert 0 < device_activity(devices[0]).duty_cycle <= 1


def test_pytorch_xla_cpu_thunks_are_found_and_tf_cpu_has_none():
    devices = find_devices(open_trace(PTXLA_TRACE))
    assert len(devices) == 1 and devices[0].op_count > 0
    threads = {t.name.split("/")[0] for t in devices[0].tracks}
    assert threads == {"tf_XLAEigen", "tf_XLAPjRtCpuClient"}
    # TensorFlow's own CPU kernels are not XLA thunks: no device ops.
    assert find_devices(open_trace(TF_TRACE)) == []


def test_select_devices(tpu_trace):
    devices = find_devices(tpu_trace)
    assert select_devices(devices, "all") == devices
    assert select_devices(devices, "2") == [devices[2]]
    assert select_devices(devices, 7) == []
    assert select_devices(devices, "tpu") == devices


def _busy_by_sort(device):
    """The union of every op interval of the device, merged after one argsort of them all."""
    starts = np.concatenate([t.start_ps[i] for t, i in device.events])
    ends = np.concatenate([t.start_ps[i] + t.duration_ps[i] for t, i in device.events])
    return merge_intervals(starts, ends)


@pytest.mark.parametrize(
    "path", [*ALL_SHARED_TRACES, *sorted(SAMPLES.glob("*.xplane.pb"))], ids=lambda p: p.name
)
def test_busy_intervals_are_the_sorted_union_of_the_ops(path):
    if not path.exists():
        pytest.skip("shared traces not present")
    trace = open_trace(path)
    devices = find_devices(trace)
    # Also a device whose op tracks nest and overlap (each host thread's every event): the union
    # then merges each track's set first.
    threads = [t for t in trace.host_tracks() if len(t) > 1]
    plane = threads[0].plane if threads else None
    nested = (
        [Device("threads", "CPU", "", plane, [(t, np.arange(len(t))) for t in threads])] if threads else []
    )
    for device in devices + nested:
        starts, ends = busy_intervals(device)
        expected = _busy_by_sort(device)
        assert starts.dtype == ends.dtype == np.int64
        np.testing.assert_array_equal(starts, expected[0])
        np.testing.assert_array_equal(ends, expected[1])
        assert not starts.flags.writeable and not ends.flags.writeable
    assert devices or nested


@pytest.mark.parametrize("path", [TPU_TRACE, PTXLA_TRACE, GPU_TRACE], ids=lambda p: p.name)
def test_busy_coverage_is_made_once_and_measures_the_busy_intervals(path):
    if not path.exists():
        pytest.skip("shared traces not present")
    ctx = TraceAnalysis(open_trace(path)).context
    starts, ends = ctx.device_busy
    edges = np.linspace(starts[0] - 10, ends[-1] + 10, 40).astype(np.int64)
    assert np.array_equal(
        ctx.device_busy_coverage(edges[:-1], edges[1:]), window_total(ctx.device_busy, edges[:-1], edges[1:])
    )
    for device in ctx.devices:
        measure = busy_coverage(device)
        assert busy_coverage(device) is measure  # made once, kept with the busy intervals
        busy = busy_intervals(device)
        got = measure(edges[:-1], edges[1:])
        assert got.dtype == np.int64 and np.array_equal(got, window_total(busy, edges[:-1], edges[1:]))
        assert got.sum() == int((busy[1] - busy[0]).sum())
        again = pickle.loads(pickle.dumps(device))  # a device keeping its busy time still pickles
        assert np.array_equal(busy_coverage(again)(edges[:-1], edges[1:]), got)
    assert (ctx.device_busy_coverage is busy_coverage(ctx.devices[0])) == (len(ctx.devices) == 1)
