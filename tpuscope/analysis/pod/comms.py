"""One host's collectives, op by op: how often, how many bytes, how long, and how much of it compute hid.

A collective's time is *overlapped* where an op of the same device that is neither a collective nor a
memory copy ran at the same time, and *exposed* the rest: the definitions of HTA's
communication/computation overlap (facebookresearch/HolisticTraceAnalysis,
docs/source/features/comm_comp_overlap.rst: overlapped time over communication time, memory kernels
counted as neither) and of TraceLens' `exposed_comm_time` (|comm - comp|). The host's per-step totals
are the pod table's (`HostSummary.parts["collective"]` and `exposed_collective_ps`, made from the same
events and the same compute set in `summarize_host`); the rows here split them by op. Rows add up to
more than the per-step union where collectives of one device run at the same time (async collectives
on several streams): each row counts its own time.

An async collective is a `-start` op and a `-done` op (XLA: all-gather-start ... all-gather-done). The
k-th done of a kind on a track is paired with the k-th start of that kind there (our heuristic: XLA
completes async collectives of one kind on one stream in the order it starts them); for a pair,
*in flight* is start to done's end, *waited* the done's own time (the device blocked on it: how XProf
reads async-done time, openxla/xprof xprof/convert/smart_suggestion/sparse_core_offload_rule.h) and
*slack* the time between the two ops, in which compute may run (XProf's Megascale Stats' slack).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tpuscope.analysis.facts.intervals import Intervals, window_total
from tpuscope.analysis.ops import short_op_name
from tpuscope.analysis.pod.collective_kinds import (
    ARG_COLLECTIVE,
    ARG_DTYPE,
    ARG_GROUP_SIZE,
    ARG_NELEMS,
    DCN,
    DONE,
    START,
    Kind,
    Size,
    bus_factor,
    hlo_size,
    kind_of,
    nccl_size,
)
from tpuscope.model import order_statistics
from tpuscope.model.records import record
from tpuscope.model.trace import Track
from tpuscope.model.vocabulary import Stat

# The interconnect a device kind's collectives use, where the profile tells: a TPU's collective ops run
# over ICI within a slice (DCN transfers between slices are the host's `MegaScale:` events); XLA:CPU's
# run over the host's network (gloo, MPI). A GPU profile does not say NVLink from the network.
TRANSPORT = {"TPU": "ICI", "CPU": "host", "GPU": ""}
PS_PER_US = 1e6


@record
class CollectiveRow:
    """One collective op of one host (its occurrences on every device of the host), times in ps."""

    name: str
    kind: str
    half: str  # "start", "done" or "" (a synchronous op)
    transport: str
    count: int = 0
    time_ps: float = 0.0
    overlapped_ps: float = 0.0
    bytes: float | None = None  # summed over the occurrences whose size is known
    sized: int = 0  # occurrences whose size is known
    group: int | None = None
    pairs: int = 0  # a done: the async pairs it ends
    in_flight_ps: float = 0.0
    waited_ps: float = 0.0
    slack_ps: float = 0.0
    source: str = ""

    @property
    def exposed_ps(self) -> float:
        return self.time_ps - self.overlapped_ps

    @property
    def transfer_ps(self) -> float:
        """The time the data moved in, for the sized occurrences: a pair's flight, else the op's own time."""
        if self.pairs:
            return self.in_flight_ps * (self.sized / self.count if self.count else 0.0)
        return self.time_ps * (self.sized / self.count if self.count else 0.0)

    def algbw_gbps(self) -> float | None:
        """nccl-tests' algorithm bandwidth S / t, GB/s (a start's data moves during its pair: none)."""
        if not self.bytes or self.half == START or self.transfer_ps <= 0:
            return None
        return self.bytes / (self.transfer_ps / 1e12) / 1e9

    def busbw_gbps(self) -> float | None:
        algbw, factor = self.algbw_gbps(), bus_factor(self.kind, self.group)
        return None if algbw is None or factor is None else algbw * factor

    def merged(self, other: CollectiveRow) -> CollectiveRow:
        """This row and the same op's row of another host, added up."""
        both = [b for b in (self.bytes, other.bytes) if b is not None]
        return CollectiveRow(
            self.name, self.kind, self.half, self.transport or other.transport,
            self.count + other.count, self.time_ps + other.time_ps, self.overlapped_ps + other.overlapped_ps,
            sum(both) if both else None, self.sized + other.sized,
            other.group if self.group is None else self.group,
            self.pairs + other.pairs, self.in_flight_ps + other.in_flight_ps,
            self.waited_ps + other.waited_ps, self.slack_ps + other.slack_ps, self.source or other.source,
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        def us(ps: float) -> float:
            return round(ps / PS_PER_US, 3)

        algbw, busbw = self.algbw_gbps(), self.busbw_gbps()
        row: dict[str, Any] = {
            "name": self.name,
            "kind": Kind(self.kind, self.half).label,
            "transport": self.transport or None,
            "count": self.count,
            "bytes": None if self.bytes is None else int(self.bytes),
            "bytes_per_op": None if not self.sized or self.bytes is None else int(self.bytes / self.sized),
            "group_size": self.group,
            "time_us": us(self.time_ps),
            "exposed_us": us(self.exposed_ps),
            "overlapped_us": us(self.overlapped_ps),
            "algbw_gbps": None if algbw is None else round(algbw, 3),
            "busbw_gbps": None if busbw is None else round(busbw, 3),
            "source": self.source or None,
        }
        if self.pairs:
            row.update(
                async_pairs=self.pairs,
                in_flight_us=us(self.in_flight_ps),
                waited_us=us(self.waited_ps),
                slack_us=us(self.slack_ps),
            )
        return row


# A program's compiled code by program id, looked up only for collectives whose event does not print
# its instruction (XLA:CPU and GPU name events `all-reduce.2`; a TPU's event name is the instruction).
CodeLookup = Callable[[int], Any]


def collective_rows(
    per_device: list[tuple[str, list[tuple[Track, np.ndarray]], Intervals]],
    dcn: list[tuple[Track, np.ndarray]],
    dcn_hide: Intervals,
    code: CodeLookup | None = None,
) -> list[CollectiveRow]:
    """The host's collective ops, one row per op name: `per_device` holds each device's kind, its
    collective events and the time its ops that can hide them (neither collectives nor copies) ran
    (all of it, or only where it overlaps the collectives: the same time inside each one); `dcn`
    the host's DCN transfers, hidden by `dcn_hide` (every device's compute, the same way); `code`
    the programs' code by id, for the instructions' shapes."""
    rows: dict[tuple[str, str], CollectiveRow] = {}
    for kind, events, hide in per_device:
        for track, idx in events:
            _add_track(rows, track, idx, hide, TRANSPORT.get(kind, ""), code)
    for track, idx in dcn:
        _add_track(rows, track, idx, dcn_hide, "DCN", code, forced=Kind(DCN))
    return sorted(rows.values(), key=lambda r: (-r.exposed_ps, r.name))


def display_name(name: str) -> str:
    """The row's name: an HLO op's name (`all-reduce.3`), a kernel's without its signature."""
    if " = " in name:
        return short_op_name(name)
    return name.split("(", 1)[0] if name.startswith(("nccl", "rccl")) else name


def _add_track(
    rows: dict[tuple[str, str], CollectiveRow],
    track: Track,
    idx: np.ndarray,
    hide: Intervals,
    transport: str,
    code: CodeLookup | None,
    forced: Kind | None = None,
) -> None:
    """Adds one track's collective events `idx` to `rows`, per distinct (name, launching scope): sums by
    bincount over those few groups, each read once (a kernel's kind may be its launcher's)."""
    starts = track.start_ps[idx]
    durations = track.duration_ps[idx]
    overlapped = (
        window_total(hide, starts, starts + durations) if len(hide[0]) else np.zeros(len(idx), np.int64)
    )
    scope_ids = track.stat_values(Stat.NAME_SCOPE, fill=0)
    scope = scope_ids[idx].astype(np.int64) if scope_ids is not None and scope_ids.dtype.kind in "iu" else 0
    if isinstance(scope, int) or not scope.any():  # by name alone: a dense remap, no sort
        groups, which = _dense_groups(track.name_id[idx])
    else:
        keys = track.name_id[idx].astype(np.int64) * (1 << 32) + scope
        groups, which = np.unique(keys, return_inverse=True)
        which = which.reshape(-1)
    count = np.bincount(which, minlength=len(groups))
    time = np.bincount(which, weights=durations.astype(np.float64), minlength=len(groups))
    hidden = np.bincount(which, weights=overlapped.astype(np.float64), minlength=len(groups))
    first = np.zeros(len(groups), np.int64)
    first[which[::-1]] = np.arange(len(idx))[::-1]  # each group's first event
    labels: list[tuple[str, str]] = []
    kinds: list[Kind] = []
    sizes = _nccl_sizes(track, idx)
    for k in range(len(groups)):
        event = int(idx[first[k]])
        name = track.event_name(event)
        # The group's first event's stats (its own over its metadata's): read for a few events, not
        # as whole columns.
        stats = track.all_stats(event)
        launcher, framework = _text(stats, Stat.NAME_SCOPE), _text(stats, Stat.FRAMEWORK_OP)
        said = _text(stats, ARG_COLLECTIVE)
        scope_text = " / ".join(t for t in (launcher, framework, said) if t)
        kind = forced or kind_of(name, scope_text)
        if kind.kind == "other":  # a fusion named by its category alone (`all-reduce fusion`)
            by_category = kind_of(_text(stats, Stat.OP_CATEGORY))
            kind = by_category if by_category.kind != "other" else kind
        kinds.append(kind)
        row_source = _text(stats, Stat.SOURCE)
        text = name if " = " in name else _text(stats, Stat.OP_TEXT)
        program = stats.get(Stat.PROGRAM_ID)
        if " = " not in text and code is not None and isinstance(program, int) and program > 0:
            found = code(program)
            instruction = found.get(text or name) if found is not None else None
            if instruction is not None:
                text = instruction.text
                line = instruction.source
                row_source = line.text if line is not None else ""
        size = hlo_size(text, kind.kind) if " = " in text else Size()
        key = (display_name(name), kind.label)
        labels.append(key)
        row = rows.get(key)
        if row is None:
            row = rows[key] = CollectiveRow(key[0], kind.kind, kind.half, transport)
        row.count += int(count[k])
        row.time_ps += float(time[k])
        row.overlapped_ps += float(hidden[k])
        row.group = size.group if row.group is None else row.group
        if sizes is not None:  # per occurrence, from the kernel's arguments
            mine = which == k
            known = ~np.isnan(sizes[0][mine])
            if known.any():
                row.bytes = (row.bytes or 0.0) + float(sizes[0][mine][known].sum())
                row.sized += int(known.sum())
                group = sizes[1][mine][known]
                if row.group is None and group[0] > 0:
                    row.group = int(group[0])
        elif size.bytes:
            row.bytes = (row.bytes or 0.0) + float(size.bytes) * int(count[k])
            row.sized += int(count[k])
        row.source = row.source or row_source or _launching_op(launcher, framework)
    _pair_async(rows, track, idx, which, labels, kinds)


def _dense_groups(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True) for small non-negative ids (string ids), without sorting."""
    present = np.bincount(values)
    groups = np.flatnonzero(present)
    remap = np.zeros(len(present), np.int64)
    remap[groups] = np.arange(len(groups))
    return groups, remap[values]


def _pair_async(rows, track: Track, idx, which, labels: list[tuple[str, str]], kinds: list[Kind]) -> None:
    """Pairs the track's starts and dones of each kind in order (module docstring) and adds each pair's
    flight, wait and slack to its done's row."""
    halves = {kind.kind for kind in kinds if kind.half}
    for collective in halves:
        start_names = [k for k, kind in enumerate(kinds) if kind == Kind(collective, START)]
        done_names = [k for k, kind in enumerate(kinds) if kind == Kind(collective, DONE)]
        if not start_names or not done_names:
            continue
        s = np.flatnonzero(order_statistics.isin(which, start_names))  # positions in idx
        d = np.flatnonzero(order_statistics.isin(which, done_names))
        s = s[np.argsort(track.start_ps[idx[s]], kind="stable")]
        d = d[np.argsort(track.start_ps[idx[d]], kind="stable")]
        d = d[track.start_ps[idx[d]] >= track.start_ps[idx[s[0]]]]  # a done whose start is before the profile
        n = min(len(s), len(d))
        if n == 0:
            continue
        s, d = s[:n], d[:n]
        s_start, s_dur = track.start_ps[idx[s]], track.duration_ps[idx[s]]
        d_start, d_dur = track.start_ps[idx[d]], track.duration_ps[idx[d]]
        flight = (d_start + d_dur - s_start).astype(np.float64)
        slack = np.maximum(d_start - (s_start + s_dur), 0).astype(np.float64)
        done_which = which[d]
        for k in order_statistics.sorted_distinct(done_which):
            row = rows[labels[int(k)]]
            mine = done_which == k
            row.pairs += int(mine.sum())
            row.in_flight_ps += float(flight[mine].sum())
            row.waited_ps += float(d_dur[mine].sum())
            row.slack_ps += float(slack[mine].sum())


def _nccl_sizes(track: Track, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Bytes and group size per event from Kineto's NCCL kernel arguments (NaN bytes: not given), or
    None when the track's events carry no message size."""
    elements = track.stat_values(ARG_NELEMS)
    if elements is None:
        return None
    elements = elements[idx].astype(np.float64)
    dtype = track.stat_values(ARG_DTYPE, fill=0)
    group = track.stat_values(ARG_GROUP_SIZE)
    groups = group[idx].astype(np.float64) if group is not None else np.full(len(idx), np.nan)
    ids = dtype[idx].astype(np.int64) if dtype is not None else np.zeros(len(idx), np.int64)
    strings = track.plane.trace.strings
    per = {
        int(i): nccl_size(1.0, strings[int(i)] if i > 0 else "", 1.0).bytes
        for i in order_statistics.sorted_distinct(ids)
    }
    element_bytes = np.array([np.nan if per[int(i)] is None else per[int(i)] for i in ids], np.float64)
    return elements * element_bytes, np.nan_to_num(groups, nan=0.0)


def _text(stats: dict[str, Any], stat: str) -> str:
    """A string stat of an event's stats (`Track.all_stats`), "" where absent or not a string."""
    value = stats.get(stat)
    return value if isinstance(value, str) else ""


def _launching_op(scope: str, framework: str) -> str:
    """A kernel's launching op for the source column: the innermost c10d/NCCL op of its scope, else its
    framework op (`c10d::allreduce_`)."""
    for part in reversed(scope.split("/")):
        if part.startswith(("c10d::", "nccl:", "gloo:")):
            return part
    return framework


def merge_rows(per_host: list[list[CollectiveRow]]) -> list[CollectiveRow]:
    """The rows of every host, the same op's added up; most exposed time first."""
    merged: dict[tuple[str, str, str], CollectiveRow] = {}
    for rows in per_host:
        for row in rows:
            key = (row.name, row.kind, row.half)
            merged[key] = merged[key].merged(row) if key in merged else row
    return sorted(merged.values(), key=lambda r: (-r.exposed_ps, r.name))
