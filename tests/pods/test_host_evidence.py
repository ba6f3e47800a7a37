"""A host summary's busiest op and longest-event evidence equal their plain definitions, on real
profiles: per-name totals summed as Python integers, and the longest events found by sorting them all."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tests.conftest import SAMPLES
from tpuscope.analysis.facts.evidence import MAX_EVIDENCE
from tpuscope.analysis.pod import summary
from tpuscope.analysis.pod.collectives import CollectiveNames, split_device_ops
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace

# Devices with more ops than the longest events' sample (TPU cores: 1.5k ops each) and CPU thunks.
PROFILES = [
    "tpu_v6e_inference_4chip.xplane.pb",
    "ptxla_cpu_fallback.xplane.pb",
    "jax_cpu_input_bound.xplane.pb",
]


def _ops(name):
    ctx = TraceAnalysis(open_trace(SAMPLES / name, use_cache=False)).context
    names = CollectiveNames(ctx.trace.strings, ctx.trace.dialect)
    ops = [op for device in ctx.devices for op in split_device_ops(device, names)[1]]
    assert ops
    return ctx, ops


@pytest.mark.parametrize("name", PROFILES)
@pytest.mark.parametrize("ops_at_a_time", [1 << 16, 7])  # the default, and slices that split every track
def test_busiest_op_is_the_name_with_the_most_time(name, ops_at_a_time, monkeypatch):
    monkeypatch.setattr(summary, "_SLICE", ops_at_a_time)
    ctx, ops = _ops(name)
    totals: Counter[str] = Counter()
    for track, idx in ops:
        for i in idx.tolist():
            totals[track.event_name(i)] += int(track.duration_ps[i])
    best, best_ps = max(totals.items(), key=lambda item: item[1])
    got, got_ps = summary._busiest_op(ctx, ops)
    assert got_ps == float(best_ps)
    assert totals[got] == best_ps


@pytest.mark.parametrize("name", PROFILES)
@pytest.mark.parametrize("ops_at_a_time", [1 << 16, 7])
def test_longest_evidence_is_the_longest_events_in_the_window(name, ops_at_a_time, monkeypatch):
    monkeypatch.setattr(summary, "_SLICE", ops_at_a_time)
    ctx, ops = _ops(name)
    p0, p1 = ctx.periods
    window = (p0[:1], p1[-1:]) if len(p0) else (np.array([0]), np.array([ctx.trace.duration_ps]))
    w0, w1 = int(window[0][0]), int(window[1][0])
    lengths = []
    for track, idx in ops:
        starts, durations = track.start_ps[idx], track.duration_ps[idx]
        inside = (starts + durations > w0) & (starts < w1)
        lengths += durations[inside].tolist()
    items = summary._longest(ops, "device op", window)
    assert len(items) == min(MAX_EVIDENCE, len(lengths)) > 0
    assert sorted(i["end_ps"] - i["start_ps"] for i in items) == sorted(lengths)[-len(items) :]
    assert [i["start_ps"] for i in items] == sorted(i["start_ps"] for i in items)
    for item in items:  # each names its event
        track = next(t for t, _ in ops if t.name == item["track"] and t.plane.name == item["plane"])
        assert item["label"] == f"device op: {track.event_name(item['event_index'])}"
        assert int(track.start_ps[item["event_index"]]) == item["start_ps"]


@pytest.mark.parametrize("name", PROFILES)
def test_the_longest_found_among_fewer_candidates_are_the_ones_picked_among_all(name):
    """Where the pick is one answer whatever order the candidates come in, the few candidates of a larger
    sample find it; where two events are alike (each op listed twice), no answer comes from them."""
    ctx, ops = _ops(name)
    p0, p1 = ctx.periods
    w0, w1 = (int(p0[0]), int(p1[-1])) if len(p0) else (0, ctx.trace.duration_ps)
    unique = summary._unique_longest(ops, w0, w1)
    picked = summary._longest_picked(ops, w0, w1)
    assert unique is not None
    assert [(id(t), i) for t, i in unique] == [(id(t), i) for t, i in picked]
    assert summary._unique_longest(ops + ops, w0, w1) is None
    twice = summary._longest(ops + ops, "device op", (np.array([w0]), np.array([w1])))
    assert [(i["track"], i["event_index"]) for i in twice] == [
        (t.name, i) for t, i in summary._longest_picked(ops + ops, w0, w1)
    ]
