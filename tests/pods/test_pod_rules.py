"""`straggler` and `collective_bound` on real 4-process JAX CPU runs (gloo all-reduce every step)."""

from __future__ import annotations

import numpy as np

from tests.pods import recordings
from tpuscope.analysis.session import TraceAnalysis

LATE_HOST = f"worker{recordings.STRAGGLER}"
SLEEP_MS = recordings.STRAGGLER_SLEEP_S * 1e3


def _findings(trace, rule_id):
    return [f for f in TraceAnalysis(trace).report.findings if f.id == rule_id]


def _collective_ms_per_step(trace, host):
    """Straight from the events: the host's all-reduce thunk time inside each `train` step, in ms."""
    steps = [(t, i) for t, i in trace.events_named("train") if t.plane.host == host]
    track, idx = steps[0]
    starts = track.start_ps[idx]
    ops = [(t, i) for t, i in trace.find_events("all-reduce") if t.plane.host == host and "hlo_op" in t.stats]
    per_step = np.zeros(len(starts))
    for t, i in ops:
        position = np.searchsorted(starts, t.start_ps[i], side="right") - 1
        np.add.at(per_step, position[position >= 0], t.duration_ps[i][position >= 0] / 1e9)
    return per_step


def test_straggler_names_the_late_host_and_what_it_did(pod_trace):
    trace = pod_trace("straggler")
    found = _findings(trace, "straggler")
    assert len(found) == 1, [f.title for f in found]
    metrics = found[0].metrics
    assert metrics["straggler"] == LATE_HOST
    assert metrics["doing_instead"] == "input"
    assert abs(metrics["extra_ms_per_step"]["input"] - SLEEP_MS) <= 0.2 * SLEEP_MS
    assert metrics["late_steps"] >= metrics["steps"] // 2
    # How long the others wait, checked against the all-reduce events themselves.
    late = _collective_ms_per_step(trace, LATE_HOST)
    others = np.median([_collective_ms_per_step(trace, h) for h in trace.hosts if h != LATE_HOST], axis=0)
    from_events = float(np.median(np.maximum(others - late, 0)))
    assert abs(from_events - metrics["wait_per_step_ms"]) <= 0.05 * from_events
    assert 0 < metrics["wait_per_step_ms"] <= 1.2 * SLEEP_MS
    # The first evidence item is the late host's slowest step, on its own timeline.
    # (The main thread's track is named as the recording process was: python or python3.)
    first = found[0].evidence[0]
    assert first["host"] == LATE_HOST and first["track"].startswith("python")
    assert (
        trace.find_plane(first["plane"], LATE_HOST).track(first["track"]).event_name(first["event_index"])
        == "train"
    )
    loader = [e for e in found[0].evidence if e["host"] == LATE_HOST and "load_batch" in e["label"]]
    assert len(loader) >= metrics["steps"] // 2
    assert not _findings(trace, "collective_bound")


def test_a_host_busy_after_its_step_is_the_straggler_doing_host_work(pod_trace):
    trace = pod_trace("host_work")
    found = _findings(trace, "straggler")
    assert len(found) == 1, [f.title for f in found]
    metrics = found[0].metrics
    assert metrics["straggler"] == LATE_HOST and metrics["doing_instead"] == "host"
    assert abs(metrics["extra_ms_per_step"]["host"] - SLEEP_MS) <= 0.2 * SLEEP_MS
    assert abs(metrics["extra_ms_per_step"]["input"]) < 0.1 * SLEEP_MS
    # Its own events show what it did: the `log_metrics` annotation of every step it was late in.
    logged = [
        e for e in found[0].evidence if e["host"] == LATE_HOST and e["label"] == "host work: log_metrics"
    ]
    assert len(logged) >= metrics["late_steps"]
    assert "busy on the host" in found[0].title
    assert not _findings(trace, "collective_bound")


def test_balanced_pod_has_no_straggler(pod_trace):
    assert not _findings(pod_trace("balanced"), "straggler")


def test_heavy_collective_on_every_host_is_collective_bound_not_a_straggler(pod_trace):
    trace = pod_trace("collective_heavy")
    report = TraceAnalysis(trace).report
    assert "straggler" not in {f.id for f in report.findings}
    bound = [f for f in report.findings if f.id == "collective_bound"]
    assert len(bound) == 1
    shares = bound[0].metrics["collective_percent_of_step_time"]
    assert set(shares) == set(trace.hosts) and min(shares.values()) >= 30.0
    checked = {c["rule"]: c["summary"] for c in report.checked}
    assert "4 hosts" in checked["straggler"] and ">= 30%" in checked["collective_bound"]
