"""Damaged buffer assignments give a partial answer and a note, never an exception.

Each case starts from a real HLO proto (the TPU sample's `jit_f`) and breaks one thing the way a
truncated or inconsistent profile would.
"""

from __future__ import annotations

import pytest

from tests.conftest import TPU_TRACE, require_shared_traces
from tpuscope.analysis.memory.programs import HBM_SPACE, memory_spaces, program_memory
from tpuscope.app.opener import open_trace
from tpuscope.model.memory import EVENT_FREE
from tpuscope.model.programs import hlo_proto_blobs
from tpuscope.readers.xplane import hlo_pb2
from tpuscope.readers.xplane.hlo_memory import decode_program_buffers


@pytest.fixture(scope="module")
def jit_f_blob() -> bytes:
    require_shared_traces()
    trace = open_trace(TPU_TRACE)
    blobs = dict(hlo_proto_blobs(trace))
    return blobs[12190760917235803885]


def _healthy(blob: bytes):
    return program_memory(decode_program_buffers(blob, 1), HBM_SPACE)


def _edit(blob: bytes, change) -> bytes:
    proto = hlo_pb2.HloMemoryProto.FromString(blob)
    change(proto)
    return proto.SerializeToString()


def test_the_untouched_proto_has_no_notes(jit_f_blob):
    memory = _healthy(jit_f_blob)
    assert memory.notes == [] and memory.peak_heap_bytes == 20480 * (1 << 20) + 32


def test_missing_logical_buffer_is_skipped_with_a_note(jit_f_blob):
    def drop_first_traced(proto):
        traced = {e.buffer_id for t in proto.buffer_assignment.heap_simulator_traces for e in t.events}
        keep = [b for b in proto.buffer_assignment.logical_buffers if b.id not in sorted(traced)[:1]]
        del proto.buffer_assignment.logical_buffers[:]
        proto.buffer_assignment.logical_buffers.extend(keep)

    memory = program_memory(decode_program_buffers(_edit(jit_f_blob, drop_first_traced), 1), HBM_SPACE)
    assert any("not logical buffers" in n for n in memory.notes)
    assert 0 < memory.peak_heap_bytes <= _healthy(jit_f_blob).peak_heap_bytes


def test_free_without_alloc_is_noted(jit_f_blob):
    def free_first(proto):
        trace = max(proto.buffer_assignment.heap_simulator_traces, key=lambda t: len(t.events))
        first = trace.events[0].buffer_id
        events = list(trace.events)
        del trace.events[:]
        trace.events.add(kind=EVENT_FREE, buffer_id=first)
        trace.events.extend(events)

    memory = program_memory(decode_program_buffers(_edit(jit_f_blob, free_first), 1), HBM_SPACE)
    assert any("not allocated" in n for n in memory.notes)
    assert memory.peak_heap_bytes == _healthy(jit_f_blob).peak_heap_bytes


def test_negative_sizes_are_noted(jit_f_blob):
    def negative(proto):
        proto.buffer_assignment.logical_buffers[0].size = -5
        proto.buffer_assignment.buffer_allocations[0].size = -7

    buffers = decode_program_buffers(_edit(jit_f_blob, negative), 1)
    assert any("negative size" in n for n in buffers.notes)
    for space in memory_spaces(buffers):
        program_memory(buffers, space)


def test_unknown_instructions_and_dangling_events(jit_f_blob):
    def break_links(proto):
        del proto.hlo_module.computations[:]
        trace = proto.buffer_assignment.heap_simulator_traces[-1]
        trace.events.add(kind=0, buffer_id=987654321)

    memory = program_memory(decode_program_buffers(_edit(jit_f_blob, break_links), 1), HBM_SPACE)
    assert any("instruction the module does not have" in n for n in memory.notes)
    assert memory.buffers_at_peak == []


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9, 0.99])
def test_truncated_proto_never_raises(jit_f_blob, keep):
    cut = jit_f_blob[: int(len(jit_f_blob) * keep)]
    buffers = decode_program_buffers(cut, 1)
    if buffers is not None:
        for space in memory_spaces(buffers) or [HBM_SPACE]:
            program_memory(buffers, space)


def test_not_a_proto():
    assert decode_program_buffers(b"\xff\xff\xff garbage", 1) is None
    assert decode_program_buffers(b"", 1) is None
