"""The overview's numbers, each checked against an independent computation on real profiles.

Oracles: step boundaries straight from `find_steps` (periods re-derived here with np.diff), busy
time per step by clipping every busy interval to every step with plain numpy (not the cumulative
searchsorted of `busy_in_windows`), duty cycle from `device_ops.device_activity`, input share from
the `input_bound` finding, top ops from `op_breakdown`, findings from `diagnose`.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import GPU_TRACE, SAMPLES, TF_TRACE, TPU_TRACE, require_shared_traces
from tpuscope.analysis.device_ops import busy_intervals, device_activity, find_devices
from tpuscope.analysis.facts.context import intervals_of
from tpuscope.analysis.ops import op_breakdown
from tpuscope.analysis.overview import (
    PARTS,
    ROW_KEYS,
    SLICES_WITHOUT_STEPS,
    STEP_TIME_PERCENTILE,
    step_time_stats,
)
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.analysis.steps import find_steps
from tpuscope.app.opener import open_trace

INPUT_BOUND_SAMPLE = SAMPLES / "jax_cpu_input_bound.xplane.pb"
RECOMPILE_SAMPLE = SAMPLES / "jax_cpu_recompile.xplane.pb"


@pytest.fixture(scope="module")
def profiles():
    require_shared_traces()
    paths = {"tpu": TPU_TRACE, "input": INPUT_BOUND_SAMPLE, "recompile": RECOMPILE_SAMPLE,
             "gpu": GPU_TRACE, "tf": TF_TRACE}  # fmt: skip
    traces = {key: open_trace(path, use_cache=False) for key, path in paths.items()}
    return {key: (trace, TraceAnalysis(trace).overview) for key, trace in traces.items()}


def _periods(trace):
    """Step periods, start to next start (the last: to its end), derived here from find_steps."""
    steps = find_steps(trace)
    starts = steps.start_ps.astype(np.int64)
    ends = np.append(starts[1:], steps.end_ps[-1]) if len(starts) else starts
    return steps, starts, np.maximum(ends, starts)


def _clipped_busy(device, starts, ends):
    """Busy ps of one device in each window, by clipping each busy interval to each window."""
    b0, b1 = busy_intervals(device)
    lo = np.maximum(b0[None, :], starts[:, None])
    hi = np.minimum(b1[None, :], ends[:, None])
    return np.clip(hi - lo, 0, None).sum(axis=1)


@pytest.mark.parametrize("key", ["tpu", "input", "recompile", "tf"])
def test_steps_and_step_time_agree_with_find_steps(profiles, key):
    trace, overview = profiles[key]
    steps, starts, ends = _periods(trace)
    assert len(overview.steps) == len(steps) > 0
    assert overview.steps.source == steps.source
    np.testing.assert_array_equal(overview.series.start_ps, starts)
    np.testing.assert_array_equal(overview.series.end_ps, ends)
    durations = (ends - starts).astype(np.float64)
    t = overview.step_time
    assert t.mean_ps == pytest.approx(durations.mean())
    assert t.median_ps == pytest.approx(np.median(durations))
    assert t.p95_ps == pytest.approx(np.percentile(durations, STEP_TIME_PERCENTILE))
    assert t.min_ps <= t.median_ps <= t.p95_ps <= t.max_ps == durations.max()


@pytest.mark.parametrize("key", ["tpu", "input", "recompile", "tf", "gpu"])
def test_the_four_parts_add_up_to_each_step(profiles, key):
    _, overview = profiles[key]
    series = overview.series if len(overview.series) else overview.slices
    total = sum(series.part(p) for p in PARTS)
    for part in PARTS:
        assert np.all(series.part(part) >= 0), part
    np.testing.assert_allclose(total, series.duration_ps, rtol=1e-9, atol=1.0)
    split = series.split_percent()
    assert sum(split.values()) == pytest.approx(100.0)


@pytest.mark.parametrize("key", ["tpu", "input"])
def test_busy_per_step_and_duty_cycle_match_device_ops(profiles, key):
    trace, overview = profiles[key]
    _, starts, ends = _periods(trace)
    devices = find_devices(trace)
    expected_busy = np.mean([_clipped_busy(d, starts, ends) for d in devices], axis=0)
    np.testing.assert_allclose(overview.series.busy_ps, expected_busy, rtol=1e-12, atol=0.5)
    duty = np.mean([device_activity(d).duty_cycle for d in devices])
    assert overview.duty_cycle == pytest.approx(duty)
    assert 0.0 < overview.duty_cycle <= 1.0


def test_input_share_is_the_input_bound_findings_number(profiles):
    trace, overview = profiles["input"]
    finding = next(f for f in TraceAnalysis(trace).report.findings if f.id == "input_bound")
    split = overview.series.split_percent()
    assert split["input"] == pytest.approx(finding.metrics["input_percent_of_step_time"], abs=0.01)
    assert split["input"] == max(split.values()), "the input-bound sample's steps are mostly input waits"


def test_compile_time_sits_in_the_steps_that_compiled(profiles):
    trace, overview = profiles["recompile"]
    ctx = TraceAnalysis(trace).context
    c0, c1 = intervals_of(ctx.compiles)
    _, starts, _ = _periods(trace)
    compiled = np.zeros(len(starts), dtype=bool)
    inside = c0 >= starts[0]
    compiled[np.searchsorted(starts, c0[inside], side="right") - 1] = (
        True  # the period each compile starts in
    )
    compile_ps = overview.series.compile_ps
    assert compiled.sum() >= 2, "the recompile sample compiles in several steps"
    assert np.all(compile_ps[~compiled] <= 0.01 * overview.series.duration_ps[~compiled])
    assert np.all(compile_ps[compiled] > 0)
    assert compile_ps.sum() <= float((c1 - c0).sum())  # only the part where no device worked


def test_top_ops_and_findings_are_those_of_ops_and_diagnose(profiles):
    trace, overview = profiles["tpu"]
    expected = op_breakdown(trace).rows_json(10)
    got = overview.to_json(top_ops=10)["top_ops"]
    assert [(r["name"], r["program"]) for r in got] == [(r["name"], r["program"]) for r in expected]
    assert [r["self_time_us"] for r in got] == sorted((r["self_time_us"] for r in got), reverse=True)
    assert [f.id for f in overview.findings] == [f.id for f in TraceAnalysis(trace).report.findings]


def test_device_summary(profiles):
    trace, overview = profiles["tpu"]
    planes = trace.device_planes("TPU")
    assert overview.devices.kind == "TPU" and overview.devices.count == len(planes)
    assert overview.devices.type == planes[0].device_type
    gpu_trace, gpu = profiles["gpu"]
    assert gpu.devices.count == len(gpu_trace.device_planes("GPU"))
    assert gpu.devices.active == len(find_devices(gpu_trace)) < gpu.devices.count
    _, cpu = profiles["input"]
    assert (cpu.devices.kind, cpu.devices.type) == ("CPU", "XLA:CPU")


def test_without_steps_the_profile_is_split_in_equal_slices(profiles):
    trace, overview = profiles["gpu"]
    assert len(find_steps(trace)) == 0
    assert len(overview.series) == 0 and overview.step_time is None
    slices = overview.slices
    assert len(slices) == SLICES_WITHOUT_STEPS
    assert slices.start_ps[0] == 0 and slices.end_ps[-1] == trace.duration_ps
    np.testing.assert_array_equal(slices.start_ps[1:], slices.end_ps[:-1])
    devices = find_devices(trace)
    busy = np.mean([device_activity(d).busy_ps for d in devices])
    assert slices.busy_ps.sum() == pytest.approx(busy)
    assert slices.input_ps.sum() == 0  # input waits are defined per step


def test_host_only_profile_has_no_duty_cycle_and_no_ops(profiles):
    _, overview = profiles["tf"]
    assert overview.duty_cycle is None and overview.step_duty_cycle is None
    assert overview.ops is None and overview.devices.kind == ""
    assert np.all(overview.series.busy_ps == 0)


def test_json_is_plain_and_complete(profiles):
    _, overview = profiles["input"]
    payload = json.loads(json.dumps(overview.to_json()))
    assert len(payload["per_step"]) == len(overview.steps)
    row = payload["per_step"][0]
    parts = sum(row[f"{p}_us"] for p in PARTS)
    assert parts == pytest.approx(row["duration_us"])
    assert payload["findings"][0]["severity"] == "critical"
    assert payload["step_time"]["median_us"] == pytest.approx(overview.step_time.median_ps / 1e6)


@pytest.mark.parametrize("key", ["input", "gpu"])
def test_per_step_rows_are_each_steps_columns_in_us(profiles, key):
    """The rows written out key by key hold, in `ROW_KEYS` order, each column's value of the step (the
    slices' too) in us, as float(v) / 1e6 makes it."""
    _, overview = profiles[key]
    series = overview.series if len(overview.series) else overview.slices
    assert ROW_KEYS == ("step", "start_us", "duration_us", *(f"{p}_us" for p in PARTS))
    columns = [series.start_ps, series.duration_ps, *(series.part(p) for p in PARTS)]
    expected = [
        dict(zip(ROW_KEYS, [int(step), *(float(c[k]) / 1e6 for c in columns)], strict=True))
        for k, step in enumerate(series.number)
    ]
    rows = series.rows_json()
    assert len(rows) > 0 and [list(r) for r in rows] == [list(ROW_KEYS)] * len(rows)
    assert rows == expected and all(
        type(v) is type(e)
        for r, x in zip(rows, expected, strict=True)
        for v, e in zip(r.values(), x.values(), strict=True)
    )


def test_step_time_stats_of_nothing_is_none():
    assert step_time_stats(np.empty(0)) is None
