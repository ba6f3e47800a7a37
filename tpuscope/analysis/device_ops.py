"""Which events are device ops, per device, and when each device was busy.

A "device" is what executes programs:
- each device plane (TPU core, GPU): its tracks of kind DEVICE_OPS (TPU op lines; one track per
  CUDA/HIP stream on GPUs, holding kernels and copies), as the reader marked them;
- for CPU-only runs, the host itself: XLA:CPU runs each HLO op as a "thunk" on host threads, and the
  profiler records it there as an event named after the op that carries the op-text stat
  (`Stat.OP_TEXT`; seen in JAX CPU captures and in PyTorch/XLA CPU profiles).

CPU thunks are used only when no device plane holds ops: on GPU runs the host's kernel *launch*
events carry the op text too, and they are not device time.

Busy time is the union of op intervals (ops overlap across GPU streams and CPU threads, and nest on
one line), computed with sorted numpy arrays, never a Python loop over events.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from tpuscope.analysis.facts.intervals import (
    Coverage,
    canonical,
    coverage,
    union,
    union_in_place,
    window_total,
)  # fmt: skip
from tpuscope.analysis.facts.intervals import merge_intervals as merge_intervals  # its former home
from tpuscope.model.records import record
from tpuscope.model.trace import Plane, Trace, Track
from tpuscope.model.vocabulary import KIND_HOST_CPU, ROLE_HOST, Stat, TrackKind

HLO_OP_STAT = Stat.OP_TEXT  # XLA:CPU thunk events and GPU kernels name their op in this stat


@record(eq=False)
class Device:
    """One executor of device ops, with the events that are its ops.

    `events` pairs each track with the indices of its op events (all of them on TPU/GPU lines,
    only the thunk events on host threads).
    """

    name: str  # "/device:TPU:0", or "host:<hostname> CPU" for a CPU-only run
    kind: str  # "TPU", "GPU" or "CPU"
    host: str
    plane: Plane
    events: list[tuple[Track, np.ndarray]] = field(default_factory=list)
    # `busy_intervals`, with the time columns they were made from (a trace whose clocks are aligned
    # gets new columns): every figure and rule asks for them, made once per device.
    _busy: tuple[list[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    # `busy_coverage`, with the busy intervals it measures.
    _busy_coverage: tuple[np.ndarray, Coverage] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def label(self) -> str:
        return self.name if self.kind == "CPU" else f"{self.host} {self.name}"

    @property
    def op_count(self) -> int:
        return int(sum(len(idx) for _, idx in self.events))

    @property
    def tracks(self) -> list[Track]:
        return [t for t, _ in self.events]


def device_op_tracks(plane: Plane) -> list[Track]:
    """The tracks of a device plane that hold device ops (empty tracks included)."""
    if plane.is_device:
        return plane.tracks_of_kind(TrackKind.DEVICE_OPS)
    return []


def cpu_thunk_events(plane: Plane) -> list[tuple[Track, np.ndarray]]:
    """Host-thread events that execute XLA:CPU thunks (they carry the op-text stat)."""
    found = []
    for track in plane.tracks:
        column = track.stats.column(HLO_OP_STAT)
        if column is None or len(track) == 0:
            continue
        rows = column.present_rows(len(track))
        if len(rows):
            found.append((track, rows))
    return found


def find_devices(trace: Trace) -> list[Device]:
    """All devices of the trace that ran ops, ordered by host, kind and index.

    Device planes count when one of their op tracks has events; with none, each host whose
    threads ran XLA:CPU thunks is one CPU device.
    """
    devices = []
    for plane in trace.device_planes():
        tracks = [t for t in device_op_tracks(plane) if len(t)]
        if tracks:
            events = [(t, np.arange(len(t), dtype=np.int64)) for t in tracks]
            devices.append(Device(plane.name, plane.kind, plane.host, plane, events))
    if devices:
        return devices
    for plane in trace.planes:
        if plane.role == ROLE_HOST and plane.kind == KIND_HOST_CPU:
            events = cpu_thunk_events(plane)
            if events:
                devices.append(Device(f"host:{plane.host} CPU", "CPU", plane.host, plane, events))
    return devices


def op_intervals(device: Device) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (ps, trace time) of every op event of the device, unsorted across tracks."""
    if not device.events:
        empty = np.empty(0, np.int64)
        return empty, empty
    starts = np.concatenate([t.start_ps[idx] for t, idx in device.events])
    ends = np.concatenate([t.end_ps[idx] for t, idx in device.events])
    return starts, ends


def busy_intervals(device: Device) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint, sorted intervals (ps) during which the device ran at least one op (made once per
    device and its tracks' time columns; callers must not write into them)."""
    columns = [column for track, _ in device.events for column in (track.start_ps, track.duration_ps)]
    kept = device._busy
    if kept is not None and len(kept[0]) == len(columns):
        if all(a is b for a, b in zip(kept[0], columns, strict=True)):
            return kept[1]
    found = _op_union(device.events)
    for array in found:
        array.flags.writeable = False  # shared by every caller
    device._busy = (columns, found)  # two threads may both make it: the same intervals
    return found


def busy_coverage(device: Device) -> Coverage:
    """The `coverage` of the device's busy intervals (its busy ps in any windows), its running sum made
    once per device with them: the pod summary, the step breakdown, the duty cycles and the rules all
    measure the same set, a million ops' sum each."""
    busy = busy_intervals(device)
    kept = device._busy_coverage
    if kept is not None and kept[0] is busy[0]:
        return kept[1]
    measure = coverage(busy)
    device._busy_coverage = (busy[0], measure)  # two threads may both make it: the same sums
    return measure


def _op_union(events: list[tuple[Track, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The union of the op intervals `events` (canonical: the one form a set has).

    The intervals are written into one block of its own, the starts and the ends its two rows: no
    per-track copies to concatenate, and one allocation, which numpy backs with huge pages from 4 MB
    on (fresh pages to fault in are most of the cost of a million ops' set). Each track's ops are in
    start order (the model's invariant, and the indices are taken in order), so one track's set is
    made without a sort (`canonical`), and several tracks' by a union of sorted runs sorted in place
    (`union_in_place`): no argsort and no gather over all the device's ops. Where a track's ops nest
    or overlap (its ends out of order), each track's own set is merged first, for that sort."""
    total = sum(len(idx) for _, idx in events)
    block = np.empty((2, total), np.int64)
    starts, ends = block
    at = 0
    pieces = []
    apart = True
    for track, idx in events:
        own_starts, own_ends = starts[at : at + len(idx)], ends[at : at + len(idx)]
        _gather(track.start_ps, idx, own_starts)
        _gather(track.duration_ps, idx, own_ends)
        own_ends += own_starts
        at += len(idx)
        pieces.append((own_starts, own_ends))
        apart = apart and (len(events) == 1 or bool((own_starts[1:] >= own_ends[:-1]).all()))
    if len(pieces) == 1:
        return canonical(starts, ends)
    if apart:
        return union_in_place(starts, ends)
    return union([canonical(*piece) for piece in pieces])


def _gather(column: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
    """out[:] = column[idx], without the gathered copy where the types agree ("wrap" reads every index
    that indexing reads the same, negative ones too, and spares `np.take` the buffer it fills first in
    its default mode)."""
    if column.dtype == out.dtype:
        np.take(column, idx, out=out, mode="wrap")
    else:
        out[:] = column[idx]


def busy_in_windows(
    busy_starts: np.ndarray, busy_ends: np.ndarray, window_starts: np.ndarray, window_ends: np.ndarray
) -> np.ndarray:
    """Busy ps inside each window [w0, w1), for disjoint sorted busy intervals: `window_total`
    (the cumulative busy time B(t), piecewise linear, found by searchsorted: B(w1) - B(w0))."""
    return window_total((busy_starts, busy_ends), window_starts, window_ends)


@record(frozen=True)
class DeviceActivity:
    """How busy one device was over a window of the profile."""

    device: Device
    busy_ps: int
    window_start_ps: int
    window_end_ps: int
    first_op_ps: int | None
    last_op_end_ps: int | None

    @property
    def window_ps(self) -> int:
        return self.window_end_ps - self.window_start_ps

    @property
    def idle_ps(self) -> int:
        return max(self.window_ps - self.busy_ps, 0)

    @property
    def duty_cycle(self) -> float:
        """Fraction of the window the device spent running ops (0..1)."""
        return self.busy_ps / self.window_ps if self.window_ps > 0 else 0.0


def device_activity(
    device: Device, window_start_ps: int | None = None, window_end_ps: int | None = None
) -> DeviceActivity:
    """Busy time and duty cycle of `device`; the window defaults to the whole profile."""
    trace = device.plane.trace
    w0 = 0 if window_start_ps is None else int(window_start_ps)
    w1 = trace.duration_ps if window_end_ps is None else int(window_end_ps)
    starts, ends = busy_intervals(device)
    busy = int(busy_coverage(device)(np.array([w0]), np.array([w1]))[0])
    first = int(starts[0]) if len(starts) else None
    last = int(ends[-1]) if len(ends) else None
    return DeviceActivity(device, busy, w0, w1, first, last)


def select_devices(devices: list[Device], which: str | int | None) -> list[Device]:
    """Devices chosen by `which`: None/"all" = every one, an int = that position in `devices`,
    or a kind ("TPU", "GPU", "CPU") = all devices of that kind."""
    if which is None or (isinstance(which, str) and which.lower() == "all"):
        return list(devices)
    if isinstance(which, str) and not which.lstrip("-").isdigit():
        return [d for d in devices if d.kind == which.upper()]
    position = int(which)
    if not 0 <= position < len(devices):
        return []
    return [devices[position]]
