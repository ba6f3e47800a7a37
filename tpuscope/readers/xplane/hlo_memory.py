"""The buffer assignment of one compiled XLA program, as columns, from its serialized `HloProto`.

XLA keeps, beside each module's HLO, the result of its buffer assignment (xla/service/hlo.proto,
`BufferAssignmentProto`): the logical buffers (one per value an instruction defines, with its
padded size and memory space), the buffer allocations they are packed into (parameters, outputs,
temporaries) and the heap simulator's trace of ALLOC / FREE / SHARE_WITH events in program order.
This module reads those parts, plus the shape and name of each instruction that defines a buffer,
and hands them over as the model's `ProgramBuffers` (numpy columns and a few string lists), so
that the memory analysis above never sees protobuf; the trace's dialect hands this decoder to the
model (`Dialect.decode_program_buffers`). Unpadded sizes come from the instruction's shape with
the default (untiled) layout, the same definition XProf's Memory Viewer uses (xprof/convert/
hlo_proto_to_memory_visualization_utils.cc, `ShapeUnpaddedSize`).

Bad input is expected (truncated blobs, ids that point nowhere): decoding never raises; what it
could not make sense of is listed in `notes`, and the rest is still returned.
"""

from __future__ import annotations

import numpy as np

from tpuscope.model.memory import (
    FLAG_CONSTANT,
    FLAG_ENTRY_PARAMETER,
    FLAG_MAYBE_LIVE_OUT,
    FLAG_THREAD_LOCAL,
    FLAG_TUPLE,
    ProgramBuffers,
)
from tpuscope.readers.xplane.hlo import SHAPE, format_shape
from tpuscope.readers.xplane.wire import (
    BOOL,
    INT32,
    INT64,
    MESSAGE,
    STRING,
    Field,
    Message,
    Schema,
    WireError,
    parse,
)

# Bytes per element by XLA PrimitiveType number, with the default layout (xla/primitive_util.h
# ByteWidth: sub-byte types take one byte each). TUPLE, TOKEN and OPAQUE are handled apart.
_ELEMENT_BYTES = {
    1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 2, 8: 4, 9: 8, 10: 2, 11: 4, 12: 8, 15: 8, 16: 2, 18: 16,
    19: 1, 20: 1, 21: 1, 22: 1, 23: 1, 24: 1, 25: 1, 26: 1, 27: 1, 28: 1, 29: 1, 30: 1, 31: 1, 32: 1, 33: 1,
}  # fmt: skip
_TUPLE, _OPAQUE, _TOKEN = 13, 14, 17
# A tuple's unpadded size is its index table: one pointer per element (xla/shape_util.h ByteSizeOf
# with pointer_size = sizeof(void*), as Memory Viewer calls it).
POINTER_BYTES = 8

# What is read of an HloProto for its buffers (xla/service/hlo.proto, numbers as in `hlo.proto` here):
# the module's instructions (id, name, opcode, shape, framework op) and the buffer assignment.
_OP_METADATA = Schema({2: Field("op_name", STRING)})
_INSTRUCTION = Schema(
    {
        1: Field("name", STRING),
        2: Field("opcode", STRING),
        3: Field("shape", MESSAGE, schema=SHAPE),
        7: Field("metadata", MESSAGE, schema=_OP_METADATA),
        35: Field("id", INT64),
    }
)
_COMPUTATION = Schema({2: Field("instructions", MESSAGE, repeated=True, schema=_INSTRUCTION)})
_MODULE = Schema(
    {
        1: Field("name", STRING),
        2: Field("entry_computation_name", STRING),
        3: Field("computations", MESSAGE, repeated=True, schema=_COMPUTATION),
        5: Field("id", INT64),
    }
)
_LOCATION = Schema({3: Field("shape_index", INT64, repeated=True), 4: Field("instruction_id", INT64)})
_LOGICAL_BUFFER = Schema(
    {
        1: Field("id", INT64),
        2: Field("size", INT64),
        3: Field("defined_at", MESSAGE, schema=_LOCATION),
        4: Field("color", INT64),
    }
)
_ASSIGNED = Schema({1: Field("logical_buffer_id", INT64), 2: Field("offset", INT64), 3: Field("size", INT64)})
_ALLOCATION = Schema(
    {
        1: Field("index", INT64),
        2: Field("size", INT64),
        3: Field("is_thread_local", BOOL),
        5: Field("is_entry_computation_parameter", BOOL),
        7: Field("maybe_live_out", BOOL),
        8: Field("color", INT64),
        9: Field("assigned", MESSAGE, repeated=True, schema=_ASSIGNED),
        11: Field("is_tuple", BOOL),
        12: Field("is_constant", BOOL),
    }
)
_HEAP_EVENT = Schema(
    {
        1: Field("kind", INT32),
        2: Field("buffer_id", INT64),
        4: Field("instruction_name", STRING),
        5: Field("share_with_canonical_id", INT64),
    }
)
_HEAP_TRACE = Schema({1: Field("events", MESSAGE, repeated=True, schema=_HEAP_EVENT)})
_ASSIGNMENT = Schema(
    {
        1: Field("logical_buffers", MESSAGE, repeated=True, schema=_LOGICAL_BUFFER),
        3: Field("buffer_allocations", MESSAGE, repeated=True, schema=_ALLOCATION),
        4: Field("heap_simulator_traces", MESSAGE, repeated=True, schema=_HEAP_TRACE),
    }
)
_HLO_MEMORY = Schema(
    {
        1: Field("hlo_module", MESSAGE, schema=_MODULE),
        3: Field("buffer_assignment", MESSAGE, schema=_ASSIGNMENT),
    }
)


def decode_program_buffers(blob: bytes, program_id: int | None = None) -> ProgramBuffers | None:
    """The buffer assignment in one serialized `xla.HloProto`, or None when it has none.

    None means "no memory data here" (not an HloProto, or one without a buffer assignment);
    damage inside an otherwise readable proto gives a result with `notes`. Never raises.
    """
    if not isinstance(blob, (bytes, bytearray, memoryview)) or len(blob) == 0:
        return None
    try:
        proto = parse(bytes(blob), _HLO_MEMORY)
        if not proto.has("buffer_assignment") or not proto.has("hlo_module"):
            return None
        return _columns(proto, program_id)
    except (WireError, RecursionError):
        return None


def shape_text(shape: bytes, element: int = -1) -> str:
    """An instruction's serialized shape (tuple element `element` of it; -1: all of it) with its
    layout, as XLA prints it ("" when the bytes are not a shape): `ProgramBuffers.describe_shape`."""
    try:
        proto = parse(shape, SHAPE)
        if 0 <= element < len(proto.tuple_shapes):
            proto = proto.tuple_shapes[element]
        return format_shape(proto, layout=True)
    except (WireError, RecursionError):
        return ""


def _columns(proto: Message, program_id: int | None) -> ProgramBuffers:
    module = proto.hlo_module
    assignment = proto.buffer_assignment
    notes: list[str] = []

    # Per instruction, not per event: one pass at decode.
    by_id = {instruction.id: instruction for c in module.computations for instruction in c.instructions}

    logical = assignment.logical_buffers
    n = len(logical)
    ids = np.fromiter((b.id for b in logical), np.int64, n)
    sizes = np.fromiter((b.size for b in logical), np.int64, n)
    spaces = np.fromiter((b.color for b in logical), np.int64, n)
    rows = np.full(n, -1, np.int32)
    unpadded = np.zeros(n, np.int64)
    elements = np.full(n, -1, np.int64)
    instruction_shapes: list[bytes] = []
    shape_indices: list[str] = [""] * n
    names: list[str] = []
    opcodes: list[str] = []
    framework_ops: list[str] = []
    row_of_instruction: dict[int, int] = {}
    missing = 0
    for k, buffer in enumerate(logical):
        where = buffer.defined_at
        index = list(where.shape_index)
        shape_indices[k] = "{" + ",".join(str(i) for i in index) + "}" if index else ""
        instruction = by_id.get(where.instruction_id)
        if instruction is None:
            missing += 1
            continue
        row = row_of_instruction.get(int(instruction.id))
        if row is None:
            row = row_of_instruction[int(instruction.id)] = len(names)
            names.append(instruction.name)
            opcodes.append(instruction.opcode)
            framework_ops.append(instruction.metadata.op_name)
            instruction_shapes.append(instruction.shape.raw)
        rows[k] = row
        whole = instruction.shape
        if index and 0 <= index[-1] < len(whole.tuple_shapes):
            elements[k] = index[-1]
        unpadded[k] = unpadded_bytes(_subshape(whole, index))
    if missing:
        notes.append(f"{missing} logical buffers name an instruction the module does not have")
    if (sizes < 0).any():
        notes.append(f"{int((sizes < 0).sum())} logical buffers have a negative size")

    allocations = assignment.buffer_allocations
    m = len(allocations)
    alloc_index = np.fromiter((a.index for a in allocations), np.int64, m)
    alloc_bytes = np.fromiter((a.size for a in allocations), np.int64, m)
    alloc_space = np.fromiter((a.color for a in allocations), np.int64, m)
    alloc_flags = np.fromiter((_flags(a) for a in allocations), np.int64, m)
    counts = np.fromiter((len(a.assigned) for a in allocations), np.int64, m)
    assigned = [x for a in allocations for x in a.assigned]
    total = len(assigned)
    assigned_alloc = np.repeat(np.arange(m, dtype=np.int32), counts)
    assigned_id = np.fromiter((x.logical_buffer_id for x in assigned), np.int64, total)
    assigned_offset = np.fromiter((x.offset for x in assigned), np.int64, total)
    assigned_size = np.fromiter((x.size for x in assigned), np.int64, total)
    if (alloc_bytes < 0).any():
        notes.append(f"{int((alloc_bytes < 0).sum())} buffer allocations have a negative size")

    traces = assignment.heap_simulator_traces
    lengths = np.fromiter((len(t.events) for t in traces), np.int64, len(traces))
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    events = [e for t in traces for e in t.events]
    e = len(events)
    kinds = np.fromiter((ev.kind for ev in events), np.int8, e)
    buffer_ids = np.fromiter((ev.buffer_id for ev in events), np.int64, e)
    share_with = np.fromiter((ev.share_with_canonical_id for ev in events), np.int64, e)
    event_names: list[str] = []
    name_row: dict[str, int] = {}
    event_rows = np.empty(e, np.int32)
    for k, ev in enumerate(events):
        label = ev.instruction_name
        row = name_row.get(label)
        if row is None:
            row = name_row[label] = len(event_names)
            event_names.append(label)
        event_rows[k] = row

    return ProgramBuffers(
        module_name=module.name,
        module_id=int(module.id),
        program_id=program_id,
        entry_computation=module.entry_computation_name,
        instruction_names=names,
        instruction_opcodes=opcodes,
        instruction_framework_ops=framework_ops,
        buffer_ids=ids,
        buffer_bytes=sizes,
        buffer_unpadded_bytes=unpadded,
        buffer_space=spaces,
        buffer_instruction=rows,
        buffer_shape_indices=shape_indices,
        allocation_index=alloc_index,
        allocation_bytes=alloc_bytes,
        allocation_space=alloc_space,
        allocation_flags=alloc_flags,
        assigned_allocation=assigned_alloc,
        assigned_buffer_id=assigned_id,
        assigned_offset=assigned_offset,
        assigned_bytes=assigned_size,
        trace_starts=starts,
        event_kind=kinds,
        event_buffer_id=buffer_ids,
        event_share_with=share_with,
        event_instruction=event_rows,
        event_instruction_names=event_names,
        notes=notes,
        instruction_shapes=instruction_shapes,
        buffer_element=elements,
        describe_shape=shape_text,
    )


def _flags(allocation: Message) -> int:
    return (
        FLAG_THREAD_LOCAL * allocation.is_thread_local
        | FLAG_TUPLE * allocation.is_tuple
        | FLAG_ENTRY_PARAMETER * allocation.is_entry_computation_parameter
        | FLAG_CONSTANT * allocation.is_constant
        | FLAG_MAYBE_LIVE_OUT * allocation.maybe_live_out
    )


def _subshape(shape: Message, index: list[int]) -> Message:
    """The shape of the buffer at `index` of an instruction's output.

    Memory Viewer resolves only the last element of the index against the top-level tuple
    (xprof hlo_proto_to_memory_visualization_utils.cc, `ResolveShapeIndex`); we do the same so
    that unpadded sizes agree with it, nested tuples being rare in buffer assignments.
    """
    if index and 0 <= index[-1] < len(shape.tuple_shapes):
        return shape.tuple_shapes[index[-1]]
    return shape


def unpadded_bytes(shape: Message) -> int:
    """Bytes the shape needs without tiling or padding: elements x element size (tuples: pointers)."""
    kind = shape.element_type
    if kind == _TUPLE:
        return POINTER_BYTES * len(shape.tuple_shapes)
    if kind == _TOKEN:
        return 0
    if kind == _OPAQUE:
        return POINTER_BYTES
    count = 1
    for dimension in shape.dimensions:
        count *= max(int(dimension), 0)
    return count * _ELEMENT_BYTES.get(kind, 0)
