"""Each rule on real JAX CPU profiles with the problem induced on purpose (see recordings.py).

Expected numbers come from the recording's own design (steps, shapes, sleeps) or are recomputed
from the raw events, never copied from a previous run.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.diagnose.costs import assert_costed
from tests.diagnose.recordings import (
    LOADER_SLEEP_S,
    STALL_SLEEP_S,
    STALL_STEP,
    STEPS,
    recompile_shapes,
)
from tpuscope.analysis.diagnose import Severity
from tpuscope.analysis.diagnose.finding import STEP_TIME_BANDS
from tpuscope.analysis.session import TraceAnalysis


def _by_id(report, rule_id):
    return [f for f in report.findings if f.id == rule_id]


def _warnings(report):
    return {f.id for f in report.findings if f.severity >= Severity.WARNING}


@pytest.fixture(scope="module")
def reports(recorded_trace):
    cache = {}

    def get(scenario):
        if scenario not in cache:
            cache[scenario] = TraceAnalysis(recorded_trace(scenario)).report
        return cache[scenario]

    return get


@pytest.mark.parametrize("scenario", ["healthy", "healthy_unannotated"])
def test_healthy_loop_produces_no_warning_at_all(reports, scenario):
    report = reports(scenario)
    assert not report.rule_errors
    assert len(report.steps) == STEPS
    assert _warnings(report) == set(), [f.title for f in report.findings]
    # The one compilation (warm-up, step 0) is reported as info, not as a problem.
    (compiles,) = _by_id(report, "recompilation")
    assert compiles.severity == Severity.INFO
    assert compiles.metrics["compilations"] == 1


def test_sleeping_data_loader_is_input_bound(reports, recorded_trace):
    report = reports("input_bound")
    (finding,) = _by_id(report, "input_bound")
    assert finding.severity == Severity.CRITICAL  # far above XProf's 20 % "highly input-bound"
    trace = recorded_trace("input_bound")
    loads = [(t, idx) for t, idx in trace.events_named("load_batch")]
    load_ps = sum(int(t.duration_ps[idx].sum()) for t, idx in loads)
    assert sum(len(idx) for _, idx in loads) == STEPS
    assert load_ps >= STEPS * LOADER_SLEEP_S * 1e12  # the sleeps are really in the profile
    m = finding.metrics
    # The device waited during nearly all of the loader's time (it can overlap the previous step's tail).
    assert 0.85 * load_ps / 1e9 <= m["waiting_in_input_work_ms"] <= load_ps / 1e9 + 0.001
    span = trace.events_named("train")
    steps_ps = sum(int(t.end_ps[idx].max() - t.start_ps[idx].min()) for t, idx in span)
    assert m["input_percent_of_step_time"] == pytest.approx(
        100 * m["device_waiting_ms"] * 1e9 / steps_ps, abs=0.01
    )
    assert m["steps"] == STEPS
    assert any(e["label"].startswith("input work: load_batch") for e in finding.evidence)
    assert "recompilation" not in _warnings(report) and "host_device_sync" not in _warnings(report)


def test_changing_input_shape_recompiles_exactly_once_per_shape(reports, recorded_trace):
    report = reports("recompile")
    (finding,) = _by_id(report, "recompilation")
    assert_costed(finding)
    shapes = recompile_shapes()
    m = finding.metrics
    assert m["function"] == "train_step"
    assert m["compilations"] == len(shapes) == 4
    assert m["compiled_after_first_step"] == len(shapes) - 1
    # A new batch size every RECOMPILE_EVERY steps: compilations land in steps 0, 3, 6, 9.
    assert m["steps"] == [f"step {3 * k}" for k in range(len(shapes))]
    # One program id per compilation, read from /host:metadata.
    (differed,) = m["what_differed"]
    assert len(differed.split(":")[-1].split(",")) == len(shapes)
    compile_events = recorded_trace("recompile").events_named("backend_compile_and_load")
    assert sum(len(idx) for _, idx in compile_events) == len(shapes)
    assert len(finding.evidence) == len(shapes)
    assert {"input_bound", "host_device_sync"}.isdisjoint(_warnings(report))


def test_reading_the_loss_every_step_is_a_host_device_sync(reports, recorded_trace):
    report = reports("host_sync")
    (finding,) = _by_id(report, "host_device_sync")
    # One float(loss) per step on XLA:CPU leaves the device idle about a percent of the step: found,
    # counted, and info, because what it costs is below the warning level.
    assert finding.severity == Severity.INFO
    assert finding.impact is not None and finding.impact.percent_of_step_time < STEP_TIME_BANDS.warning
    m = finding.metrics
    assert m["syncs_in_steps"] == STEPS
    assert m["steps_with_sync"] == STEPS
    assert m["syncs_per_step"] == 1.0
    assert m["event_names"] == ["np.asarray(jax.Array)"]
    reads = recorded_trace("host_sync").events_named("np.asarray(jax.Array)")
    blocked_ps = sum(int(t.duration_ps[idx].sum()) for t, idx in reads)
    assert m["host_blocked_ms"] == pytest.approx(blocked_ps / 1e9, abs=0.002)
    assert m["device_idle_after_ms"] >= 0
    assert {"input_bound", "recompilation"}.isdisjoint(_warnings(report))


def test_evidence_points_at_real_events(reports, recorded_trace):
    for scenario in ("input_bound", "recompile", "host_sync"):
        trace = recorded_trace(scenario)
        for finding in reports(scenario).findings:
            for item in finding.evidence:
                assert item["end_ps"] >= item["start_ps"] >= 0
                if item.get("event_index") is not None:
                    plane = trace.find_plane(item["plane"], item["host"])
                    track = plane.track(item["track"])
                    i = item["event_index"]
                    assert int(track.start_ps[i]) == item["start_ps"]
                    assert int(track.end_ps[i]) == item["end_ps"]


def test_findings_are_sorted_worst_first(reports):
    severities = [int(f.severity) for f in reports("input_bound").findings]
    assert severities == sorted(severities, reverse=True)
    assert np.all(np.diff(severities) <= 0)


def test_one_stalled_step_is_a_step_time_outlier(reports):
    report = reports("stall")
    (finding,) = [f for f in report.findings if f.id == "step_time_variance"]
    assert_costed(finding)
    m = finding.metrics
    slowest = m["slow_steps"][int(np.argmax(m["slow_step_ms"]))]
    assert slowest == f"step {STALL_STEP}"
    assert max(m["slow_step_ms"]) >= STALL_SLEEP_S * 1e3
    assert m["steps_left_out_for_compiling"] >= 1  # step 0 compiled
    # The stall happens after the step's launch: it is not input time.
    assert "input_bound" not in _warnings(report)


def test_sleeping_loader_without_step_annotations_is_still_input_bound(reports):
    report = reports("input_bound_unannotated")
    assert report.steps.source == "host_program" and len(report.steps) == STEPS
    (finding,) = [f for f in report.findings if f.id == "input_bound"]
    assert finding.severity == Severity.CRITICAL
    # Steps are the jitted function's dispatches: the sleeps sit between them, before each launch.
    assert finding.metrics["device_waiting_ms"] >= 0.85 * (STEPS - 1) * LOADER_SLEEP_S * 1e3
