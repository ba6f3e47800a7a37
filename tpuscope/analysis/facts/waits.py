"""Wait accounting: when the devices sat idle waiting for the host, for input or for a compilation.

One definition serves the `input_bound` rule, the overview's step split, the pod's host summaries and
the run comparison, so the finding, the chart and the per-host table agree on every number.

Input wait: the time no device ran an op *and* the host was still preparing the step: before the
step's first program launch (and, for steps taken from the device timeline, anywhere between two
executions of the step program), or inside input work (tf.data `IteratorGetNext`, infeed,
host-to-device copies, user data-loader annotations). Compilation and blocking device-to-host reads
are left out (their own rules report them). Without any device activity, the time in input work
inside the steps (XProf's definition on CPU).
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.facts.context import Context, flat_events, intervals_of
from tpuscope.analysis.facts.intervals import Intervals, difference, empty, intersect, merge_intervals
from tpuscope.analysis.steps import SOURCE_DEVICE_PROGRAM, SOURCE_DEVICE_STEPS
from tpuscope.model.trace import Track
from tpuscope.model.vocabulary import EventClass

# User annotations that name data loading (TraceAnnotation / xp.Trace / record_function names). Only
# counted on the threads that run the steps: tf.data and loader worker threads prefetch in parallel.
# The names users give their own code, whatever the format, so they are matched here; the runtime's
# input events are the reader's (EventClass.INPUT).
USER_INPUT_PATTERN = (
    r"(data_?load|dataloader|load_?batch|load_?data|next_?batch|get_?batch|read_?batch|input_?pipeline"
    r"|input_fn|__next__|fetch_?batch)"
)


def input_work_events(ctx: Context) -> list[tuple[Track, np.ndarray]]:
    """Input work: runtime input events on any host thread, data-loader annotations on the step threads."""
    return ctx.host_events_of(EventClass.INPUT) + _user_input_events(ctx)


def input_work_intervals(ctx: Context) -> Intervals:
    """The time in input work (`input_work_events`), as one canonical set made once per context:
    the input-bound rule, the step variance rule and the figures all measure against it."""
    return ctx.fact("input_work_intervals", lambda: _read_only(intervals_of(input_work_events(ctx))))


def waiting_intervals(ctx: Context, work: Intervals) -> Intervals:
    """The time the steps waited for their input (needs steps).

    With devices: the ranges where the host may still be preparing a step (`_candidate`), minus
    compiles and blocking reads, where no device ran an op. Without devices: `work` (the intervals
    of `input_work_events`) inside the steps.
    """
    p0, p1 = ctx.periods
    if not ctx.devices:
        return intersect(work, (p0, p1))
    candidate = difference(merge_intervals(*_candidate(ctx)), intervals_of(ctx.compiles + ctx.syncs))
    # The candidate time no device ran an op in, within the steps' span (first start to last end):
    # the few candidate ranges cut by the devices' busy time, never the steps' whole idle time,
    # which has as many pieces as the devices ran ops.
    return intersect(difference(candidate, ctx.device_busy), (p0[:1], p1[-1:]))


def input_wait_intervals(ctx: Context) -> Intervals:
    """The time the devices waited for the host's input (`waiting_intervals` of the input work);
    empty without steps."""
    if len(ctx.periods[0]) == 0:
        return empty()
    # Asked by the overview, the pod summary and three rules: made once per context, shared read-only.
    return ctx.fact(
        "input_wait_intervals", lambda: _read_only(waiting_intervals(ctx, input_work_intervals(ctx)))
    )


def compile_wait_intervals(ctx: Context, input_wait: Intervals) -> Intervals:
    """Host compilation time during which no device ran an op, minus what is counted as input."""
    compiling = intervals_of(ctx.compiles)
    return difference(difference(compiling, ctx.device_busy), input_wait)


def _read_only(intervals: Intervals) -> Intervals:
    """`intervals`, made read-only: a shared fact that one caller wrote into would be wrong for the rest."""
    for column in intervals:
        column.flags.writeable = False
    return intervals


def _user_input_events(ctx: Context) -> list:
    step_tracks = {id(t) for t, _ in ctx.launches}
    if ctx.steps.track is not None:
        step_tracks.add(id(ctx.steps.track))
    # Found anywhere in the name (host_events searches); no `.*` around it, which backtracks
    # quadratically over long names.
    found = ctx.host_events(r"(?i)" + USER_INPUT_PATTERN)
    return [(t, idx) for t, idx in found if id(t) in step_tracks]


def _candidate(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """Per step: the time the host may still be preparing it, [previous step end, first launch)."""
    steps = ctx.steps
    previous_end = np.concatenate([[steps.start_ps[0]], steps.end_ps[:-1]])
    previous_end = np.minimum(previous_end, steps.start_ps)
    if steps.source in (SOURCE_DEVICE_PROGRAM, SOURCE_DEVICE_STEPS):
        # Steps on the device timeline: every idle moment from the previous execution to this one's end.
        return previous_end, steps.end_ps
    _, _, launch_starts, _ = flat_events(ctx.launches)
    if len(launch_starts) == 0:  # no launch recorded (e.g. one host of a pod): the whole step may be input
        return previous_end, steps.end_ps
    pos = np.searchsorted(launch_starts, steps.start_ps, side="left")
    has = pos < len(launch_starts)
    first = np.where(has, launch_starts[np.minimum(pos, len(launch_starts) - 1)], steps.end_ps)
    first = np.where(first < steps.end_ps, first, steps.end_ps)
    return previous_end, np.maximum(first, previous_end)
