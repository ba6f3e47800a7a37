"""Going to a place in the open profile: a time range or an op's longest event on the timeline.

What a deep link (`tpuscope PATH --at 12.3ms:45.6ms`, `--op NAME`) and the command palette's "Go to
time" and "Go to op" do, through the view router's public API only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tpuscope.model import order_statistics

if TYPE_CHECKING:
    from tpuscope.analysis.ops import OpEvents
    from tpuscope.model.trace import Track
    from tpuscope.ui.view_router import ViewRouter

# A point in time (--at 12.3ms) is shown with this much around it on each side (our heuristic: a
# typical step's scale; the user zooms from there).
POINT_SPAN_PS = 1e9


def go_to_time(router: ViewRouter, t0_ps: float, t1_ps: float | None = None) -> bool:
    """Shows the timeline at [t0, t1] from the trace start (t1 None: around t0); False without a trace
    or when t0 lies past its end."""
    trace = router.trace
    if trace is None or t0_ps > float(trace.duration_ps):
        return False
    if t1_ps is None:
        t0_ps, t1_ps = t0_ps - POINT_SPAN_PS, t0_ps + POINT_SPAN_PS
    router.zoom_timeline(max(t0_ps, 0.0), min(t1_ps, float(trace.duration_ps)))
    return True


def _op_events(router: ViewRouter) -> OpEvents | None:
    analysis = router.hub.analysis if router.body_built else None
    return analysis.op_events() if analysis is not None else None


def op_names(router: ViewRouter) -> list[str]:
    """The open profile's ops as the op breakdown names them ("copy-done.4", where a TPU event's own
    name is its whole HLO text), sorted; the event names of a profile with no device ops."""
    events = _op_events(router)
    if events is not None and len(events):
        return sorted(events.labels.texts[int(i)] for i in order_statistics.sorted_distinct(events.op))
    trace = router.trace
    if trace is None:
        return []
    ids = order_statistics.sorted_distinct(
        np.concatenate([t.name_id for t in trace.tracks()] or [np.empty(0, np.int32)])
    )
    return sorted(trace.strings[int(i)] for i in ids)


def op_events_named(router: ViewRouter, name: str) -> list[tuple[Track, np.ndarray]]:
    """The events of op `name` as the op breakdown groups them, per track ([] when it has none)."""
    events = _op_events(router)
    if events is None or not len(events) or name not in events.labels.texts:
        return []
    return events.events_of(events.op == events.labels.texts.index(name))


def go_to_op(router: ViewRouter, name: str) -> int:
    """Outlines every event of op `name` (as the op breakdown names ops; else every event so named) on
    the timeline and shows the longest (selected, zoomed to, in Details); the number of events found
    (0: nothing changes)."""
    trace = router.trace
    if trace is None:
        return 0
    matches = op_events_named(router, name) or trace.events_named(name)
    count = sum(len(indices) for _, indices in matches)
    if not count:
        return 0
    longest = [int(indices[np.argmax(track.duration_ps[indices])]) for track, indices in matches]
    k = max(range(len(matches)), key=lambda i: int(matches[i][0].duration_ps[longest[i]]))
    track, index = matches[k][0], longest[k]
    router.highlight_events(matches)
    router.jump_to_event(track, index)  # the timeline in front, zoomed to it, Details on it
    return count
