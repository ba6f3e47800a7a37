"""The C parser of what an XSpace and its planes hold besides lines (_planeheader.c), against protobuf's own
reading: on every real profile, and on built messages that take each of protobuf's rules (oneofs, maps,
merged fields, packed repeats, unknown fields). Corrupted bytes are a ValueError, never a crash."""

from __future__ import annotations

import pytest

from tests.conftest import ALL_SHARED_TRACES, SAMPLES, require_shared_traces
from tpuscope.readers.xplane import _linedecode, _planeheader
from tpuscope.readers.xplane.decode import MalformedXSpace, _PlaneHeader, decode_xspace
from tpuscope.readers.xplane.xplane_pb2 import XPlane, XSpace, XStat

_KINDS = {None: 0, "double_value": 1, "uint64_value": 2, "int64_value": 3, "str_value": 4, "bytes_value": 5,
          "ref_value": 6, "compressed_str_value": 7}  # fmt: skip
_PLANES_FIELD, _LINES_FIELD = 1, 3


def _expected_stat(stat: XStat) -> tuple:
    which = stat.WhichOneof("value")
    value = None if which is None else getattr(stat, which)
    return stat.metadata_id, _KINDS[which], value.encode() if isinstance(value, str) else value


def _expected_header(plane: XPlane) -> tuple:
    events = sorted(
        (key, m.id, m.name.encode(), bytes(m.display_name), [_expected_stat(s) for s in m.stats],
         tuple(m.child_id))
        for key, m in plane.event_metadata.items()
    )  # fmt: skip
    stat_names = sorted((key, m.name.encode()) for key, m in plane.stat_metadata.items())
    return plane.id, plane.name.encode(), events, stat_names, [_expected_stat(s) for s in plane.stats]


def _parsed_header(serialized: bytes) -> tuple:
    rest, _ = _linedecode.split_message(serialized, _LINES_FIELD)
    plane_id, name, events, stat_names, stats = _planeheader.plane_header(rest)
    by_key = {entry[0]: entry for entry in events}  # the last of a key, as the decoder keeps it
    return plane_id, name, sorted(by_key.values()), sorted(dict(stat_names).items()), stats


def _profiles():
    return [
        *ALL_SHARED_TRACES,
        *sorted(SAMPLES.glob("*.xplane.pb")),
        *sorted(SAMPLES.glob("*/*/*.xplane.pb")),
    ]


@pytest.mark.parametrize("path", _profiles(), ids=lambda p: p.name)
def test_every_real_profile_reads_as_protobuf_reads_it(path):
    require_shared_traces()
    data = path.read_bytes()
    space = XSpace.FromString(data)
    rest, plane_spans = _linedecode.split_message(data, _PLANES_FIELD)
    assert len(plane_spans) == len(space.planes) > 0
    for plane, (offset, size) in zip(space.planes, plane_spans, strict=True):
        assert _parsed_header(data[offset : offset + size]) == _expected_header(plane)
    errors, warnings, hostnames = _planeheader.space_strings(rest)
    assert errors == [e.encode() for e in space.errors]
    assert warnings == [w.encode() for w in space.warnings]
    assert hostnames == [h.encode() for h in space.hostnames]


def _plane_with_every_kind_of_field() -> XPlane:
    plane = XPlane(id=-7, name="/device:TPU:0")
    for key, name in [(1, "flops"), (2, "hlo_op"), (3, "ref target"), (2**40, "far id")]:
        plane.stat_metadata[key].id = key
        plane.stat_metadata[key].name = name
        plane.stat_metadata[key].description = "not read"
    op = plane.event_metadata[5]
    op.id, op.name, op.display_name, op.metadata = 5, "fusion.12", b"fusion \xff", b"hlo proto bytes"
    op.stats.add(metadata_id=1, double_value=1.5e12)
    op.stats.add(metadata_id=2, str_value="convolution")
    op.stats.add(metadata_id=3, ref_value=3)
    op.stats.add(metadata_id=2**40, uint64_value=2**64 - 1)
    op.stats.add(metadata_id=1, int64_value=-(2**63))
    op.stats.add(metadata_id=1, bytes_value=b"\x00\x01")
    op.stats.add(metadata_id=1, compressed_str_value=b"\x1f\x8b")
    op.stats.add(metadata_id=4)  # no value
    op.child_id.extend([9, -1, 2**62])
    plane.event_metadata[0].name = ""  # an empty entry: key 0, every field default
    plane.stats.add(metadata_id=1, double_value=-0.0)
    plane.stats.add(metadata_id=2, str_value="v6e")
    plane.lines.add(id=1, name="XLA Ops").events.add(metadata_id=5, offset_ps=1, duration_ps=2)
    return plane


def test_a_plane_with_every_kind_of_field_reads_as_protobuf_reads_it():
    plane = _plane_with_every_kind_of_field()
    assert _parsed_header(plane.SerializeToString()) == _expected_header(plane)


def _tag(field: int, wire_type: int) -> bytes:
    return _varint(field << 3 | wire_type)


def _varint(value: int) -> bytes:
    value &= 2**64 - 1
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def _field(field: int, payload: bytes) -> bytes:
    return _tag(field, 2) + _varint(len(payload)) + payload


def test_protobuf_rules_that_writers_rarely_take():
    """A oneof set twice (the last wins), a map key twice (the last wins), a map value in two pieces (merged),
    child ids packed and not, an unknown field and a known field with the wrong wire type (both skipped)."""
    stat_twice = _tag(1, 0) + _varint(1) + _tag(2, 1) + b"\0" * 8 + _field(5, b"last wins")
    first_half = _tag(1, 0) + _varint(8) + _field(2, b"old name") + _tag(6, 0) + _varint(4)
    second_half = _field(2, b"new name") + _field(6, _varint(5) + _varint(6)) + _field(5, stat_twice)
    unknown = _tag(99, 0) + _varint(1) + _tag(1, 2) + _varint(0)  # field 99; id (a varint) as bytes
    entry = _tag(1, 0) + _varint(8) + _field(2, first_half + unknown) + _field(2, second_half)
    superseded = _tag(1, 0) + _varint(8) + _field(2, _field(2, b"superseded"))
    data = _tag(1, 0) + _varint(3) + _field(4, superseded) + _field(4, entry) + _tag(77, 5) + b"\0" * 4
    expected = XPlane.FromString(data)
    merged = expected.event_metadata[8]
    assert merged.name == "new name" and list(merged.child_id) == [4, 5, 6]
    assert _parsed_header(data) == _expected_header(expected)
    header = _PlaneHeader(data)
    assert header.event_metadata[8][1] == b"new name"
    assert header.event_metadata[8][3] == [(1, 4, b"last wins")]


def test_invalid_utf8_in_a_name_is_replaced_not_refused():
    """protobuf refuses a proto3 string that is not UTF-8; a profile with one broken name still opens."""
    broken_name = _tag(1, 0) + _varint(1) + _field(2, b"fl\xffops")
    stat_metadata = _field(5, _tag(1, 0) + _varint(1) + _field(2, broken_name))
    header = _PlaneHeader(_field(2, b"/device:\xfe") + stat_metadata)
    assert header.name == "/device:\ufffd" and header.stat_names == {1: "fl\ufffdops"}


def test_every_cut_of_a_plane_is_an_error_or_a_shorter_plane_never_a_crash():
    rest, _ = _linedecode.split_message(_plane_with_every_kind_of_field().SerializeToString(), _LINES_FIELD)
    outcomes = set()
    for end in range(len(rest)):
        try:
            _planeheader.plane_header(rest[:end])
            outcomes.add("read")
        except ValueError as error:
            assert str(error) == "malformed message"
            outcomes.add("refused")
    assert outcomes == {"read", "refused"}


def test_a_corrupted_plane_header_is_one_malformed_error_from_the_decoder():
    value_past_the_end = _tag(2, 2) + _varint(200) + b"short"
    plane = _field(2, b"/host:CPU") + _field(4, _tag(1, 0) + _varint(1) + value_past_the_end)
    with pytest.raises(MalformedXSpace, match="malformed message"):
        decode_xspace(_field(1, plane))
