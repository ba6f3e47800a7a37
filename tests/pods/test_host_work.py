"""The host-work evidence of a host summary (`_host_work_events`) equals the plain definition: every
child of the steps measured against the idle time built as intervals, with no shortcut."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SAMPLES
from tpuscope.analysis.device_ops import busy_intervals
from tpuscope.analysis.facts.intervals import difference, union, window_total
from tpuscope.analysis.facts.waits import compile_wait_intervals, input_wait_intervals
from tpuscope.analysis.pod.summary import HOST_WORK_MIN_FRACTION, HOST_WORK_OVERLAP, _host_work_events
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace

# Profiles whose steps have children that ran while the devices idled for no input or compilation.
PROFILES = ["jax_cpu_input_bound.xplane.pb", "ptxla_cpu_fallback.xplane.pb"]


def _plain_host_work(ctx, input_wait, compile_wait) -> np.ndarray:
    """The events the definition names, each measured: positive children of the steps that are no
    launch, at least HOST_WORK_OVERLAP of them in the steps' span less busy time and waits, and at
    least HOST_WORK_MIN_FRACTION of the longest such event."""
    track = ctx.steps.track
    depth = int(track.depth[ctx.steps.event_index].min())
    launch_names = {int(i) for t, idx in ctx.launches for i in t.name_id[idx]}
    children = [
        int(i)
        for i in np.flatnonzero(track.depth == depth + 1)
        if track.duration_ps[i] > 0 and int(track.name_id[i]) not in launch_names
    ]
    p0, p1 = ctx.periods
    span = (p0[:1], p1[-1:])
    idle = difference(difference(span, ctx.device_busy), union([input_wait, compile_wait]))
    starts = track.start_ps[children]
    ends = starts + track.duration_ps[children]
    idle_ps = window_total(idle, starts, ends)
    mostly = np.asarray(children)[idle_ps >= HOST_WORK_OVERLAP * (ends - starts)]
    if len(mostly) == 0:
        return mostly
    longest = track.duration_ps[mostly].max()
    return mostly[track.duration_ps[mostly] >= HOST_WORK_MIN_FRACTION * longest]


@pytest.mark.parametrize("name", PROFILES)
def test_host_work_events_are_the_plain_definitions(name):
    ctx = TraceAnalysis(open_trace(SAMPLES / name, use_cache=False)).context
    busy = [busy_intervals(device) for device in ctx.devices]
    ctx.device_busy_from(busy)
    input_wait = input_wait_intervals(ctx)
    compile_wait = compile_wait_intervals(ctx, input_wait)
    expected = _plain_host_work(ctx, input_wait, compile_wait)
    assert len(expected) > 0
    found = _host_work_events(ctx, input_wait, compile_wait)
    got = found[0][1] if found else np.empty(0, np.int64)
    assert [t for t, _ in found] in ([], [ctx.steps.track])
    np.testing.assert_array_equal(got, expected)
