"""Memory data a profile carries, as columns: programs' buffer assignments and allocator events.

Two sources, both written by XLA and read the way XProf reads them:

- Each compiled program's `HloProto` on `/host:metadata` holds its buffer assignment, decoded by
  `tpuscope.readers.xplane.hlo_memory` (what XProf's Memory Viewer shows).
- The host-threads plane `/host:CPU` holds instant events `MemoryAllocation` / `MemoryDeallocation`
  that the runtime's BFC allocator writes (xla/tsl/framework/bfc_allocator.cc, `AddTraceMe`), each
  with the allocator's state after the call as stats (what XProf's Memory Profile shows;
  xprof/convert/xplane_to_memory_profile.cc).

The format's plane, event and stat names come from the reader's dialect (tpuscope.readers.xplane.dialect);
everything returned is numpy columns and plain strings, computed once per trace and kept on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tpuscope.model.programs import hlo_proto_blobs
from tpuscope.model.trace import Trace, Track
from tpuscope.model.vocabulary import Stat
from tpuscope.readers.xplane import dialect
from tpuscope.readers.xplane.hlo_memory import ProgramBuffers, decode_program_buffers

# The format's names live with the reader (tpuscope.readers.xplane.dialect); the names used here say what
# each one means: which allocator (its name, else the device it serves: XProf's memory id), bytes
# reserved for programs ("stack"), allocated (heap in use), available (free), the allocator's own
# lifetime peak, and per allocation its size, address, op, step group and shape.
ALLOCATION_EVENT = dialect.MEMORY_ALLOCATION_EVENT
DEALLOCATION_EVENT = dialect.MEMORY_DEALLOCATION_EVENT
HOST_THREADS_PLANE = dialect.HOST_THREADS_PLANE
ALLOCATOR_NAME_STAT = dialect.ALLOCATOR_NAME_STAT
ALLOCATOR_INDEX_STATS = dialect.ALLOCATOR_INDEX_STATS
RESERVED_STAT = dialect.BYTES_RESERVED_STAT
ALLOCATED_STAT = dialect.BYTES_ALLOCATED_STAT
AVAILABLE_STAT = dialect.BYTES_AVAILABLE_STAT
FRAGMENTATION_STAT = dialect.FRAGMENTATION_STAT
PEAK_IN_USE_STAT = dialect.PEAK_BYTES_IN_USE_STAT
REQUESTED_STAT = dialect.REQUESTED_BYTES_STAT
ALLOCATION_BYTES_STAT = dialect.ALLOCATION_BYTES_STAT
ADDRESS_STAT = dialect.ADDRESS_STAT
OP_STAT = Stat.FRAMEWORK_OP
STEP_STAT = Stat.STEP_GROUP
SHAPE_STAT = dialect.SHAPE_STAT
DEVICE_MEMORY_SIZE_STAT = dialect.DEVICE_MEMORY_SIZE_STAT

_PROGRAMS_ATTRIBUTE = "_tpuscope_program_buffers"
_ALLOCATIONS_ATTRIBUTE = "_tpuscope_allocation_events"


@dataclass
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
    """program id -> buffer assignment of every program whose HLO proto carries one.

    Programs without one (or with an unreadable proto) are left out. Computed once per trace.
    """
    cached = vars(trace).get(_PROGRAMS_ATTRIBUTE)
    if cached is None:
        cached = {}
        for program_id, blob in hlo_proto_blobs(trace):
            buffers = decode_program_buffers(blob, program_id)
            if buffers is not None:
                cached[program_id] = buffers
        vars(trace)[_PROGRAMS_ATTRIBUTE] = cached
    return cached


def allocation_events(trace: Trace) -> list[AllocationEvents]:
    """The allocator events of each host that has any (one entry per host). Computed once per trace."""
    cached = vars(trace).get(_ALLOCATIONS_ATTRIBUTE)
    if cached is None:
        cached = []
        for plane in trace.planes:
            if plane.name == HOST_THREADS_PLANE:
                events = _plane_events(trace, plane.tracks, plane.host)
                if events is not None:
                    cached.append(events)
        vars(trace)[_ALLOCATIONS_ATTRIBUTE] = cached
    return cached


def device_memory_sizes(trace: Trace) -> list[int]:
    """The memory size each device plane reports about itself (bytes), where it does."""
    sizes = []
    for plane in trace.device_planes():
        value = plane.stats.get(DEVICE_MEMORY_SIZE_STAT)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            sizes.append(int(value))
    return sizes


def _plane_events(trace: Trace, tracks: list[Track], host: str) -> AllocationEvents | None:
    alloc_id = trace.strings.id_of(ALLOCATION_EVENT)
    free_id = trace.strings.id_of(DEALLOCATION_EVENT)
    wanted = np.array([i for i in (alloc_id, free_id) if i is not None], np.int32)
    if len(wanted) == 0:
        return None
    parts: list[dict[str, np.ndarray]] = []
    used: list[Track] = []
    for track in tracks:
        rows = np.flatnonzero(np.isin(track.name_id, wanted))
        if len(rows) == 0:
            continue
        parts.append(_track_columns(track, rows, len(used), alloc_id))
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
    track: Track, rows: np.ndarray, track_number: int, alloc_id: int | None
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

    fragmentation = track.stat_values(FRAGMENTATION_STAT, fill=np.nan)
    return {
        "memory_key": _memory_keys(track, rows, trace),
        "time_ps": track.start_ps[rows].astype(np.int64),
        "is_allocation": track.name_id[rows] == (alloc_id if alloc_id is not None else -1),
        "reserved": ints(RESERVED_STAT),
        "allocated": ints(ALLOCATED_STAT),
        "available": ints(AVAILABLE_STAT),
        "fragmentation": (
            np.full(len(rows), np.nan) if fragmentation is None else fragmentation[rows].astype(np.float64)
        ),
        "peak_in_use": ints(PEAK_IN_USE_STAT),
        "requested": ints(REQUESTED_STAT),
        "allocation_bytes": ints(ALLOCATION_BYTES_STAT),
        "address": ints(ADDRESS_STAT),
        "op": string_ids(OP_STAT),
        "shape": string_ids(SHAPE_STAT),
        "step": ints(STEP_STAT),
        "track": np.full(len(rows), track_number, np.int32),
        "event_index": rows.astype(np.int64),
    }


def _memory_keys(track: Track, rows: np.ndarray, trace: Trace) -> np.ndarray:
    """XProf's memory id of each event: the `allocator_name` stat, else `index_on_host` / `device_ordinal`."""
    keys = np.full(len(rows), "", dtype=object)
    have = np.zeros(len(rows), dtype=bool)
    named = track.stats.column(ALLOCATOR_NAME_STAT)
    if named is not None and named.kind == "str":
        present = named.present(len(track))[rows]
        ids = named.dense(len(track), -1)[rows]
        for string_id in np.unique(ids[present]):  # a handful of allocators, not per event
            keys[present & (ids == string_id)] = trace.strings[int(string_id)]
        have |= present
    for stat in ALLOCATOR_INDEX_STATS:
        picked = _int_stat(track, stat, rows)
        fill = ~have & (picked >= 0)
        for number in np.unique(picked[fill]):
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
