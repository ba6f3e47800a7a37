"""The hand-written wire reader (`wire.py`) against protobuf itself, the oracle, on the same bytes.

Messages are built and serialized by protobuf (the generated `hlo_pb2`, a test dependency), and the
real HLO protos of the shared profiles are read both ways: every field the reader reads must come
out as protobuf reads it, and bytes protobuf refuses as damaged must raise `WireError`.
"""

from __future__ import annotations

import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import GPU_TRACE, PTXLA_TRACE, TPU_TRACE, require_shared_traces
from tpuscope.app.opener import open_trace
from tpuscope.model.programs import hlo_proto_blobs
from tpuscope.readers.xplane import hlo, hlo_memory, hlo_pb2
from tpuscope.readers.xplane._linedecode import message_fields
from tpuscope.readers.xplane.wire import INT32, INT64, MESSAGE, STRING, Field, Schema, WireError, parse

INT64_VALUES = st.integers(-(2**63), 2**63 - 1)
SHAPES = st.recursive(
    st.builds(
        lambda kind, dims, dynamic, minor, memory_space: hlo_pb2.ShapeProto(
            element_type=kind,
            dimensions=dims,
            is_dynamic_dimension=dynamic[: len(dims)],
            layout=hlo_pb2.LayoutProto(minor_to_major=minor, memory_space=memory_space),
        ),
        st.integers(0, 40),
        st.lists(INT64_VALUES, max_size=5),
        st.lists(st.booleans(), max_size=5),
        st.lists(st.integers(0, 7), max_size=4),
        INT64_VALUES,
    ),
    lambda inner: st.lists(inner, max_size=3).map(
        lambda shapes: hlo_pb2.ShapeProto(element_type=hlo_pb2.TUPLE, tuple_shapes=shapes)
    ),
    max_leaves=8,
)


def _same_shape(ours, theirs) -> None:
    assert ours.element_type == theirs.element_type
    assert list(ours.dimensions) == list(theirs.dimensions)
    assert list(ours.is_dynamic_dimension) == list(theirs.is_dynamic_dimension)
    assert ours.has("layout") == theirs.HasField("layout")
    assert list(ours.layout.minor_to_major) == list(theirs.layout.minor_to_major)
    assert ours.layout.memory_space == theirs.layout.memory_space
    assert len(ours.tuple_shapes) == len(theirs.tuple_shapes)
    for a, b in zip(ours.tuple_shapes, theirs.tuple_shapes, strict=True):
        _same_shape(a, b)


@settings(max_examples=200, deadline=None)
@given(SHAPES)
def test_shapes_read_as_protobuf_reads_them(shape):
    data = shape.SerializeToString()
    _same_shape(parse(data, hlo.SHAPE), hlo_pb2.ShapeProto.FromString(data))
    assert hlo_memory.shape_text(data) == hlo.format_shape(parse(data, hlo.SHAPE), layout=True)


@settings(max_examples=100, deadline=None)
@given(SHAPES, SHAPES)
def test_a_singular_message_seen_twice_is_their_merge(first, second):
    """protobuf merges a message field's occurrences; so does the reader (the two parameters'
    bytes concatenated: `result` twice)."""
    one = hlo_pb2.ProgramShapeProto(result=first).SerializeToString()
    two = hlo_pb2.ProgramShapeProto(result=second).SerializeToString()
    theirs = hlo_pb2.ProgramShapeProto.FromString(one + two)
    schema = Schema({2: Field("result", MESSAGE, schema=hlo.SHAPE)})
    _same_shape(parse(one + two, schema).result, theirs.result)


def test_numbers_unpacked_and_packed_negative_and_wide():
    schema = Schema({
        1: Field("many", INT64, repeated=True),
        2: Field("one", INT64),
        3: Field("small", INT32),
    })  # fmt: skip
    # Field 1 packed (2 = length-delimited), then one more element unpacked; field 2 seen twice (the
    # last wins); field 3 an int32 written as a ten-byte negative varint.
    minus_one = b"\xff" * 9 + b"\x01"
    data = b"\x0a\x03\x01\x96\x01" + b"\x08\x05" + b"\x10\x07" + b"\x10" + minus_one + b"\x18" + minus_one
    message = parse(data, schema)
    assert message.many == [1, 150, 5]
    assert message.one == -1
    assert message.small == -1


def test_unknown_fields_and_wire_types_not_their_own_are_skipped():
    schema = Schema({1: Field("name", STRING), 2: Field("id", INT64)})
    data = (
        b"\x1d\x01\x02\x03\x04"  # field 3, fixed32: unknown
        b"\x21"
        + b"\x00" * 8  # field 4, fixed64: unknown
        + b"\x08\x05"  # field 1 as a varint: not a string's wire type, so unknown
        + b"\x12\x01x"  # field 2 length-delimited: not an int64's, so unknown
        + b"\x0a\x02ok"
    )
    message = parse(data, schema)
    assert message.name == "ok"
    assert message.id == 0


@pytest.mark.parametrize(
    "data",
    [
        b"\x0a\x05abc",  # a length past the end
        b"\x08\xff",  # the bytes end inside a varint
        b"\x00\x01",  # field number 0
        b"\x0f\x01",  # wire type 7
        b"\x08" + b"\xff" * 11,  # a varint longer than ten bytes
        b"\x0a\x02\xc3\x28",  # a string that is not UTF-8
    ],
)
def test_damage_protobuf_refuses_raises(data):
    schema = Schema({1: Field("name", STRING)})
    with pytest.raises(DecodeError):
        hlo_pb2.HloModuleProto.FromString(data)
    with pytest.raises(WireError):
        parse(data, schema)


def test_type_names_are_the_schemas_enum():
    enum = hlo_pb2.DESCRIPTOR.enum_types_by_name["PrimitiveType"]
    own_words = {0: "invalid", 13: "tuple", 14: "opaque", 17: "token"}
    for value in enum.values:
        assert hlo.type_name(value.number) == own_words.get(value.number, value.name.lower())


@pytest.fixture(scope="module")
def real_blobs():
    require_shared_traces()
    return [
        (pid, blob)
        for path in (TPU_TRACE, GPU_TRACE, PTXLA_TRACE)
        for pid, blob in hlo_proto_blobs(open_trace(path))
    ]


def test_real_signatures_are_protobufs(real_blobs):
    for program_id, blob in real_blobs:
        theirs = hlo_pb2.HloProto.FromString(blob).hlo_module
        ours = hlo.decode_program_signature(blob, program_id)
        assert ours is not None
        assert (ours.module_name, ours.module_id, ours.entry_computation) == (
            theirs.name,
            theirs.id,
            theirs.entry_computation_name,
        )
        assert ours.parameter_names == list(theirs.host_program_shape.parameter_names)
        assert ours.parameters == [
            hlo.format_shape(parse(p.SerializeToString(), hlo.SHAPE))
            for p in theirs.host_program_shape.parameters
        ]


def test_real_buffer_assignments_are_protobufs(real_blobs):
    checked = 0
    for program_id, blob in real_blobs:
        theirs = hlo_pb2.HloMemoryProto.FromString(blob)
        ours = hlo_memory.decode_program_buffers(blob, program_id)
        assert ours is not None
        logical = theirs.buffer_assignment.logical_buffers
        assert ours.buffer_ids.tolist() == [b.id for b in logical]
        assert ours.buffer_bytes.tolist() == [b.size for b in logical]
        assert ours.buffer_space.tolist() == [b.color for b in logical]
        allocations = theirs.buffer_assignment.buffer_allocations
        assert ours.allocation_bytes.tolist() == [a.size for a in allocations]
        assert ours.assigned_offset.tolist() == [x.offset for a in allocations for x in a.assigned]
        events = [e for t in theirs.buffer_assignment.heap_simulator_traces for e in t.events]
        assert ours.event_kind.tolist() == [e.kind for e in events]
        assert ours.event_buffer_id.tolist() == [e.buffer_id for e in events]
        by_id = {i.id: i for c in theirs.hlo_module.computations for i in c.instructions}
        for row, buffer in enumerate(logical):
            instruction = by_id[buffer.defined_at.instruction_id]
            at = int(ours.buffer_instruction[row])
            assert ours.instruction_names[at] == instruction.name
            assert ours.instruction_opcodes[at] == instruction.opcode
            assert ours.instruction_framework_ops[at] == instruction.metadata.op_name
            checked += 1
    assert checked > 100


def test_the_c_field_walk_reports_wanted_fields_where_they_lie():
    """`message_fields`: (tag, value, 0) per wanted varint, (tag, start, stop) per wanted length-
    delimited field, offsets in the whole buffer; others stepped over; a span outside the buffer
    and damage inside it are ValueErrors, never a read past its end."""
    data = b"xx" + b"\x08\x96\x01" + b"\x12\x02ab" + b"\x18\x05" + b"\x25\x00\x00\x00\x00"
    wanted = bytes([0, 1, 1, 0, 1])  # fields 1, 2 and 4 (field 4 is fixed32: stepped over)
    assert message_fields(data, 2, len(data), wanted) == [1 << 3, 150, 0, 2 << 3 | 2, 7, 9]
    assert message_fields(data, 2, 2, wanted) == []
    with pytest.raises(ValueError):
        message_fields(data, 2, len(data) + 1, wanted)
    with pytest.raises(ValueError):
        message_fields(data, 2, 6, wanted)  # cuts the string field
    with pytest.raises(ValueError):
        message_fields(b"\x0b\x01", 0, 2, wanted)  # a group
