"""Values of every varint length (1 to 10 bytes, negatives included) read the same through the line decoder's
wide reader (read_value_varint in _wire.h) as protobuf reads them, on a regular and an irregular line, at the
end of the buffer too; a value cut by its field's length is a malformed file, not a value."""

from __future__ import annotations

import numpy as np
import pytest

from tpuscope.readers.xplane.decode import MalformedXSpace, decode_line
from tpuscope.readers.xplane.xplane_pb2 import XLine

# One value for each varint length: 7 bits more per byte, then the 10-byte negatives.
VALUES = [0, 1, 127, 128, 2**14, 2**21 + 3, 2**28 - 1, 2**35, 2**42 + 7, 2**49, 2**56 - 1, 2**56, 2**62,
          2**63 - 1, -1, -(2**63), -12345]  # fmt: skip


def _line(irregular: bool) -> XLine:
    line = XLine(id=1, name="XLA Ops")
    for i, value in enumerate(VALUES):
        event = line.events.add(metadata_id=abs(value) % 1000 + 1, offset_ps=value, duration_ps=~value)
        event.stats.add(metadata_id=1, int64_value=value)
        event.stats.add(metadata_id=2, uint64_value=value % 2**64)
        if irregular and i % 3 == 0:
            event.stats.add(metadata_id=3, str_value="breaks the pattern")
    return line


@pytest.mark.parametrize("irregular", [False, True], ids=["regular line", "irregular line"])
def test_every_varint_length_reads_as_protobuf_reads_it(irregular):
    line = _line(irregular)
    raw = line.SerializeToString()
    last_event = XLine(events=[line.events[-1]]).SerializeToString()[2:]
    assert raw.endswith(last_event)  # the last value ends the buffer: the per-byte reader takes it
    decoded = decode_line(raw, {1: "signed", 2: "unsigned", 3: "text"})
    assert decoded.offset_ps.tolist() == [e.offset_ps for e in line.events]
    assert decoded.event_duration_ps.tolist() == [e.duration_ps for e in line.events]
    assert decoded.metadata_id.tolist() == [e.metadata_id for e in line.events]
    signed = decoded.stats["signed"]
    assert signed.rows is None and signed.values.tolist() == VALUES
    unsigned = decoded.stats["unsigned"]
    assert np.asarray(unsigned.values).astype(np.uint64).tolist() == [v % 2**64 for v in VALUES]


def _field(field: int, payload: bytes) -> bytes:
    return bytes([field << 3 | 2, len(payload)]) + payload


@pytest.mark.parametrize("irregular", [False, True], ids=["regular line", "irregular line"])
def test_a_value_cut_by_its_fields_length_is_malformed(irregular):
    """The stat's length ends one byte before the end of its 6-byte value. That last byte is readable (the
    wide read loads it) and, read as the event's next field, is a valid one (field 15, a varint, then 0):
    only the bounds check of the value itself refuses the stat. (A field after the events keeps 8 bytes
    readable even at the last event, so no event falls back to the per-byte reader.)"""
    stat = b"\x08\x01\x20" + b"\x85" * 5  # id 1, int64 value whose varint continues past the stat
    extra = _field(4, b"\x08\x02" + _field(5, b"text")) if irregular else b""
    event = b"\x08\x01\x10\x05" + _field(4, stat) + b"\x78\x00" + extra
    raw = _field(2, b"XLA Ops") + _field(4, event) * 20 + _field(11, b"a display name after the events")
    with pytest.raises(MalformedXSpace):
        decode_line(raw, {1: "signed", 2: "text"})
