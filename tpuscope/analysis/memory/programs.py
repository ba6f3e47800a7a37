"""Where one compiled program's memory goes: heap along the program order, its peak, what is live there.

The input is a program's buffer assignment (`ProgramBuffers`, from the compiler's own record of
it), so the answer is static: what XLA planned, not what the allocator saw at run time (that is
`memory_over_time`). The numbers follow the definitions of XProf's Memory Viewer (xprof/convert/
hlo_proto_to_memory_visualization_utils.cc) so that both tools agree to the byte:

- the heap is replayed from the heap-simulator trace of the memory space (ALLOC adds a buffer,
  FREE removes it when its last sharer is gone, SHARE_WITH reuses a freed buffer's memory);
- buffers whose allocation lives for the whole program (parameters, maybe-live-out outputs and
  constants) are not in that trace; each such allocation adds its size to every point of the
  heap, in both the padded and the unpadded curve; thread-local allocations (per-thread scratch)
  are not device heap and are left out;
- padded sizes are the compiler's (tiles included); unpadded sizes are the shape's bytes without
  layout padding.

Damaged assignments (a buffer id that does not exist, a buffer freed twice, a heap that goes
negative) make XProf give up; here they give the rest of the answer and a note saying what was off.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.memory import (
    EVENT_ALLOC,
    EVENT_FREE,
    EVENT_SHARE_WITH,
    FLAG_CONSTANT,
    FLAG_ENTRY_PARAMETER,
    FLAG_MAYBE_LIVE_OUT,
    FLAG_THREAD_LOCAL,
    FLAG_TUPLE,
    ProgramBuffers,
)
from tpuscope.model.records import record

# XLA's memory space numbers (the `color` of a buffer, `S(n)` in a layout): 0 is the default device
# memory (HBM on TPU and GPU); 5 is host memory (xla/layout.h, `Layout::kHostMemorySpace`).
HBM_SPACE = 0
HOST_SPACE = 5
_SPACE_NAMES = {HBM_SPACE: "HBM", HOST_SPACE: "host"}
_INDEFINITE = FLAG_THREAD_LOCAL | FLAG_ENTRY_PARAMETER | FLAG_CONSTANT | FLAG_MAYBE_LIVE_OUT
# Lives for the whole program and takes device memory: thread-local allocations are per-thread
# scratch outside the device heap, which XProf 2.24's Memory Viewer and XLA's total allocation
# bytes leave out as well.
_WHOLE_PROGRAM = FLAG_ENTRY_PARAMETER | FLAG_CONSTANT | FLAG_MAYBE_LIVE_OUT


def memory_space_name(space: int) -> str:
    return _SPACE_NAMES.get(int(space), f"memory space {int(space)}")


@record(frozen=True)
class PeakBuffer:
    """One buffer live at the program's peak."""

    buffer_id: int
    name: str  # defining instruction with its shape index: `copy-start{0}`
    bytes: int
    unpadded_bytes: int
    shape: str
    defined_by: str  # the HLO instruction that defines it
    op_code: str
    framework_op: str  # the framework op the instruction came from (its metadata op_name)
    category: str  # Parameter, Output, Thread-local, Constant or Temporary

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "bytes": self.bytes,
            "unpadded_bytes": self.unpadded_bytes,
            "shape": self.shape,
            "defined_by": self.defined_by,
            "category": self.category,
            "op_code": self.op_code,
            "framework_op": self.framework_op,
            "buffer_id": self.buffer_id,
        }


@record
class ProgramMemory:
    """One program's memory in one memory space."""

    name: str
    module_name: str
    program_id: int | None
    memory_space: int
    peak_heap_bytes: int
    peak_unpadded_heap_bytes: int
    peak_position: int  # index into heap_bytes
    peak_instruction: str  # the instruction the heap simulator was at when the peak was reached
    heap_bytes: np.ndarray  # heap size before each heap-simulator event, then after the last
    unpadded_heap_bytes: np.ndarray
    position_instructions: list[str]  # the instruction at each point of heap_bytes ("" after the last)
    buffers_at_peak: list[PeakBuffer]  # whole-program buffers first, then the rest in program order
    parameter_bytes: int
    output_bytes: int
    temporary_bytes: int
    whole_program_bytes: int  # allocations alive for the whole program, added to every heap point
    total_allocation_bytes: int
    capacity_bytes: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def memory_space_name(self) -> str:
        return memory_space_name(self.memory_space)

    @property
    def padding_bytes(self) -> int:
        return self.peak_heap_bytes - self.peak_unpadded_heap_bytes

    def buffers_largest_first(self) -> list[PeakBuffer]:
        return sorted(self.buffers_at_peak, key=lambda b: -b.bytes)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "program_id": self.program_id,
            "module_name": self.module_name,
            "memory_space": self.memory_space,
            "memory_space_name": self.memory_space_name,
            "peak_heap_bytes": self.peak_heap_bytes,
            "peak_unpadded_heap_bytes": self.peak_unpadded_heap_bytes,
            "capacity_bytes": self.capacity_bytes,
            "peak_position": self.peak_position,
            "peak_instruction": self.peak_instruction,
            "heap_points": int(len(self.heap_bytes)),
            "parameter_bytes": self.parameter_bytes,
            "output_bytes": self.output_bytes,
            "temporary_bytes": self.temporary_bytes,
            "whole_program_bytes": self.whole_program_bytes,
            "total_allocation_bytes": self.total_allocation_bytes,
            "buffers_at_peak": [b.to_json() for b in self.buffers_largest_first()],
            "notes": list(self.notes),
        }


def memory_spaces(buffers: ProgramBuffers) -> list[int]:
    """The memory spaces a program uses (allocations with bytes, or heap events), HBM first."""
    spaces = set(
        order_statistics.sorted_distinct(buffers.allocation_space[buffers.allocation_bytes > 0]).tolist()
    )
    return sorted(spaces, key=lambda s: (s != HBM_SPACE, s))


def program_memory(buffers: ProgramBuffers, memory_space: int = HBM_SPACE) -> ProgramMemory:
    """The heap of `buffers`' program in `memory_space` along its program order, and its peak."""
    notes = list(buffers.notes)
    index = _BufferIndex(buffers, notes)
    in_space = buffers.allocation_space == memory_space
    flags = buffers.allocation_flags

    chosen = _choose_trace(buffers, index, memory_space, in_space)
    replay = _replay(buffers, index, chosen, notes)

    whole_program, peak_buffers = 0, []
    thread_local = (flags & FLAG_THREAD_LOCAL) != 0
    for row in np.flatnonzero(in_space & ~thread_local & ((flags & _WHOLE_PROGRAM) != 0)):
        best = index.largest_assigned(int(row))
        if best is not None:
            whole_program += int(buffers.allocation_bytes[row])
            peak_buffers.append(index.peak_buffer(best))
    peak_buffers += [index.peak_buffer(index.row_of_id[b]) for b in replay.peak_live]

    def total(mask: np.ndarray) -> int:
        return int(buffers.allocation_bytes[in_space & mask].sum())

    heap = replay.heap + whole_program
    unpadded = replay.unpadded + whole_program
    position_names = [buffers.event_instruction_names[i] for i in replay.instruction_rows] + [""]
    if len(replay.heap) == 0:
        position_names = []
    peak_instruction = position_names[replay.peak_position] if position_names else ""
    return ProgramMemory(
        name=buffers.name,
        module_name=buffers.module_name,
        program_id=buffers.program_id,
        memory_space=int(memory_space),
        peak_heap_bytes=int(replay.peak + whole_program),
        peak_unpadded_heap_bytes=int(replay.peak_unpadded + whole_program),
        peak_position=replay.peak_position,
        peak_instruction=peak_instruction,
        heap_bytes=heap,
        unpadded_heap_bytes=unpadded,
        position_instructions=position_names,
        buffers_at_peak=peak_buffers,
        parameter_bytes=total((flags & FLAG_ENTRY_PARAMETER) != 0),
        output_bytes=total((flags & FLAG_MAYBE_LIVE_OUT) != 0),
        temporary_bytes=total((flags & _INDEFINITE) == 0),
        whole_program_bytes=whole_program,
        total_allocation_bytes=total(~thread_local),
        notes=notes,
    )


def category_of(flags: int) -> str:
    """An allocation's category, by the first flag that applies (Memory Viewer's order)."""
    if flags & FLAG_ENTRY_PARAMETER:
        return "Parameter"
    if flags & FLAG_MAYBE_LIVE_OUT:
        return "Output"
    if flags & FLAG_THREAD_LOCAL:
        return "Thread-local"
    if flags & FLAG_CONSTANT:
        return "Constant"
    return "Temporary"


def is_reusable(flags: int) -> bool:
    return not flags & (FLAG_THREAD_LOCAL | FLAG_TUPLE)


class _BufferIndex:
    """The logical buffers that can be resolved: assigned to an allocation, defined by a known instruction."""

    def __init__(self, buffers: ProgramBuffers, notes: list[str]):
        self.buffers = buffers
        row_of_buffer_id: dict[int, int] = {}
        for row, buffer_id in enumerate(buffers.buffer_ids.tolist()):
            row_of_buffer_id[buffer_id] = row
        self.row_of_id: dict[int, int] = {}
        self.allocation_of_row: dict[int, int] = {}
        unknown = 0
        for allocation, buffer_id in zip(
            buffers.assigned_allocation.tolist(), buffers.assigned_buffer_id.tolist(), strict=True
        ):
            found = row_of_buffer_id.get(buffer_id)
            if found is None or buffers.buffer_instruction[found] < 0:
                unknown += 1
                continue
            self.row_of_id[buffer_id] = found
            self.allocation_of_row[found] = allocation
        if unknown:
            notes.append(
                f"{unknown} assigned buffers are not logical buffers of a known instruction; left out"
            )

    def largest_assigned(self, allocation: int) -> int | None:
        """Row of the largest resolvable buffer assigned to `allocation` (None: none above 0 bytes)."""
        b = self.buffers
        best, best_bytes = None, 0
        for buffer_id in b.assigned_buffer_id[b.assigned_allocation == allocation].tolist():
            row = self.row_of_id.get(buffer_id)
            if row is not None and b.buffer_bytes[row] > best_bytes:
                best, best_bytes = row, int(b.buffer_bytes[row])
        return best

    def peak_buffer(self, row: int) -> PeakBuffer:
        b = self.buffers
        instruction = int(b.buffer_instruction[row])
        allocation = self.allocation_of_row.get(row, -1)
        flags = int(b.allocation_flags[allocation]) if allocation >= 0 else 0
        defined_by = b.instruction_names[instruction]
        return PeakBuffer(
            buffer_id=int(b.buffer_ids[row]),
            name=defined_by + b.buffer_shape_indices[row],
            bytes=int(b.buffer_bytes[row]),
            unpadded_bytes=int(b.buffer_unpadded_bytes[row]),
            shape=b.buffer_shape(row),
            defined_by=defined_by,
            op_code=b.instruction_opcodes[instruction],
            framework_op=b.instruction_framework_ops[instruction],
            category=category_of(flags),
        )


def _choose_trace(buffers: ProgramBuffers, index: _BufferIndex, space: int, in_space: np.ndarray) -> int:
    """The heap-simulator trace of a memory space, or -1.

    A trace belongs to the allocation of its first event's buffer (the trace's own
    `buffer_allocation_index` is not reliable, as XProf notes); the space's trace is that of its
    first temporary allocation that has one, else the trace with most events in the space.
    """
    trace_of_allocation: dict[int, int] = {}
    for trace in range(buffers.trace_count):
        start, end = int(buffers.trace_starts[trace]), int(buffers.trace_starts[trace + 1])
        if start == end:
            continue
        row = index.row_of_id.get(int(buffers.event_buffer_id[start]))
        if row is not None:
            trace_of_allocation[index.allocation_of_row[row]] = trace
    for allocation in np.flatnonzero(in_space & ((buffers.allocation_flags & _INDEFINITE) == 0)).tolist():
        if allocation in trace_of_allocation:
            return trace_of_allocation[allocation]
    best, best_count = -1, 0
    rows = np.array([index.row_of_id.get(i, -1) for i in buffers.event_buffer_id.tolist()], np.int64)
    in_color = (rows >= 0) & (buffers.buffer_space[np.maximum(rows, 0)] == space)
    for trace in range(buffers.trace_count):
        count = int(in_color[buffers.trace_starts[trace] : buffers.trace_starts[trace + 1]].sum())
        if count > best_count:
            best, best_count = trace, count
    return best


@record
class _Replay:
    heap: np.ndarray
    unpadded: np.ndarray
    instruction_rows: list[int]
    peak: int
    peak_unpadded: int
    peak_position: int
    peak_live: list[int]


def _replay(buffers: ProgramBuffers, index: _BufferIndex, trace: int, notes: list[str]) -> _Replay:
    """Replays one heap-simulator trace: the heap before each event, then after the last.

    A buffer shared with another (SHARE_WITH) counts once, under the buffer it shares; it leaves
    the heap when the last of its sharers is freed. The loop is per heap-simulator event (one per
    buffer the compiler placed, thousands at most), over plain ints.
    """
    empty = np.empty(0, np.int64)
    if trace < 0:
        return _Replay(empty, empty, [], 0, 0, 0, [])
    start, end = int(buffers.trace_starts[trace]), int(buffers.trace_starts[trace + 1])
    kinds = buffers.event_kind[start:end].tolist()
    ids = buffers.event_buffer_id[start:end].tolist()
    shares = buffers.event_share_with[start:end].tolist()
    sizes = buffers.buffer_bytes.tolist()
    unpadded_sizes = buffers.buffer_unpadded_bytes.tolist()
    row_of_id = index.row_of_id

    references: dict[int, int] = {}
    shared_with: dict[int, int] = {}
    added_at: list[int] = []  # per event: the buffer id it put in the heap, or -1
    removed_at: list[int] = []  # per event: the buffer id it took out of the heap, or -1
    heap_points: list[int] = []
    unpadded_points: list[int] = []
    heap = unpadded = peak = peak_unpadded = position = 0
    unknown = freed_twice = negative = 0
    seen_allocations: set[int] = set()

    def root(buffer_id: int) -> int:
        hops = 0
        while buffer_id in shared_with and hops < len(shared_with) + 1:
            buffer_id, hops = shared_with[buffer_id], hops + 1
        return buffer_id

    for k in range(len(kinds)):
        heap_points.append(heap)
        unpadded_points.append(unpadded)
        added_at.append(-1)
        removed_at.append(-1)
        buffer_id = ids[k]
        row = row_of_id.get(buffer_id)
        if row is None:
            unknown += 1
            continue
        seen_allocations.add(index.allocation_of_row[row])
        kind = kinds[k]
        added = None
        if kind == EVENT_ALLOC:
            owner = root(buffer_id)
            references[owner] = references.get(owner, 0) + 1
            added = buffer_id
        elif kind == EVENT_FREE:
            owner = root(buffer_id)
            left = references.get(owner, 0) - 1
            if left < 0:  # freed while not allocated: the event is skipped, the count stays at 0
                freed_twice += 1
                continue
            references[owner] = left
            if left == 0:
                owner_row = row_of_id[owner]
                heap -= sizes[owner_row]
                unpadded -= unpadded_sizes[owner_row]
                removed_at[k] = owner
                if heap < 0:
                    negative += 1
        elif kind == EVENT_SHARE_WITH:
            canonical = shares[k]
            if canonical not in row_of_id:
                unknown += 1
                continue
            shared_with[buffer_id] = canonical
            owner = root(canonical)
            references[owner] = references.get(owner, 0) + 1
            if references[owner] == 1:
                added = canonical
        if added is not None:
            added_row = row_of_id[added]
            heap += sizes[added_row]
            unpadded += unpadded_sizes[added_row]
            added_at[k] = added
            if heap > peak:
                peak, peak_unpadded, position = heap, unpadded, k
    heap_points.append(heap)
    unpadded_points.append(unpadded)

    if unknown:
        notes.append(f"{unknown} heap-simulator events name a buffer the assignment does not have; skipped")
    if freed_twice:
        notes.append(f"{freed_twice} heap-simulator events free a buffer that is not allocated; skipped")
    if negative:
        notes.append("the heap-simulator trace frees more than it allocated (the heap went below zero)")
    if len(seen_allocations) > 1:
        notes.append(f"the heap-simulator trace spans {len(seen_allocations)} buffer allocations, not one")
    live: dict[int, None] = {}  # the heap at the peak, in the order buffers entered it
    for k in range(position + 1 if peak > 0 else 0):
        if removed_at[k] >= 0:
            live.pop(removed_at[k], None)
        if added_at[k] >= 0:
            live[added_at[k]] = None
    peak_live = list(live)
    instruction_rows = buffers.event_instruction[start:end].tolist()
    return _Replay(
        np.array(heap_points, np.int64),
        np.array(unpadded_points, np.int64),
        instruction_rows,
        peak,
        peak_unpadded,
        position,
        peak_live,
    )
