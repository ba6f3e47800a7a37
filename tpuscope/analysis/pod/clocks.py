"""Clocks across hosts: is one host's clock visibly off the others', and by how much.

A collective that every host joins (all-reduce, all-gather, a barrier) synchronizes them: no host
can leave it before the last one has entered. So, on true time, every host's instance of the same
collective overlaps the others'. A host whose instances, on the recorded times, lie wholly before
or after the other hosts' (it left before the others entered, or entered after they left), time
after time, has a clock that is off: no schedule explains it. Healthy runs, whose hosts' clocks
agree, never show it, however unevenly the hosts arrive, so the check raises no false alarm; a
host that is merely late overlaps the others (they wait for it inside the collective).

Its offset is measured as the median, over the matched instances, of how much later the host's
instance ends than the other hosts' median end of the same instance (instances end at nearly the
same true time). The data are small (each host's collective instances: name, step, occurrence,
start and end, `CollectiveEnds`), made per host by `collective_ends` and compared by
`estimate_offsets`, a pure function: one trace of every host and the host-by-host path give the
same answer.

And a device whose ops start before the host launches that started them (flows launch -> device
op, `tpuscope.model.flows`) has a clock that is off its host's: `launch_skew` measures how far.
"""

from __future__ import annotations

import re
from dataclasses import field, replace

import numpy as np

from tpuscope.analysis.results import Result
from tpuscope.model import order_statistics
from tpuscope.model.records import record
from tpuscope.model.trace import Trace, Track
from tpuscope.model.vocabulary import EventClass

# Collectives that synchronize every participant: not the `-start` half of an async pair (it ends
# once the transfer is issued), nor the `-done` half, nor point-to-point transfers (XLA's send/recv
# and collective-permute, NCCL's SendRecv/Send/Recv kernels, which pipeline between pairs of ranks).
_NOT_SYNCHRONIZING = re.compile(
    r"-(start|done)\b|^%?(send|recv|collective-permute)|^(nccl|rccl)\w*?_(SendRecv|Send|Recv)_", re.IGNORECASE
)
# At most this many instances per host are kept, the first ones: a few hundred numbers (5 per
# instance, 20 KB a host) measure an offset, and a summary stays small for 256 hosts.
MAX_INSTANCES = 512
# A host's clock is judged from at least this many instances it shares with the other hosts (our
# heuristic: a few steps' worth, so that one odd instance cannot make a finding).
MIN_MATCHED_INSTANCES = 5
# ... and is visibly off when at least this share of them lie wholly outside the other hosts'
# (our heuristic: most of them; on agreeing clocks it is none), and its offset is at least this many
# times the spread of its per-instance differences (our heuristic: the same offset every time).
MIN_DISJOINT_SHARE = 0.5
MIN_OFFSET_TO_SPREAD = 3.0
# Device ops counted as starting before their launch only by more than this (our heuristic: clock
# reading granularity and the launch event's own start rounding, 1 us).
LAUNCH_SKEW_TOLERANCE_PS = 1_000_000
# ... and only when at least this many flows and this share of them do (our heuristic).
MIN_SKEWED_FLOWS = 5
MIN_SKEWED_SHARE = 0.1


@record
class CollectiveEnds:
    """One host's synchronizing collective instances (parallel int64 arrays, trace time in ps)."""

    names: list[str] = field(default_factory=list)  # distinct names; `name_index` points into it
    name_index: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    step: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # step number, -1 outside
    occurrence: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # within (name, step)
    start_ps: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    end_ps: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    def __len__(self) -> int:
        return len(self.end_ps)

    def shifted(self, offset_ps: int) -> CollectiveEnds:
        if offset_ps == 0:
            return self
        return replace(self, start_ps=self.start_ps + offset_ps, end_ps=self.end_ps + offset_ps)


def collective_ends(
    events: list[tuple[Track, np.ndarray]], step_number: np.ndarray, step_start: np.ndarray,
    step_end: np.ndarray,
) -> CollectiveEnds:  # fmt: skip
    """The synchronizing instances among one device's collective `events`, each given the step it
    starts in (the host's steps: numbers, period starts and ends) and its occurrence in that step."""
    if not events:
        return CollectiveEnds()
    name_ids = np.concatenate([t.name_id[i] for t, i in events]).astype(np.int64)
    starts = np.concatenate([t.start_ps[i] for t, i in events]).astype(np.int64)
    ends = starts + np.concatenate([t.duration_ps[i] for t, i in events]).astype(np.int64)
    distinct, name_index = np.unique(name_ids, return_inverse=True)
    strings = events[0][0].plane.trace.strings  # the name ids' table: an event's name is its string
    names = [strings[int(i)] for i in distinct]
    keep_name = np.array([not _NOT_SYNCHRONIZING.search(n) for n in names], bool)
    keep = keep_name[name_index]
    order = np.argsort(starts, kind="stable")
    order = order[keep[order]][:MAX_INSTANCES]
    name_index, starts, ends = name_index[order], starts[order], ends[order]
    step = np.full(len(starts), -1, np.int64)
    if len(step_start):
        at = np.searchsorted(step_start, starts, side="right") - 1
        inside = (at >= 0) & (starts < step_end[np.maximum(at, 0)])
        step[inside] = np.asarray(step_number, np.int64)[at[inside]]
    occurrence = _occurrence(name_index, step)
    return CollectiveEnds(names, name_index.astype(np.int64), step, occurrence, starts, ends)


def _occurrence(name_index: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Each instance's rank among the instances of its (name, step), in the given (start) order."""
    n = len(name_index)
    if n == 0:
        return np.empty(0, np.int64)
    key = name_index.astype(np.int64) * (int(step.max(initial=0)) + 2) + (step + 1)
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    first = np.r_[0, np.flatnonzero(np.diff(sorted_key)) + 1]
    group_start = np.repeat(first, np.diff(np.r_[first, n]))
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - group_start
    return rank


@record
class HostClock:
    """One host's clock against the other hosts' (ps; positive: its clock reads later)."""

    host: str
    offset_ps: float
    matched: int  # instances it shares with the other hosts
    disjoint: int  # of them, those wholly before or after the other hosts' instance
    spread_ps: float  # the median absolute deviation of its per-instance differences

    @property
    def visibly_off(self) -> bool:
        return (
            self.matched >= MIN_MATCHED_INSTANCES
            and self.disjoint >= MIN_DISJOINT_SHARE * self.matched
            and abs(self.offset_ps) >= MIN_OFFSET_TO_SPREAD * self.spread_ps
        )


@record
class ClockEstimate:
    """Every host's clock against the others'; `off`: the hosts whose clock is visibly off."""

    hosts: list[HostClock]
    reference: str  # whose clock the offsets are measured against: "worker0's", "the other hosts'"

    @property
    def off(self) -> list[HostClock]:
        return [h for h in self.hosts if h.visibly_off]

    def offsets_ps(self) -> dict[str, int]:
        """The shift that puts each visibly-off host's times on the others' clock (minus its offset)."""
        return {h.host: -round(h.offset_ps) for h in self.off}


def estimate_offsets(per_host: list[tuple[str, CollectiveEnds]]) -> ClockEstimate:
    """Each host's clock offset from the others' (a pure function of the hosts' small data, in pod
    order). With two hosts the first is the reference; with more, each host is measured against
    the median of the others, so one host that is off does not move the others' estimates."""
    hosts = [h for h, _ in per_host]
    if len(per_host) < 2:
        return ClockEstimate([], "")
    # Instances keyed by (name, step, occurrence) across hosts; instances outside any step only for
    # names every host has as often (else their occurrences may not be the same instance).
    name_ids: dict[str, int] = {}
    columns = []
    for row, (_, ends) in enumerate(per_host):
        global_name = np.array([name_ids.setdefault(n, len(name_ids)) for n in ends.names], np.int64)
        columns.append((np.full(len(ends), row), global_name[ends.name_index] if len(ends) else
                        np.empty(0, np.int64), ends))  # fmt: skip
    outside_counts = np.zeros((len(hosts), len(name_ids)), np.int64)
    for rows, names, ends in columns:
        if len(rows):
            np.add.at(outside_counts[int(rows[0])], names[ends.step < 0], 1)
    same_count = (outside_counts == outside_counts[:1]).all(axis=0)
    host_row = np.concatenate([c[0] for c in columns]).astype(np.int64)
    name = np.concatenate([c[1] for c in columns]).astype(np.int64)
    step = np.concatenate([c[2].step for c in columns])
    occurrence = np.concatenate([c[2].occurrence for c in columns])
    starts = np.concatenate([c[2].start_ps for c in columns]).astype(np.float64)
    ends_ = np.concatenate([c[2].end_ps for c in columns]).astype(np.float64)
    usable = (step >= 0) | same_count[name] if len(name) else np.empty(0, bool)
    host_row, starts, ends_ = host_row[usable], starts[usable], ends_[usable]
    name, step, occurrence = name[usable], step[usable], occurrence[usable]
    key = np.empty(0, np.int64)
    if len(name):  # (name, step, occurrence) as one integer: a 1-D unique, not a sort of rows
        steps, occurrences = int(step.max()) + 2, int(occurrence.max()) + 1
        packed = (name * steps + (step + 1)) * occurrences + occurrence
        key = np.unique(packed, return_inverse=True)[1].reshape(-1)
    width = int(key.max()) + 1 if len(key) else 0
    start = np.full((len(hosts), width), np.nan)
    end = np.full((len(hosts), width), np.nan)
    start[host_row, key], end[host_row, key] = starts, ends_
    if len(hosts) == 2:
        return ClockEstimate([_clock(hosts[0], start[0], end[0], start[1], end[1], reference=True),
                              _clock(hosts[1], start[1], end[1], start[0], end[0])],
                             f"{hosts[0]}'s")  # fmt: skip
    others_start, others_end = _others_nanmedian(start), _others_nanmedian(end)
    found = [_clock(host, start[k], end[k], others_start[k], others_end[k]) for k, host in enumerate(hosts)]
    return ClockEstimate(found, "the other hosts'")


def _others_nanmedian(values: np.ndarray) -> np.ndarray:
    """Row k: the column medians of every row but k, ignoring NaN (`_nanmedian` of the others, for
    all k at once: each column sorted once, then each row's median read around its own place, so
    256 hosts cost one sort instead of 256 medians of 255 rows)."""
    rows, width = values.shape
    order = np.argsort(values, axis=0, kind="stable")  # NaN sort last
    ordered = np.take_along_axis(values, order, axis=0)
    present = ~np.isnan(values)
    count = present.sum(axis=0)  # per column
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(rows)[:, None].repeat(width, axis=1), axis=0)
    rank = np.where(present, rank, rows)  # an absent row removes nothing
    n = count[None, :] - present  # the others' count, per row and column
    low, high = (n - 1) // 2, n // 2

    def at(position: np.ndarray) -> np.ndarray:
        index = np.clip(position + (position >= rank), 0, rows - 1)
        return np.take_along_axis(ordered, index, axis=0)

    with np.errstate(all="ignore"):
        median = (at(np.maximum(low, 0)) + at(np.maximum(high, 0))) / 2
    return np.where(n > 0, median, np.nan)


def _nanmedian(values: np.ndarray) -> np.ndarray:
    """Column medians ignoring missing hosts; NaN where no host has the instance."""
    present = ~np.isnan(values)
    out = np.full(values.shape[1], np.nan)
    some = present.any(axis=0)
    if some.any():
        out[some] = order_statistics.nanmedian_columns(values[:, some])
    return out


def _clock(host: str, start, end, other_start, other_end, reference: bool = False) -> HostClock:
    matched = ~np.isnan(end) & ~np.isnan(other_end)
    count = int(matched.sum())
    if count == 0 or reference:
        return HostClock(host, 0.0, count, 0, 0.0)
    difference = end[matched] - other_end[matched]
    disjoint = (end[matched] < other_start[matched]) | (start[matched] > other_end[matched])
    offset = float(order_statistics.median(difference))
    spread = float(order_statistics.median(np.abs(difference - offset)))
    return HostClock(host, offset, count, int(disjoint.sum()), spread)


@record
class LaunchSkew:
    """Device ops of one device that start before the host launch that started them."""

    device: str
    flows: int  # launch -> op flows into the device
    early: int  # of them, ops starting more than LAUNCH_SKEW_TOLERANCE_PS before their launch
    offset_ps: int  # how far the device's ops are early at most (the shift that puts them after)

    @property
    def visibly_off(self) -> bool:
        return self.early >= MIN_SKEWED_FLOWS and self.early >= MIN_SKEWED_SHARE * self.flows


def launch_skew(trace: Trace) -> list[LaunchSkew]:
    """Per device plane that launch flows point into, how its ops' starts stand against their launches'."""
    flows = trace.flows
    if len(flows) == 0:
        return []
    tracks = trace.track_list()
    source_start = np.empty(len(flows), np.int64)
    target_start = np.empty(len(flows), np.int64)
    is_launch = np.zeros(len(flows), bool)  # flows from a sync or a callback say nothing of clocks
    for number in order_statistics.sorted_distinct(flows.source_track).tolist():
        rows = flows.source_track == number
        events = flows.source_event[rows]
        source_start[rows] = tracks[number].start_ps[events]
        classes = trace.classes_of(tracks[number].name_id[events])
        is_launch[rows] = (classes & np.uint32(EventClass.LAUNCH)) > 0
    plane_of = np.empty(len(flows), np.int64)
    planes = {id(p): k for k, p in enumerate(trace.planes)}
    for number in order_statistics.sorted_distinct(flows.target_track).tolist():
        rows = flows.target_track == number
        target_start[rows] = tracks[number].start_ps[flows.target_event[rows]]
        plane_of[rows] = planes[id(tracks[number].plane)]
    lead = source_start - target_start  # > 0: the op started before its launch
    found = []
    for k in order_statistics.sorted_distinct(plane_of).tolist():
        plane = trace.planes[k]
        if not plane.is_device:
            continue
        mine = lead[(plane_of == k) & is_launch]
        if len(mine) == 0:
            continue
        early = mine > LAUNCH_SKEW_TOLERANCE_PS
        offset = int(mine.max(initial=0)) if early.any() else 0
        found.append(LaunchSkew(plane.name, len(mine), int(early.sum()), offset))
    return found


# The shift applied to each host when the trace was loaded (empty: the recorded times).
APPLIED_SHIFTS: Result[dict[str, int]] = Result("applied_clock_shifts", lambda analysis: {})
