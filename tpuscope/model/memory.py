"""Memory data a profile carries, as columns: programs' buffer assignments and allocator events.

Two sources, both written by XLA and read the way XProf reads them:

- Each compiled program's proto (XPlane: the `HloProto` on `/host:metadata`) holds its buffer
  assignment, decoded by the reader's `Dialect.decode_program_buffers` into `ProgramBuffers`
  (what XProf's Memory Viewer shows).
- A host plane's threads (XPlane: `/host:CPU`) hold instant events for each allocation and
  deallocation that the runtime's BFC allocator writes (xla/tsl/framework/bfc_allocator.cc,
  `AddTraceMe`), each with the allocator's state after the call as stats (what XProf's Memory
  Profile shows; xprof/convert/xplane_to_memory_profile.cc).

The format's plane, event and stat names come from the trace's dialect (`Dialect.allocator_names`);
everything returned is numpy columns and plain strings. Everything here is computed anew on each
call: the shared, computed-once results are in `tpuscope.analysis.memory.report`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field

import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.programs import decode_each_program
from tpuscope.model.records import record
from tpuscope.model.trace import Trace, Track
from tpuscope.model.vocabulary import AllocatorNames, Stat

# The neutral stats of an allocation: the framework op that asked for it and its step group.
OP_STAT = Stat.FRAMEWORK_OP
STEP_STAT = Stat.STEP_GROUP

# Heap-simulator event kinds of `ProgramBuffers.event_kind` (xla/service/hlo.proto
# HeapSimulatorTrace.Event.Kind).
EVENT_ALLOC, EVENT_FREE, EVENT_SHARE_WITH = 0, 1, 2

# Allocation flags of `ProgramBuffers.allocation_flags`, one bit each (xla/service/hlo.proto
# BufferAllocationProto).
FLAG_THREAD_LOCAL = 1
FLAG_TUPLE = 2
FLAG_ENTRY_PARAMETER = 4
FLAG_CONSTANT = 8
FLAG_MAYBE_LIVE_OUT = 16


def _no_shape(shape: bytes, element: int) -> str:
    return ""


@record
class ProgramBuffers:
    """One program's buffer assignment: logical buffers, allocations and heap-simulator events.

    Logical buffers are rows of the `buffer_*` columns; `buffer_instruction` indexes the
    `instruction_*` lists (-1: the defining instruction is not in the module). Allocations are
    rows of `allocation_*`; `assigned_*` flattens every allocation's list of assigned buffers.
    Heap-simulator traces are concatenated in the `event_*` columns, trace k being rows
    `trace_starts[k]:trace_starts[k + 1]`; `event_instruction` indexes `event_instruction_names`.
    """

    module_name: str
    module_id: int
    program_id: int | None
    entry_computation: str
    instruction_names: list[str]
    instruction_opcodes: list[str]
    instruction_framework_ops: list[str]
    buffer_ids: np.ndarray
    buffer_bytes: np.ndarray
    buffer_unpadded_bytes: np.ndarray
    buffer_space: np.ndarray
    buffer_instruction: np.ndarray
    buffer_shape_indices: list[str]
    allocation_index: np.ndarray
    allocation_bytes: np.ndarray
    allocation_space: np.ndarray
    allocation_flags: np.ndarray
    assigned_allocation: np.ndarray  # row in allocation_* of each assignment
    assigned_buffer_id: np.ndarray
    assigned_offset: np.ndarray
    assigned_bytes: np.ndarray
    trace_starts: np.ndarray
    event_kind: np.ndarray
    event_buffer_id: np.ndarray
    event_share_with: np.ndarray
    event_instruction: np.ndarray
    event_instruction_names: list[str]
    notes: list[str] = field(default_factory=list)
    # Each defining instruction's shape as the reader keeps it, and the tuple element each buffer
    # takes of it (-1: the whole shape): shape text is made only for the buffers someone asks
    # about, by the reader's `describe_shape(shape, element)`.
    instruction_shapes: list[bytes] = field(default_factory=list)
    buffer_element: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    describe_shape: Callable[[bytes, int], str] = _no_shape

    @property
    def name(self) -> str:
        """The program as XProf names it: `jit_f(12190760917235803885)`."""
        return self.module_name if self.program_id is None else f"{self.module_name}({self.program_id})"

    def buffer_shape(self, row: int) -> str:
        """The shape of logical buffer `row` with its layout, as XLA prints it ("" when unknown)."""
        instruction = int(self.buffer_instruction[row])
        if instruction < 0:
            return ""
        return self.describe_shape(self.instruction_shapes[instruction], int(self.buffer_element[row]))

    @property
    def trace_count(self) -> int:
        return len(self.trace_starts) - 1

    def nbytes(self) -> int:
        arrays = [v for v in vars(self).values() if isinstance(v, np.ndarray)]
        return sum(a.nbytes for a in arrays)


@record
class AllocationEvents:
    """Every allocator event of one host, in the order the file lists them (track by track).

    `memory` indexes `memory_ids` (XProf's memory id of each event's allocator). Sizes are int64
    bytes, -1 where the event lacks the stat; `op` and `shape` are string ids into the trace's
    string table (-1: none); `step` is the event's step group (-1: none). `track` indexes `tracks`
    and `event_index` is the event's row there, for evidence and timeline highlights.
    """

    host: str
    memory_ids: list[str]
    memory: np.ndarray
    time_ps: np.ndarray
    is_allocation: np.ndarray
    reserved: np.ndarray
    allocated: np.ndarray
    available: np.ndarray
    fragmentation: np.ndarray
    peak_in_use: np.ndarray
    requested: np.ndarray
    allocation_bytes: np.ndarray
    address: np.ndarray
    op: np.ndarray
    shape: np.ndarray
    step: np.ndarray
    track: np.ndarray
    event_index: np.ndarray
    tracks: list[Track] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.time_ps)


def program_buffers(trace: Trace) -> dict[int, ProgramBuffers]:
    """program id -> buffer assignment of every program whose proto carries one.

    Programs without one (or with an unreadable proto) are left out, as is everything in a format
    that keeps no programs.
    """
    return decode_each_program(trace, trace.dialect.decode_program_buffers)


def allocation_events(trace: Trace) -> list[AllocationEvents]:
    """The allocator events of each host that has any (one entry per host)."""
    names = trace.dialect.allocator_names
    found: list[AllocationEvents] = []
    if names is None:
        return found
    for plane in trace.planes:
        if plane.name == names.plane:
            events = _plane_events(trace, plane.tracks, plane.host, names)
            if events is not None:
                found.append(events)
    return found


def device_memory_sizes(trace: Trace) -> list[int]:
    """The memory size each device plane reports about itself (bytes), where it does."""
    stat = trace.dialect.device_memory_size_stat
    sizes: list[int] = []
    if not stat:
        return sizes
    for plane in trace.device_planes():
        value = plane.stats.get(stat)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            sizes.append(int(value))
    return sizes


def _plane_events(
    trace: Trace, tracks: list[Track], host: str, names: AllocatorNames
) -> AllocationEvents | None:
    alloc_id = trace.strings.id_of(names.allocation_event)
    free_id = trace.strings.id_of(names.deallocation_event)
    wanted = np.array([i for i in (alloc_id, free_id) if i is not None], np.int32)
    if len(wanted) == 0:
        return None
    parts: list[dict[str, np.ndarray]] = []
    used: list[Track] = []
    for track in tracks:
        rows = np.flatnonzero(order_statistics.isin(track.name_id, wanted))
        if len(rows) == 0:
            continue
        parts.append(_track_columns(track, rows, len(used), alloc_id, names))
        used.append(track)
    if not parts:
        return None
    columns = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    memory_ids, memory = np.unique(columns.pop("memory_key"), return_inverse=True)
    notes = []
    unnamed = int((memory_ids == "").sum())
    if unnamed:
        notes.append(
            "some allocator events name no allocator (no allocator_name, index_on_host or device_ordinal)"
        )
    return AllocationEvents(
        host=host,
        memory_ids=[str(m) for m in memory_ids],
        memory=memory.astype(np.int32),
        tracks=used,
        notes=notes,
        **columns,
    )


def _track_columns(
    track: Track, rows: np.ndarray, track_number: int, alloc_id: int | None, names: AllocatorNames
) -> dict[str, np.ndarray]:
    """The stats of the allocator events at `rows` of one track, as columns."""
    trace = track.plane.trace

    def ints(name: str) -> np.ndarray:
        return _int_stat(track, name, rows)

    def string_ids(name: str) -> np.ndarray:
        column = track.stats.column(name)
        if column is None or column.kind != "str":
            return np.full(len(rows), -1, np.int32)
        return column.dense(len(track), -1)[rows].astype(np.int32)

    fragmentation = track.stat_values(names.fragmentation_stat, fill=np.nan)
    return {
        "memory_key": _memory_keys(track, rows, trace, names),
        "time_ps": track.start_ps[rows].astype(np.int64),
        "is_allocation": track.name_id[rows] == (alloc_id if alloc_id is not None else -1),
        "reserved": ints(names.bytes_reserved_stat),
        "allocated": ints(names.bytes_allocated_stat),
        "available": ints(names.bytes_available_stat),
        "fragmentation": (
            np.full(len(rows), np.nan) if fragmentation is None else fragmentation[rows].astype(np.float64)
        ),
        "peak_in_use": ints(names.peak_bytes_in_use_stat),
        "requested": ints(names.requested_bytes_stat),
        "allocation_bytes": ints(names.allocation_bytes_stat),
        "address": ints(names.address_stat),
        "op": string_ids(OP_STAT),
        "shape": string_ids(names.shape_stat),
        "step": ints(STEP_STAT),
        "track": np.full(len(rows), track_number, np.int32),
        "event_index": rows.astype(np.int64),
    }


def _memory_keys(track: Track, rows: np.ndarray, trace: Trace, names: AllocatorNames) -> np.ndarray:
    """XProf's memory id of each event: the allocator's name stat, else its index stats (XPlane:
    `allocator_name`, else `index_on_host` / `device_ordinal`)."""
    keys = np.full(len(rows), "", dtype=object)
    have = np.zeros(len(rows), dtype=bool)
    named = track.stats.column(names.allocator_name_stat)
    if named is not None and named.kind == "str":
        present = named.present(len(track))[rows]
        ids = named.dense(len(track), -1)[rows]
        for string_id in order_statistics.sorted_distinct(ids[present]):  # a handful of allocators
            keys[present & (ids == string_id)] = trace.strings[int(string_id)]
        have |= present
    for stat in names.allocator_index_stats:
        picked = _int_stat(track, stat, rows)
        fill = ~have & (picked >= 0)
        for number in order_statistics.sorted_distinct(picked[fill]):
            keys[fill & (picked == number)] = str(int(number))
        have |= fill
    return keys.astype(str)


def _int_stat(track: Track, name: str, rows: np.ndarray) -> np.ndarray:
    """An integer stat at `rows` as int64, -1 where absent (read through float64, exact below 2**53,
    so that signed, unsigned and narrowed columns all come back the same way)."""
    values = track.stat_values(name, fill=np.nan)
    if values is None:
        return np.full(len(rows), -1, np.int64)
    picked = values[rows]
    out = np.full(len(rows), -1, np.int64)
    present = np.isfinite(picked)
    out[present] = picked[present].astype(np.int64)
    return out
