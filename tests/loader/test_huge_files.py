"""Files past 2 GB and 4 GB (which protobuf-based readers cannot parse) load like any other, from a map.

The > 4 GB file is sparse: a real profile's planes around an unknown XLine field
of 4.3 GB that the decoder skips without reading, so the test costs a few MB of
disk and memory while every offset past 2^31 and 2^32 goes through the loader's
real path (the map, the C splitter and line decoder, per-plane page release).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import PTXLA_TRACE
from tpuscope.app.opener import open_trace
from tpuscope.readers.xplane import xplane_pb2
from tpuscope.readers.xplane.decode import decode_xspace

PADDING_BYTES = (4 << 30) + (300 << 20)  # past 2^32, so 32-bit offsets anywhere would wrap
UNKNOWN_LINE_FIELD = 15  # not an XLine field (tpuscope/readers/xplane/xplane.proto): readers skip it


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload_length: int) -> bytes:
    """The tag and length prefix of a length-delimited field."""
    return _varint(number << 3 | 2) + _varint(payload_length)


def _write_huge_profile(path: Path) -> tuple[xplane_pb2.XSpace, int]:
    """The real PyTorch/XLA profile with a 4.3 GB hole inside its host plane's first line, whose events
    come after the hole. Returns the original space and the index of the padded plane."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(PTXLA_TRACE.read_bytes())
    host = next(i for i, p in enumerate(space.planes) if p.lines)
    plane = space.planes[host]
    first_line = plane.lines[0].SerializeToString()
    padded_line_length = len(_field(UNKNOWN_LINE_FIELD, PADDING_BYTES)) + PADDING_BYTES + len(first_line)
    rest_of_plane = xplane_pb2.XPlane()
    rest_of_plane.CopyFrom(plane)
    del rest_of_plane.lines[0]
    rest = rest_of_plane.SerializeToString()
    line_field = _field(3, padded_line_length)
    plane_length = len(line_field) + padded_line_length + len(rest)
    before = xplane_pb2.XSpace(planes=space.planes[:host]).SerializeToString()
    after = xplane_pb2.XSpace(planes=space.planes[host + 1 :], hostnames=space.hostnames).SerializeToString()
    with open(path, "wb") as handle:
        handle.write(
            before + _field(1, plane_length) + line_field + _field(UNKNOWN_LINE_FIELD, PADDING_BYTES)
        )
        handle.seek(PADDING_BYTES, os.SEEK_CUR)  # a hole: no disk blocks, reads as zeros
        handle.write(first_line + rest + after)
    return space, host


@pytest.fixture(scope="module")
def huge_profile(tmp_path_factory):
    path = tmp_path_factory.mktemp("huge") / "huge.xplane.pb"
    space, host = _write_huge_profile(path)
    stat = path.stat()
    if stat.st_blocks * 512 > 64 << 20:
        path.unlink()
        pytest.skip("this filesystem does not keep sparse files sparse")
    yield path, space, host
    path.unlink()


def test_a_file_past_4_gb_loads_every_event(huge_profile):
    path, space, host = huge_profile
    assert path.stat().st_size > 1 << 32
    trace = open_trace(path, use_cache=False)
    whole = open_trace(PTXLA_TRACE, use_cache=False)
    assert trace.load_warnings == []
    assert [(p.name, [len(t) for t in p.tracks]) for p in trace.planes] == [
        (p.name, [len(t) for t in p.tracks]) for p in whole.planes
    ]
    for ours, theirs in zip(trace.tracks(), whole.tracks(), strict=True):
        np.testing.assert_array_equal(ours.start_ps, theirs.start_ps)
        np.testing.assert_array_equal(ours.duration_ps, theirs.duration_ps)
        assert [trace.strings[int(i)] for i in ours.name_id[:50]] == [
            whole.strings[int(i)] for i in theirs.name_id[:50]
        ]
    assert trace.hosts == whole.hosts  # the host name comes after the 4 GB hole


def test_a_file_past_4_gb_cut_short_is_salvaged(huge_profile, tmp_path):
    path, space, host = huge_profile
    cut = tmp_path / "cut.xplane.pb"
    size = path.stat().st_size
    keep = size - 3000  # inside the padded plane's later lines, past 4 GB
    with open(path, "rb") as source, open(cut, "wb") as target:
        target.truncate(keep)  # sparse, like the source
        source.seek(keep - (1 << 20))
        target.seek(keep - (1 << 20))
        target.write(source.read(1 << 20))
        source.seek(0)
        target.seek(0)
        target.write(source.read(1 << 20))
    try:
        trace = open_trace(cut, use_cache=False)
        (message,) = trace.load_warnings
        assert f"% into {space.planes[host].name}, after " in message
        assert trace.find_plane(space.planes[host].name).tracks[0].name == space.planes[host].lines[0].name
    finally:
        cut.unlink()


def test_the_map_is_closed_after_the_load(huge_profile):
    path, _, _ = huge_profile
    open_trace(path, use_cache=False)
    maps = Path("/proc/self/maps")
    if maps.exists():
        assert str(path) not in maps.read_text()


def test_each_plane_is_released_once_decoded():
    data = PTXLA_TRACE.read_bytes()
    released: list[tuple[int, int]] = []
    space = decode_xspace(data, release=lambda offset, length: released.append((offset, length)))
    assert len(released) == len(space.planes)
    assert all(data[offset - 1 : offset] for offset, _ in released)  # spans inside the file
    assert sum(length for _, length in released) < len(data)
