"""Op breakdown on real profiles: groupings, self time, roofline, steps, CLI output and errors."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import GPU_TRACE, PTXLA_TRACE, TF_TRACE, TPU_TRACE
from tpuscope.analysis.device_ops import busy_intervals, find_devices
from tpuscope.analysis.ops import (
    GROUPINGS,
    aggregate,
    collect_op_events,
    derived_category,
    op_breakdown,
    self_times,
    short_op_name,
)
from tpuscope.analysis.roofline import (
    BOUND_COMPUTE,
    BOUND_MEMORY,
    BOUND_UNKNOWN,
    CHIP_PEAKS,
    Peaks,
    bound_by,
    chip_of,
    device_peaks,
)
from tpuscope.analysis.step_breakdown import step_breakdown
from tpuscope.app.opener import open_trace
from tpuscope.cli import main


def _brute_self(starts, durations):
    """Self time by painting: each picosecond belongs to the innermost (latest-starting) open event."""
    n = len(starts)
    order = sorted(range(n), key=lambda i: (starts[i], -durations[i]))
    owner = {}
    for i in order:  # later (inner) events overwrite the slots of outer ones
        for t in range(starts[i], starts[i] + durations[i]):
            owner[t] = i
    out = [0] * n
    for i in owner.values():
        out[i] += 1
    return out


nested = st.recursive(
    st.just([]),
    lambda children: st.lists(st.tuples(st.integers(1, 5), st.integers(0, 6), children), max_size=3),
    max_leaves=12,
)


def _layout(tree, at=0):
    """Properly nested intervals from a tree of (gap, extra, children): parents enclose children."""
    starts, durations = [], []
    t = at
    for gap, extra, children in tree:
        t += gap
        child_starts, child_durations, child_end = _layout(children, t)
        end = max(child_end, t) + extra
        starts.append(t)
        durations.append(end - t)
        starts += child_starts
        durations += child_durations
        t = end
    return starts, durations, t


@settings(max_examples=150, deadline=None)
@given(nested)
def test_self_times_match_painting(tree):
    starts, durations, _ = _layout(tree)
    got = self_times(np.array(starts, np.int64), np.array(durations, np.int64))
    assert got.tolist() == _brute_self(starts, durations)
    # Any input order gives the same per-event answer (reversed: the sorting path is taken).
    backwards = self_times(np.array(starts[::-1], np.int64), np.array(durations[::-1], np.int64))
    assert backwards.tolist() == got.tolist()[::-1]


@pytest.mark.parametrize("by", GROUPINGS)
def test_every_grouping_accounts_for_every_op_event(tpu_trace, by):
    events = collect_op_events(tpu_trace)
    table = aggregate(events, by)
    assert table.occurrences.sum() == len(events) == sum(len(d.plane.track("XLA Ops")) for d in table.devices)
    assert table.total_ps.sum() == events.time_ps.sum()
    assert table.self_ps.sum() == events.self_ps.sum()
    assert np.all(np.diff(table.self_ps) <= 0), "rows are sorted by self time"
    assert table.cumulative_percent[-1] == pytest.approx(100.0)
    # Each row's events, as handed to the timeline, are exactly its occurrences.
    for row in range(len(table)):
        assert sum(len(idx) for _, idx in table.events_of_row(row)) == table.occurrences[row]


def test_tpu_op_time_is_the_device_clock_duration(tpu_trace):
    events = collect_op_events(tpu_trace)
    device_durations = np.concatenate(
        [t.stat_values("device_duration_ps")[idx] for t, idx, _ in events.segments]
    )
    assert np.array_equal(events.time_ps, device_durations.astype(np.int64))


def test_program_and_framework_groupings_read_the_profile(tpu_trace):
    programs = op_breakdown(tpu_trace, "all", "program")
    modules = tpu_trace.device_planes()[0].track("XLA Modules")
    module_names = {modules.event_name(i) for i in range(len(modules))}
    assert set(programs.names()) <= module_names
    framework = op_breakdown(tpu_trace, "0", "framework")
    assert "jit(f)/jit(main)/add" in framework.names()
    categories = op_breakdown(tpu_trace, "all", "category")
    hlo = {
        tpu_trace.strings[int(c)]
        for c in np.unique(tpu_trace.device_planes()[0].track("XLA Ops").stat_values("hlo_category", fill=0))
    }
    assert set(categories.names()) == hlo


def test_one_device_is_a_quarter_of_all_four(tpu_trace):
    one = op_breakdown(tpu_trace, 1, "op")
    every = op_breakdown(tpu_trace, "all", "op")
    assert one.occurrences.sum() == len(tpu_trace.device_planes()[1].track("XLA Ops"))
    assert every.occurrences.sum() == sum(len(p.track("XLA Ops")) for p in tpu_trace.device_planes())
    assert every.busy_ps == sum(int((e - s).sum()) for s, e in map(busy_intervals, find_devices(tpu_trace)))


def test_gpu_kernels_are_named_by_their_hlo_op_and_module():
    table = op_breakdown(open_trace(GPU_TRACE), "all", "op")
    rows = table.rows_json()
    named = {(r["name"], r["program"]) for r in rows}
    assert ("custom-call.1", "jit_matmul(19)") in named
    categories = {r["name"]: r["category"] for r in rows}
    assert categories["loop_convert_fusion"] == "loop fusion"
    # The driver's buffer copies have no HLO op: kept under their kernel name, as memcpy.
    assert categories["__amd_rocclr_copyBuffer.kd"] == "memcpy"
    framework = op_breakdown(open_trace(GPU_TRACE), "all", "framework")
    assert "jit(matmul)/dot_general" in framework.names()


def test_cpu_thunks_of_a_recorded_jax_profile(jax_cpu_trace):
    table = op_breakdown(jax_cpu_trace, "all", "op")
    assert len(table) > 0
    thunk_events = sum(len(idx) for _, idx in find_devices(jax_cpu_trace)[0].events)
    assert table.occurrences.sum() == thunk_events
    programs = op_breakdown(jax_cpu_trace, "all", "program").names()
    assert all(p.startswith("jit_train_step(") for p in programs)


def test_nested_cpu_thunks_have_self_time_below_total():
    table = op_breakdown(open_trace(PTXLA_TRACE), "all", "op")
    assert np.any(table.self_ps < table.total_ps)  # `call` thunks enclose other thunks
    assert np.all(table.self_ps <= table.total_ps)


def test_short_names_and_derived_categories():
    text = "%fusion.3 = f32[8]{0:T(128)} fusion(f32[8]{0} %p), kind=kLoop, calls=%fused"
    assert short_op_name(text) == "fusion.3"
    assert derived_category(text) == "fusion"
    tuple_text = "%copy-start = (f32[5]{0:T(8,128)}, u32[]{:S(2)}) copy-start(f32[5]{0} %x)"
    assert derived_category(tuple_text) == "copy-start"
    assert derived_category("dot.18") == "dot"
    assert derived_category("multiply_add_fusion.3.clone") == "fusion"
    assert derived_category("input_reduce_fusion") == "input fusion"
    assert derived_category("reduce-window.1") == "reduce-window"


def test_roofline_peaks_from_plane_stats_then_chip_table(tpu_trace):
    plane = tpu_trace.device_planes()[0]
    peaks = device_peaks(plane)
    assert peaks.source == "plane stats"
    assert peaks.teraflops_per_second == plane.stats["peak_teraflops_per_second"]
    assert chip_of(plane.device_type) == "v6e"
    assert [chip_of(s) for s in ("TPU v4", "TPU v5 lite", "TPU v5p", "TPU v7x", "NVIDIA H100", None)] == [
        "v4",
        "v5e",
        "v5p",
        "TPU7x",
        None,
        None,
    ]
    assert set(CHIP_PEAKS) == {"v4", "v5e", "v5p", "v6e", "TPU7x"}


def test_bound_by_uses_the_ridge_point():
    peaks = Peaks(100.0, 1000.0, "test")  # ridge = 100 FLOP/byte
    assert peaks.ridge_flops_per_byte == pytest.approx(100.0)
    flops = np.array([1e6, 1e3, np.nan, 0.0, 5.0])
    nbytes = np.array([1e3, 1e3, np.nan, 1e6, np.nan])
    assert bound_by(flops, nbytes, peaks).tolist() == [
        BOUND_COMPUTE,
        BOUND_MEMORY,
        BOUND_UNKNOWN,
        BOUND_MEMORY,
        BOUND_COMPUTE,
    ]
    assert bound_by(flops, nbytes, None).tolist() == [BOUND_UNKNOWN] * 5


def test_step_breakdown_on_tpu_program_steps(tpu_trace):
    breakdown = step_breakdown(tpu_trace)
    assert len(breakdown) > 0
    assert np.all(breakdown.busy_ps <= breakdown.duration_ps)
    assert np.allclose(breakdown.busy_ps + breakdown.idle_ps, breakdown.duration_ps)
    assert 0 < breakdown.duty_cycle < 1
    # Steps are executions of the main program, so the device is busy for almost all of each.
    assert breakdown.step_duty_cycle > 0.9


def test_step_breakdown_on_pytorch_xla_host_sync_steps():
    trace = open_trace(PTXLA_TRACE)
    breakdown = step_breakdown(trace)
    assert len(breakdown) == 15
    # Independent count: thunks of this run never overlap one another (their union equals their sum),
    # so a step's busy time is the sum of the thunk time clipped to the step.
    device = find_devices(trace)[0]
    starts, ends = busy_intervals(device)
    outer_starts = np.concatenate([t.start_ps[i] for t, i in device.events])
    outer_ends = np.concatenate([t.end_ps[i] for t, i in device.events])
    depth = np.concatenate([t.depth[i] for t, i in device.events])
    top = depth == depth.min()
    assert (ends - starts).sum() == (outer_ends[top] - outer_starts[top]).sum()
    for k in range(len(breakdown)):
        s0, s1 = breakdown.start_ps[k], breakdown.end_ps[k]
        clipped = np.clip(np.minimum(outer_ends[top], s1) - np.maximum(outer_starts[top], s0), 0, None)
        assert breakdown.busy_ps[k] == clipped.sum()
    # The run waits on the host every step (`loss.item()`): the CPU "device" is mostly idle.
    assert breakdown.idle_ps.sum() > breakdown.busy_ps.sum() > 0


def test_cli_csv_and_top(capsys):
    assert main(["ops", str(GPU_TRACE), "--by", "category", "--csv", "--top", "3"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 3
    assert rows[0]["name"] == "loop fusion"
    assert float(rows[0]["self_time_us"]) >= float(rows[1]["self_time_us"])


def test_cli_text_output(capsys):
    assert main(["ops", str(TPU_TRACE), "--top", "3", "--device", "2"]) == 0
    out = capsys.readouterr().out
    assert "/device:TPU:2" in out and "copy-done" in out and "plane stats" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ops", str(TF_TRACE)], "holds no device ops"),
        (["ops", str(TPU_TRACE), "--device", "7"], "matches no device"),
        (["ops", str(TPU_TRACE), "--top", "0"], "--top must be a positive"),
    ],
)
def test_cli_user_errors_are_one_sentence(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_cli_json_has_steps_and_duty_cycle(capsys):
    assert main(["ops", str(PTXLA_TRACE), "--json", "--by", "program"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["by"] == "program"
    assert len(payload["steps"]["rows"]) == 15
    assert 0 < payload["duty_cycle"] < 1
    assert {
        "name",
        "category",
        "occurrences",
        "total_time_us",
        "avg_time_us",
        "self_time_us",
        "percent",
        "flops",
        "bytes_accessed",
        "bound_by",
    } <= set(payload["rows"][0])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=200), st.booleans())
def test_grouping_matches_numpy_unique_for_small_and_huge_keys(values, huge):
    from tpuscope.analysis.ops import _group

    key = np.array(values, np.int64) * (1 << 40 if huge else 1)  # huge: takes the sorting path
    representative, inverse = _group(key)
    uniq, expected_inverse = np.unique(key, return_inverse=True)
    assert np.array_equal(inverse, expected_inverse.reshape(-1))
    assert np.array_equal(key[representative], uniq)


def test_self_times_agree_with_the_loaders_nesting_on_real_host_threads():
    """On real thread lines (properly nested TraceMe events), our vectorized nesting gives the same
    self time as one computed from the loader's stack-based `depth` column."""
    trace = open_trace(TF_TRACE)
    checked = 0
    for track in trace.host_planes()[0].tracks:
        if len(track) < 100:
            continue
        start, end, depth = track.start_ps, track.end_ps, track.depth.astype(np.int64)
        covered = np.zeros(len(track), np.int64)
        for level in range(1, int(depth.max()) + 1):
            kids = np.flatnonzero(depth == level)
            parents = np.flatnonzero(depth == level - 1)
            parent = parents[np.searchsorted(parents, kids) - 1]
            covered += np.bincount(
                parent, weights=np.minimum(end[kids], end[parent]) - start[kids], minlength=len(track)
            ).astype(np.int64)
        positive = track.duration_ps > 0
        expected = np.where(positive, track.duration_ps - covered, 0)
        assert np.array_equal(self_times(track.start_ps, track.duration_ps), np.maximum(expected, 0)), track
        checked += len(track)
    assert checked > 100_000
