"""The TPU-advice rules on real profiles: async waits on the TPU v6e sample, host callbacks in real
JAX CPU loops (jax.debug.print and io_callback inside the jitted step, see recordings.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import TPU_TRACE
from tests.diagnose.recordings import STEPS
from tpuscope.analysis.diagnose import Severity, async_wait, host_callback
from tpuscope.analysis.ops import op_breakdown
from tpuscope.analysis.session import TraceAnalysis


def _only(outcome, rule_id):
    (finding,) = [f for f in outcome.findings if f.id == rule_id]
    return finding


def test_tpu_sample_waits_on_copies_from_host_memory(shared_traces):
    trace = shared_traces[TPU_TRACE]
    outcome = async_wait.run(TraceAnalysis(trace).context)
    finding = _only(outcome, async_wait.RULE_ID)
    # Each core blocks in the copies for almost all of its step: critical, first in the list.
    assert finding.severity == Severity.CRITICAL
    assert finding.impact is not None and finding.impact.percent_of_step_time > 90
    m = finding.metrics
    # The same share, grouped by XLA's own op category instead of by op name.
    by_category = op_breakdown(trace, by="category")
    done = [k for k, name in enumerate(by_category.names()) if name == "copy-done"]
    assert m["async_done_percent_of_device_time"] == pytest.approx(
        float(by_category.percent[done].sum()), abs=0.01
    )
    assert m["async_done_percent_of_device_time"] > 96
    ops = {row["op"]: row for row in m["ops"]}
    big = sorted(ops, key=lambda name: -ops[name]["self_ms"])[:4]
    assert sorted(big) == ["copy-done", "copy-done.2", "copy-done.4", "copy-done.5"]
    # copy-done, .2, .4 wait for copy-start(param in S(5)): buffers brought in from host memory; .5 sends
    # a result out to host memory (its result is in S(5)).
    for name in ("copy-done", "copy-done.2", "copy-done.4"):
        assert ops[name]["waits_for"] == async_wait.WAIT_HOST_TO_DEVICE
    assert ops["copy-done.5"]["waits_for"] == async_wait.WAIT_DEVICE_TO_HOST
    assert ops["copy-done"]["bytes_per_transfer"] == 5 * 1024 * 1024 * 1024 * 4 // 4  # f32[5,1024,1024,256]
    assert "host" in finding.explanation and finding.advice
    for item in finding.evidence:
        plane = trace.find_plane(item["plane"], item["host"])
        track = plane.track(item["track"])
        assert item["label"].startswith("waiting: copy-done")
        assert int(track.start_ps[item["event_index"]]) == item["start_ps"]
    assert "at or above 10%" in outcome.checked


@pytest.mark.parametrize(
    ("scenario", "op"), [("debug_print", "debug_print.1"), ("io_callback", "io_callback.1")]
)
def test_callbacks_inside_the_jitted_step_are_found(recorded_trace, scenario, op):
    trace = recorded_trace(scenario)
    outcome = host_callback.run(TraceAnalysis(trace).context)
    finding = _only(outcome, host_callback.RULE_ID)
    m = finding.metrics
    assert m["ops"] == [op]
    events = [(t, idx) for t, idx in trace.events_named(op) if t.plane.kind == "CPU"]
    thunks = [
        (t, idx[np.isin(idx, np.flatnonzero(t.stats.column("hlo_op").present(len(t))))]) for t, idx in events
    ]
    assert m["calls"] == sum(len(idx) for _, idx in thunks) == STEPS  # one round trip per step
    assert m["calls_per_step"] == 1.0
    assert finding.impact is not None
    assert finding.severity == host_callback.IMPACT_THRESHOLDS.severity(finding.impact)
    assert all(e["label"] == f"host callback: {op}" for e in finding.evidence)
    assert len(finding.evidence) == min(STEPS, host_callback.EVIDENCE_PER_OP)


def test_loops_without_callbacks_have_none(recorded_trace):
    for scenario in ("healthy", "host_sync", "stall"):
        outcome = host_callback.run(TraceAnalysis(recorded_trace(scenario)).context)
        assert outcome.findings == []
        assert outcome.checked.startswith("0 host-callback device op(s)")
