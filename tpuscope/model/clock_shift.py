"""Moving hosts' events in time: the merged timeline aligned by each host's clock offset.

A host whose clock reads later than the others' has its events drawn that much to the right of
theirs. Aligning adds a per-host shift to the start times of every track of that host's planes: one
vectorized add per track, done once when the profile is loaded (before the timeline's index and the
analyses are made, so every view sees the same times). The shifted columns are new arrays: the
cache entry the loader is still writing keeps the recorded times.
"""

from __future__ import annotations

from tpuscope.model.trace import Plane, Trace


def shift_hosts(trace: Trace, shifts_ps: dict[str, int]) -> Trace:
    """`trace` with each host of `shifts_ps` moved by its shift (ps, added to its events' starts)."""
    return shift_planes(trace, [(p, int(shifts_ps[p.host])) for p in trace.planes if shifts_ps.get(p.host)])


def shift_planes(trace: Trace, shifts: list[tuple[Plane, int]]) -> Trace:
    """`trace` with each plane of `shifts` moved by its shift (ps): a device whose clock is off its host's."""
    for plane, shift in shifts:
        if shift == 0:
            continue
        for track in plane.tracks:
            if len(track):
                track.start_ps = track.start_ps + shift
    ends = [int(t.end_ps.max()) for t in trace.tracks() if len(t)]
    trace.duration_ps = max(ends, default=trace.duration_ps)
    return trace


def describe_shifts(shifts_ps: dict[str, int]) -> str:
    """The status bar's words: "clocks aligned: worker2 -1.3 ms" (hosts or devices in order, at most
    three named)."""
    if not shifts_ps:
        return ""
    named = [f"{host} {shift / 1e9:+.3g} ms" for host, shift in list(shifts_ps.items())[:3]]
    more = f" and {len(shifts_ps) - 3} more" if len(shifts_ps) > 3 else ""
    return "clocks aligned: " + ", ".join(named) + more
