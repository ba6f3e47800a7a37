"""One host's part of a pod: per step, where its time went, computed from that host's planes alone.

A `HostSummary` holds per-step arrays (a few hundred numbers) and a few dozen evidence items, no
reference to the trace: it pickles small, so hosts can be summarized one at a time or on other
machines and only the summaries brought together.

Each step lasts from its start to the host's next step start (as the diagnose rules measure it)
and splits into parts that add up to it:
- compute: a device of the host ran an op that is not a collective (mean over its devices);
- collective: a device was inside a collective, or the host in a DCN transfer (mean over devices);
- input: no device ran an op while the host was still preparing the step (as `input_bound` measures);
- compile: no device ran an op while the host was compiling (and not already counted as input);
- host: the rest: the devices idle while the host did other work (Python, logging, waiting).
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import Any

import numpy as np

from tpuscope.analysis.device_ops import busy_coverage, busy_intervals
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.facts.evidence import MAX_EVIDENCE, event_evidence
from tpuscope.analysis.facts.intervals import (
    Coverage,
    Intervals,
    coverage,
    empty,
    intersect,
    union,
    window_total,
)  # fmt: skip
from tpuscope.analysis.facts.waits import (
    compile_wait_intervals,
    input_wait_intervals,
    input_work_events,
)
from tpuscope.analysis.pod.clocks import CollectiveEnds, LaunchSkew, collective_ends, launch_skew
from tpuscope.analysis.pod.collectives import CollectiveNames, dcn_events, split_device_ops, union_of
from tpuscope.analysis.pod.comms import CollectiveRow, collective_rows
from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.analysis.steps import SOURCE_NONE
from tpuscope.model import id_columns
from tpuscope.model.flows import Flows
from tpuscope.model.records import record
from tpuscope.model.trace import Trace, Track

PARTS = ("compute", "collective", "input", "compile", "host")
PART_LABELS = {
    "compute": "device compute",
    "collective": "in collectives",
    "input": "waiting for input",
    "compile": "compiling",
    "host": "host work and other idle",
}
# Evidence kinds kept per host: what a late host may have been doing, and the others' waits.
EVIDENCE_KINDS = ("input", "host", "compile", "compute", "collective")
# A step's child event counts as host work when at least this share of it falls where the devices
# were idle for no input or compilation (our heuristic: mostly outside device work), and it is at
# least this share of the longest such event (slivers of dispatch are not what held the host up).
HOST_WORK_OVERLAP = 0.5
HOST_WORK_MIN_FRACTION = 0.1
# The host work's longest events are looked for first among the step children as long as the
# _IDLE_SAMPLE_RANK-th longest of those among every (len / _IDLE_SAMPLE)-th event of the step thread
# (our heuristic: about a thousand of the 146k children of the 1M recording, the longest of them).
_IDLE_SAMPLE = 4096
_IDLE_SAMPLE_RANK = 16
# Sums of integer ps below this are exact in float64 (2**53), whatever order they are added in.
_EXACT_FLOAT_SUM = 2**53
# Ops read this many at a time where a column over all of them would only pass through (our
# heuristic: copies of a slice's columns are reused memory, those of a track's every op fresh pages).
_SLICE = 1 << 16
# The longest events of a track are looked for among those as long as the longest of a sample of
# this many times MAX_EVIDENCE of its events (a threshold that keeps a few hundred of 200k ops).
_CANDIDATE_SAMPLE = 8
# The longest events are looked for first among those as long as the longest of a sample of this many
# times MAX_EVIDENCE of a track's events (our heuristic: a few thousand of 200k ops; `_unique_longest`).
_UNIQUE_SAMPLE = 64


@record
class HostSummary:
    """Per-step parts of one host's step time (ps, float64 arrays parallel to `step_number`)."""

    host: str
    step_source: str
    step_description: str
    step_number: np.ndarray  # int64: step numbers as the host's step annotations number them
    start_ps: np.ndarray  # int64: step period start (trace time)
    end_ps: np.ndarray  # int64: next step's start (the last step: its end)
    parts: dict[str, np.ndarray]  # PARTS -> float64 per step
    devices: list[str] = field(default_factory=list)
    device_collective_ps: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (devices, steps)
    device_compute_ps: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (devices, steps)
    # Per step, collective time no non-collective op of the same device overlaps (mean over devices):
    # what communication costs the step, as opposed to collectives hidden behind compute.
    exposed_collective_ps: np.ndarray = field(default_factory=lambda: np.zeros(0))
    device_kind: str = ""
    busiest_op: str = ""  # the non-collective op with the most device time
    busiest_op_ps: float = 0.0
    step_plane: str = ""  # where the step events are, to point at a step on the timeline
    step_track: str = ""
    step_event_index: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    evidence: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # EVIDENCE_KINDS -> items
    # Its first device's synchronizing collectives and its devices' ops against their launches, to
    # compare its clock with the other hosts' (`tpuscope.analysis.pod.clocks`).
    collective_ends: CollectiveEnds = field(default_factory=CollectiveEnds)
    launch_skew: list[LaunchSkew] = field(default_factory=list)
    # Its collective ops, one row per op (`tpuscope.analysis.pod.comms`): split by op, the same events
    # and compute as `exposed_collective_ps`.
    collectives: list[CollectiveRow] = field(default_factory=list)
    # Share of the host's own span (its first event to its last end, `_own_span`) its devices ran an op,
    # mean over them; None without devices. The same whether its file is read alone or with the others.
    duty_cycle: float | None = None

    def __len__(self) -> int:
        return len(self.step_number)

    @property
    def step_ps(self) -> np.ndarray:
        return (self.end_ps - self.start_ps).astype(np.float64)

    def part(self, name: str) -> np.ndarray:
        return self.parts[name]

    def step_evidence(self, position: int, label: str) -> dict[str, Any]:
        """Evidence pointing at one of this host's steps (its step event when it has one)."""
        item: dict[str, Any] = {
            "label": label,
            "start_ps": int(self.start_ps[position]),
            "end_ps": int(self.end_ps[position]),
            "host": self.host,
        }
        if self.step_track and position < len(self.step_event_index):
            item.update(plane=self.step_plane, track=self.step_track)
            item["event_index"] = int(self.step_event_index[position])
        return item


def host_trace(trace: Trace, host: str) -> Trace:
    """A view of `trace` holding only `host`'s planes (sharing its columns, strings and dialect)."""
    planes = [p for p in trace.planes if p.host == host]
    flows = _flows_within(trace, planes)
    return replace(trace, planes=planes, hosts=[host], flows=flows, _track_numbers=None)


def _flows_within(trace: Trace, planes: list) -> Flows:
    """The flows of `trace` between tracks of `planes`, numbered as their view numbers its tracks."""
    flows = trace.flows
    if len(flows) == 0:
        return Flows.empty()
    kept = {id(p) for p in planes}
    inside = np.array([id(t.plane) in kept for t in trace.tracks()], bool)
    renumber = np.cumsum(inside) - 1
    rows = inside[flows.source_track] & inside[flows.target_track]
    return Flows(
        renumber[flows.source_track[rows]].astype(np.int32), flows.source_event[rows],
        renumber[flows.target_track[rows]].astype(np.int32), flows.target_event[rows], flows.category[rows],
    )  # fmt: skip


def summarize_host(ctx: Context, host: str | None = None) -> HostSummary:
    """The summary of `host` (default: the trace's only host) from the context of its own planes
    (`host_trace`: the context of a pod's trace holds every host's)."""
    host = host if host is not None else (ctx.trace.hosts[0] if ctx.trace.hosts else "")
    steps = ctx.steps
    p0, p1 = ctx.periods
    names = CollectiveNames(ctx.trace.strings, ctx.trace.dialect)
    dcn = dcn_events(ctx)
    dcn_intervals = union_of(dcn)
    devices = ctx.devices
    n = len(p0)
    collective = np.zeros((len(devices), n))
    compute = np.zeros((len(devices), n))
    exposed = np.zeros((len(devices), n))
    collective_events = list(dcn)
    other_ops = []  # each device's non-collective ops, found once
    clock_events: list[tuple[Track, np.ndarray]] = []  # the first device's with collectives
    busy = [busy_intervals(device) for device in devices]  # each device's, made once for every reader
    span = _own_span(ctx.trace)
    duty: list[float] = []  # each device's share of the host's own span
    per_device = []  # each device's kind, collectives and the ops that can hide them, for the op rows
    ctx.device_busy_from(busy)  # their union, made once, for the waits below
    for row, device in enumerate(devices):
        events, ops = split_device_ops(device, names)
        clock_events = clock_events or events
        collective_events.extend(events)
        other_ops.extend(ops)
        inside = union([union_of(events), dcn_intervals]) if len(dcn_intervals[0]) else union_of(events)
        # Each part as covered time in the steps: A - (A & B) is the time of A not in B, measured
        # exactly (integer ps), without building the difference of two big sets.
        in_collectives = window_total(inside, p0, p1)
        collective[row] = in_collectives
        # Collectives that are all the device's own ops lie inside its busy time: busy & inside is inside.
        own_tracks = {id(track) for track, _ in device.events}
        within = not len(dcn_intervals[0]) and all(id(track) in own_tracks for track, _ in events)
        busy_in_collectives = in_collectives if within else window_total(intersect(busy[row], inside), p0, p1)
        busy_in = busy_coverage(device)  # its running sum made once, for the steps and the span
        compute[row] = busy_in(p0, p1) - busy_in_collectives
        if span:
            duty.append(float(busy_in(*span)[0]) / float(span[1][0] - span[0][0]))
        # Exposed: collective time no other op of the device overlaps (only ops that meet a
        # collective can hide it, and the intersection keeps only those); memory copies hide none
        # (HTA's and TraceLens' computation leaves them out). Without collectives there is nothing to
        # hide (and the device's ops are not merged a second time).
        if len(inside[0]):
            # The op rows measure each collective against this overlap, not against all of the
            # device's compute: a collective lies inside `inside`, so what hides it is the same time.
            # When each of the device's ops is a busy interval of its own (one op line running one
            # op at a time), no op overlaps a collective of it: nothing to merge to find that out.
            alone = within and len(busy[row][0]) == device.op_count
            overlap = empty() if alone else intersect(inside, union_of(names.without_copies(ops)))
            exposed[row] = in_collectives - window_total(overlap, p0, p1)
            per_device.append((device.kind, events, overlap))
        else:
            exposed[row] = in_collectives
    if not devices and len(dcn_intervals[0]):
        collective = window_total(dcn_intervals, p0, p1)[None, :].astype(np.float64)
        exposed = collective
    input_wait = input_wait_intervals(ctx)
    compile_wait = compile_wait_intervals(ctx, input_wait)
    step_ps = (p1 - p0).astype(np.float64)
    parts = {
        "compute": compute.mean(axis=0) if len(devices) else np.zeros(n),
        "collective": collective.mean(axis=0) if len(collective) else np.zeros(n),
        "input": window_total(input_wait, p0, p1).astype(np.float64),
        "compile": window_total(compile_wait, p0, p1).astype(np.float64),
    }
    parts["host"] = np.maximum(step_ps - sum(parts.values()), 0.0)
    busiest, busiest_ps = _busiest_op(ctx, other_ops)
    in_steps = (p0[:1], p1[-1:]) if n else empty()
    return HostSummary(
        host=host,
        step_source=steps.source if n else SOURCE_NONE,
        step_description=steps.description,
        step_number=steps.number.astype(np.int64),
        start_ps=p0.astype(np.int64),
        end_ps=p1.astype(np.int64),
        parts=parts,
        devices=[d.label for d in devices],
        device_collective_ps=collective if len(devices) else np.zeros((0, n)),
        device_compute_ps=compute,
        exposed_collective_ps=exposed.mean(axis=0) if len(exposed) else np.zeros(n),
        device_kind=devices[0].kind if devices else "",
        busiest_op=busiest,
        busiest_op_ps=busiest_ps,
        step_plane=steps.track.plane.name if steps.track is not None else "",
        step_track=steps.track.name if steps.track is not None else "",
        step_event_index=steps.event_index.astype(np.int64),
        collective_ends=collective_ends(clock_events, steps.number, p0, p1),
        launch_skew=launch_skew(ctx.trace),
        collectives=_collective_rows(ctx, per_device, dcn),
        duty_cycle=float(np.mean(duty)) if duty else None,
        evidence={
            "input": _longest(input_work_events(ctx), "data loading / input", in_steps),
            "host": _longest(_host_work_events(ctx, input_wait, compile_wait), "host work", in_steps),
            "compile": _longest(ctx.compiles, "compiling", in_steps),
            "compute": _longest(other_ops, "device op", in_steps),
            "collective": _longest(collective_events, "in a collective", in_steps),
        },
    )


def _own_span(trace: Trace) -> tuple[np.ndarray, np.ndarray] | None:
    """[first event start, last event end) of `trace`'s tracks as a window (the end as the readers
    measure a trace's span), None when empty: in a pod's trace, one host's own profile."""
    tracks = [t for t in trace.tracks() if len(t)]
    if not tracks:
        return None
    first = min(int(t.start_ps[0]) for t in tracks)
    last = max(int(t.start_ps[-1] + t.duration_ps.max()) for t in tracks)
    return (np.array([first]), np.array([last])) if last > first else None


def _collective_rows(ctx: Context, per_device: list, dcn: list) -> list[CollectiveRow]:
    """The host's collective op rows (`tpuscope.analysis.pod.comms`), DCN transfers hidden by any
    device's compute (where it overlaps that device's collectives, which hold every DCN transfer)."""
    if not per_device and not dcn:
        return []
    hide = union([h for _, _, h in per_device]) if per_device and dcn else empty()
    return collective_rows(per_device, dcn, hide, _code_lookup(ctx))


def _code_lookup(ctx: Context):
    """program id -> its compiled code, decoded from the trace on first use (only collectives whose
    events do not print their instruction ask)."""
    codes: list[dict] = []

    def lookup(program_id: int):
        if not codes:
            codes.append(ctx.get(PROGRAM_CODE))
        return codes[0].get(program_id)

    return lookup


def _host_work_events(
    ctx: Context, input_wait: Intervals, compile_wait: Intervals
) -> list[tuple[Track, np.ndarray]]:
    """Events directly inside the steps, on the step thread, that ran mostly while the devices were
    idle for no input or compilation: what the host did instead (logging, checkpoints, Python)."""
    steps = ctx.steps
    track = steps.track
    if track is None or track.plane.role != "host" or len(steps) == 0:
        return []
    step_depth = int(track.depth[steps.event_index].min())
    # Launch names as a lookup table by string id (string ids are small non-negative integers).
    is_launch = np.zeros(len(ctx.trace.strings), bool)
    for launch_track, launch_idx in ctx.launches:
        is_launch[launch_track.name_id[launch_idx]] = True
    # The candidates (the steps' children of positive duration that are no launch) as a mask over the
    # track: each test one pass over its columns, no index or gathered column of every child.
    durations = track.duration_ps
    candidate = track.depth == step_depth + 1
    candidate &= durations > 0
    candidate &= ~id_columns.take(is_launch, track.name_id, np.empty(len(track), bool))
    if not candidate.any():
        return []
    # The steps' span less device work, input and compile waits, measured without being built (it
    # has as many pieces as the devices ran ops): the span less the devices' busy time less the
    # (few) waits' time, each measured exactly in integer ps (`_mostly_idle`). The waits lie outside
    # the busy time already: both are made less it (`tpuscope.analysis.facts.waits`).
    p0, p1 = ctx.periods
    waits = union([input_wait, compile_wait])
    other = _Idle(int(p0[0]), int(p1[-1]), ctx.device_busy_coverage, coverage(waits))
    step = max(len(durations) // _IDLE_SAMPLE, 1)
    sample = durations[::step][candidate[::step]]
    if len(sample) > _IDLE_SAMPLE_RANK:
        # The longest mostly-idle event is among the longest candidates when any of those is mostly
        # idle (no candidate left out is longer than it); then only events of at least
        # HOST_WORK_MIN_FRACTION of it can be kept, and only those are measured (a few, of the 146k
        # children of the 1M recording).
        threshold = np.partition(sample, len(sample) - _IDLE_SAMPLE_RANK)[len(sample) - _IDLE_SAMPLE_RANK]
        longest_few = np.flatnonzero(candidate & (durations >= threshold))
        idle_few = longest_few[_mostly_idle(track, longest_few, other)]
        if len(idle_few):
            longest = int(durations[idle_few].max())
            candidate &= durations >= HOST_WORK_MIN_FRACTION * longest
    candidates = np.flatnonzero(candidate)
    keep = candidates[_mostly_idle(track, candidates, other)]
    if len(keep) == 0:
        return []
    longest = int(durations[keep].max())
    keep = keep[durations[keep] >= HOST_WORK_MIN_FRACTION * longest]
    return [(track, keep)]


@record(frozen=True)
class _Idle:
    """The window [start, end) less two disjoint sets, given by their `coverage`: the time of it in a
    window is the window's part inside [start, end) less each set's time there (exact integers)."""

    start: int
    end: int
    busy: Coverage
    waits: Coverage

    def within(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        low, high = np.maximum(starts, self.start), np.minimum(ends, self.end)
        return np.maximum(high - low, 0) - self.busy(low, high) - self.waits(low, high)


def _mostly_idle(track: Track, events: np.ndarray, idle: _Idle) -> np.ndarray:
    """Mask over `events` (of positive duration): at least HOST_WORK_OVERLAP of the event is in
    the `idle` time."""
    starts, durations = track.start_ps[events], track.duration_ps[events]
    return idle.within(starts, starts + durations) >= HOST_WORK_OVERLAP * durations


def _busiest_op(ctx: Context, ops: list[tuple[Track, np.ndarray]]) -> tuple[str, float]:
    """Of the host's non-collective device ops `ops`, the name with the most total time.

    Totalled a slice of ops at a time (`_SLICE`): the slices' name ids, durations and the float
    weights numpy makes of them are small copies, reused, where one of a track's 200k ops is fresh
    pages to fault in. Every partial sum is an integer a float64 holds exactly (below
    _EXACT_FLOAT_SUM), so summing per slice first gives the same totals as one bincount over all ops."""
    if not ops:
        return "", 0.0
    totals: np.ndarray = np.zeros(0)
    total_ps = 0
    for track, idx in ops:
        for at in range(0, len(idx), _SLICE):
            part = idx[at : at + _SLICE]
            durations = track.duration_ps[part]
            total_ps += int(durations.sum())
            counts = np.bincount(track.name_id[part], weights=durations)
            if len(counts) > len(totals):
                totals = np.concatenate([totals, np.zeros(len(counts) - len(totals))])
            totals[: len(counts)] += counts
    if total_ps >= _EXACT_FLOAT_SUM:  # sums a float64 may round: in one bincount's order, over all ops
        name_ids = np.concatenate([t.name_id[i] for t, i in ops])
        durations = np.concatenate([t.duration_ps[i] for t, i in ops])
        totals = np.bincount(name_ids, weights=durations.astype(np.float64))
    best = int(np.argmax(totals))
    return ctx.trace.strings[best], float(totals[best])


def _longest(events: list[tuple[Track, np.ndarray]], what: str, window: Intervals) -> list[dict[str, Any]]:
    """Up to MAX_EVIDENCE of the longest events that overlap the steps, as evidence items in time order."""
    if not events or len(window[0]) == 0:
        return []
    w0, w1 = int(window[0][0]), int(window[1][0])
    picked = _unique_longest(events, w0, w1)
    if picked is None:
        picked = _longest_picked(events, w0, w1)
    return [event_evidence(f"{what}: {track.event_name(event)}", track, event) for track, event in picked]


def _unique_longest(
    events: list[tuple[Track, np.ndarray]], w0: int, w1: int
) -> list[tuple[Track, int]] | None:
    """`_longest_picked`'s events where the pick cannot depend on the order the candidates come in,
    found among far fewer of them; else None.

    The pick is the MAX_EVIDENCE longest events inside [w0, w1) in time order, the longer first at
    one start: one answer whatever picks them, unless the MAX_EVIDENCE-th and the next are as long
    (which of them?) or two picked events are alike in start and length (which first?). Each track's
    candidates here are its events as long as the MAX_EVIDENCE-th longest of a larger sample
    (_UNIQUE_SAMPLE: a few thousand of 200k ops), which hold the track's MAX_EVIDENCE + 1 longest
    inside when that many of them lie inside, hence the pick and the next event."""
    found = [
        _longest_candidates(track, idx, w0, w1, _UNIQUE_SAMPLE, MAX_EVIDENCE + 1) for track, idx in events
    ]
    insides = [(s + d > w0) & (s < w1) for _, s, d in found]
    lengths = np.concatenate([d[inside] for (_, _, d), inside in zip(found, insides, strict=True)])
    if len(lengths) <= MAX_EVIDENCE:
        return None
    top = np.argpartition(-lengths, MAX_EVIDENCE)[: MAX_EVIDENCE + 1]
    next_length, last_length = np.partition(lengths[top], 1)[:2]
    if next_length == last_length:
        return None
    chosen = top[lengths[top] > next_length]
    starts = np.concatenate([s[inside] for (_, s, _), inside in zip(found, insides, strict=True)])[chosen]
    order = np.lexsort((-lengths[chosen], starts))  # by start, the longer first
    chosen, starts = chosen[order], starts[order]
    alike = (starts[1:] == starts[:-1]) & (lengths[chosen][1:] == lengths[chosen][:-1])
    if alike.any():
        return None
    ends = np.cumsum([int(inside.sum()) for inside in insides])  # past each track's candidates inside
    picked = []
    for k in chosen.tolist():
        which = int(np.searchsorted(ends, k, side="right"))
        index = found[which][0][insides[which]]
        picked.append((events[which][0], int(index[k - ends[which] + len(index)])))
    return picked


def _longest_picked(events: list[tuple[Track, np.ndarray]], w0: int, w1: int) -> list[tuple[Track, int]]:
    """Up to MAX_EVIDENCE of the longest events inside [w0, w1), in time order.

    Picked from the lengths of each track's candidates inside the window, in one array in the events'
    order, and each pick found back in its track's candidates: no columns of track numbers, indices,
    starts and ends over every candidate."""
    indices = []  # per track, its candidates inside the window
    lengths = []  # and their durations
    for track, idx in events:
        index, starts, durations = _longest_candidates(track, idx, w0, w1, _CANDIDATE_SAMPLE, MAX_EVIDENCE)
        inside = (starts + durations > w0) & (starts < w1)
        if not inside.all():
            index, durations = index[inside], durations[inside]
        indices.append(index)
        lengths.append(durations)
    length = np.concatenate(lengths)
    if len(length) > MAX_EVIDENCE:  # the longest few without sorting them all
        top = np.argpartition(-length, MAX_EVIDENCE - 1)[:MAX_EVIDENCE]
        chosen = top[np.argsort(-length[top], kind="stable")]
    else:
        chosen = np.argsort(-length, kind="stable")
    ends = np.cumsum([len(index) for index in indices])  # past each track's candidates
    picked = []
    for k in chosen.tolist():
        which = int(np.searchsorted(ends, k, side="right"))
        picked.append((events[which][0], int(indices[which][k - ends[which] + len(indices[which])])))
    return sorted(picked, key=lambda pick: int(pick[0].start_ps[pick[1]]))


def _longest_candidates(
    track: Track, idx: np.ndarray, w0: int, w1: int, sample_size: int, enough: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of the events `idx` of `track`, a few that hold its `enough` longest inside [w0, w1) (and every
    event as long as the shortest of those): all events at least as long as the MAX_EVIDENCE-th
    longest of an evenly spaced sample of `sample_size` times MAX_EVIDENCE of them, when `enough` of
    them lie inside; else all of `idx`. What `_longest` then picks from is the same, read from far
    fewer events. Returned with their starts and durations. The events' durations are compared with
    the sample's a slice at a time (`_SLICE`): no copy of every event's duration to fault in."""
    if len(idx) <= sample_size * MAX_EVIDENCE:
        return idx, track.start_ps[idx], track.duration_ps[idx]
    sample = track.duration_ps[idx[:: len(idx) // (sample_size * MAX_EVIDENCE)]]
    threshold = np.partition(sample, len(sample) - MAX_EVIDENCE)[len(sample) - MAX_EVIDENCE]
    kept_idx = np.concatenate(
        [
            part[track.duration_ps[part] >= threshold]
            for part in np.split(idx, range(_SLICE, len(idx), _SLICE))
        ]
    )
    starts = track.start_ps[kept_idx]
    kept = track.duration_ps[kept_idx]
    inside = (starts + kept > w0) & (starts < w1)
    if int(inside.sum()) >= enough:
        return kept_idx, starts, kept
    return idx, track.start_ps[idx], track.duration_ps[idx]
