"""The loader's fast paths give the same trace as its plain ones: threads, mapped big files, the mmap cache.

Each fast path (threaded line decoding, the mapped file whose pages are
released plane by plane, the memory-mapped cache) is checked against a path
without it on real profiles and on generated TPU-shaped ones.
"""

from __future__ import annotations

import gzip
import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ALL_SHARED_TRACES, ROOT, TPU_TRACE, require_shared_traces
from tests.trace_checks import assert_consistent, open_or_clean_error
from tpuscope.app.opener import open_trace
from tpuscope.model import _kernels
from tpuscope.model.trace import Trace
from tpuscope.readers.xplane import _linedecode
from tpuscope.readers.xplane.decode import MalformedXSpace, decode_xspace
from tpuscope.store import traces

_BIG_FILE_BYTES = 4 << 20  # tpuscope.readers.xplane.assemble maps files from this size on


def _generator():
    source = ROOT / "benchmarks" / "generate_xspace.py"
    spec = importlib.util.spec_from_file_location("generate_xspace", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def big_profile(tmp_path_factory) -> Path:
    """A generated TPU-shaped profile above the loader's 4 MiB buffer threshold."""
    path = tmp_path_factory.mktemp("generated") / "big.xplane.pb"
    _generator().generate(150_000, path, devices=2, seed=1)
    assert path.stat().st_size > _BIG_FILE_BYTES
    return path


def _columns(trace: Trace) -> list:
    """Every event column and stat of a trace, with string ids resolved to text."""
    out = []
    for track in trace.tracks():
        stats = {}
        for name, col in track.stats.columns.items():
            values = col.values
            if col.kind == "str":
                values = [trace.strings[int(v)] for v in values]
            rows = None if col.rows is None else col.rows.tolist()
            stats[name] = (col.kind, rows, np.asarray(values).tolist())
        out.append((track.plane.name, track.name, track.start_ps.tolist(), track.duration_ps.tolist(),
                    [trace.strings[int(i)] for i in track.name_id], track.depth.tolist(),
                    track.meta_index.tolist(), stats))  # fmt: skip
    return out


def test_generated_profile_reads_like_jax_reads_it(big_profile):
    from jax.profiler import ProfileData

    trace = open_trace(big_profile, use_cache=False)
    theirs = ProfileData.from_file(str(big_profile))
    ours = [(p.name, t.name, len(t)) for p in trace.planes for t in p.tracks]
    assert ours == [(p.name, line.name, len(list(line.events))) for p in theirs.planes for line in p.lines]
    assert abs(trace.event_count - 150_000) < 10
    ops = trace.find_plane("/device:TPU:0").track("XLA Ops")
    assert set(ops.stats.names()) == {"device_offset_ps", "device_duration_ps"}
    flops = ops.stat_values("flops")
    assert np.isfinite(flops).all() and (flops > 0).all()
    assert trace.find_plane("/host:CPU").tracks[0].max_depth == _generator().NEST_DEPTH - 1


@pytest.mark.parametrize("path", [TPU_TRACE, None], ids=["tpu", "generated"])
def test_threaded_decoding_equals_serial(path, big_profile):
    require_shared_traces()
    data = (path or big_profile).read_bytes()
    serial, threaded = decode_xspace(data, threads=1), decode_xspace(data, threads=4)
    assert serial.event_count == threaded.event_count > 0
    for a_plane, b_plane in zip(serial.planes, threaded.planes, strict=True):
        for a, b in zip(a_plane.lines, b_plane.lines, strict=True):
            for column in ("metadata_id", "offset_ps", "event_duration_ps"):
                np.testing.assert_array_equal(getattr(a, column), getattr(b, column))
            assert a.stats.keys() == b.stats.keys()
            for name in a.stats:
                np.testing.assert_array_equal(a.stats[name].values, b.stats[name].values)


def test_big_file_buffer_path_equals_gzip_bytes_path(big_profile, tmp_path):
    """Above 4 MiB the file is mapped and its plane pages are released as they decode; a gzip file
    takes the plain bytes path. Both must give the same trace."""
    gz = tmp_path / "big.xplane.pb.gz"
    gz.write_bytes(gzip.compress(big_profile.read_bytes(), compresslevel=1))
    assert _columns(open_trace(big_profile, use_cache=False)) == _columns(open_trace(gz, use_cache=False))


def test_release_pages_needs_a_writable_buffer():
    buffer = np.ones(1 << 16, np.uint8)
    assert _kernels.release_pages(buffer, 4096, 8192) in (True, False)
    assert (buffer[:4096] == 1).all() and (buffer[12288:] == 1).all()  # outside the range: untouched
    with pytest.raises(TypeError):
        _kernels.release_pages(b"\0" * 8192, 0, 8192)
    assert _kernels.release_pages(buffer, 60000, 10000) is False  # past the end: refused


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.parent.name)
def test_cache_reopens_identical_writable_columns(path, tmp_path):
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    first = open_trace(copy)
    traces.wait_for_writes()  # the entry is written in the background
    assert list(traces.cache_dir().glob("*.trace")), "the first open should have written the cache"
    second = open_trace(copy)
    assert _columns(second) == _columns(first)
    track = max(second.tracks(), key=len)
    track.start_ps[0] += 1  # copy-on-write mapping: the cache file itself is not changed
    assert _columns(open_trace(copy)) == _columns(first)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_damaged_cache_file_is_ignored(damage, tmp_path):
    copy = tmp_path / TPU_TRACE.name
    shutil.copy(TPU_TRACE, copy)
    expected = _columns(open_trace(copy))
    traces.wait_for_writes()
    (stored,) = traces.cache_dir().glob("*.trace")
    raw = stored.read_bytes()
    stored.write_bytes({"garbage": b"TPUSCOPE" + bytes(range(256)) * 64, "truncated": raw[: len(raw) // 2],
                        "empty": b""}[damage])  # fmt: skip
    assert _columns(open_trace(copy)) == expected


def test_fill_checks_every_write_against_the_sizes_given():
    data = TPU_TRACE.read_bytes()
    _, planes = _linedecode.split_message(data, 1)
    offset, length = planes[0]
    plane = memoryview(data)[offset : offset + length]
    _, lines = _linedecode.split_message(plane, 3)
    o, n = max(lines, key=lambda span: span[1])  # the longest line of the first plane
    raw = plane[o : o + n]
    header = _linedecode.scan(raw)
    n_events, n_stats = header[6], header[7]
    assert n_events > 0 and n_stats > 0

    def buffers(events, stats):
        e = [np.empty(events, np.int64) for _ in range(3)]
        s = [np.empty(stats, np.int64), np.empty(stats, np.uint8), np.empty(stats, np.int64),
             np.empty(stats, np.int32)]  # fmt: skip
        strings = [np.empty(stats, np.int64), np.empty(stats, np.int64), np.empty(stats, np.uint64)]
        return e + s + strings

    assert _linedecode.fill(raw, n_events, n_stats, n_stats, *buffers(n_events, n_stats)) >= 0
    for events, stats in [(n_events - 1, n_stats), (n_events, n_stats - 1)]:
        with pytest.raises(ValueError):
            _linedecode.fill(raw, events, stats, stats, *buffers(events, stats))
    with pytest.raises(ValueError):  # a count larger than the buffers really are
        _linedecode.fill(raw, n_events + 10, n_stats, n_stats, *buffers(n_events, n_stats))
    with pytest.raises(ValueError):
        _linedecode.scan(raw[: n // 2])
    assert decode_xspace(data[: len(data) // 2]).truncation is not None  # a cut is salvaged ...
    damaged = bytearray(data)
    damaged[0] = 0x0F  # ... damage is not: XSpace field 1 with wire type 7
    with pytest.raises(MalformedXSpace):
        decode_xspace(bytes(damaged))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.integers(0, 2**31), st.integers(0, 255)), min_size=1, max_size=3),
       cut=st.none() | st.integers(0, 2**31))  # fmt: skip
def test_mutated_big_profile_loads_or_raises_profile_error(big_profile, tmp_path, edits, cut):
    """The big-file path (mapped file, threads, pages released per plane) under byte mutations."""
    buffer = bytearray(big_profile.read_bytes())
    for position, value in edits:
        buffer[position % len(buffer)] = value
    if cut is not None:
        buffer = buffer[: max(_BIG_FILE_BYTES, cut % (len(buffer) + 1))]  # stay on the big-file path
    path = tmp_path / "mutated.xplane.pb"
    path.write_bytes(bytes(buffer))
    trace = open_or_clean_error(path)
    if trace is not None:
        assert_consistent(trace)


def test_the_control_word_stops_the_line_decoder(big_profile):
    """Cancel reaches the C decoder inside a long line: with word 0 set it stops at its next check."""
    from tpuscope.readers.xplane.decode import DecodeStopped, _cut_into_planes, decode_line, scan_line

    view = memoryview(big_profile.read_bytes())
    pieces = _cut_into_planes(view, False)
    line = max((raw for lines in pieces.lines for raw in lines), key=len)
    names: dict[int, str] = {}
    control = np.zeros(2, np.int64)
    decoded = decode_line(line, names, control=control, slot=1)
    assert len(decoded) == scan_line(line)[6] > 65536
    assert 0 < control[1] <= len(line)  # progress within the line was published
    control[0] = 1
    with pytest.raises(DecodeStopped):
        scan_line(line, control)
    with pytest.raises(DecodeStopped):
        decode_line(line, names, header=scan_line(line), control=control, slot=1)
    with pytest.raises(ValueError):
        _linedecode.scan(line, np.zeros(0, np.int64), 0)  # a control buffer without room for word 0


def test_cancel_during_the_decode_raises_load_cancelled(big_profile):
    from tpuscope.errors import LoadCancelled

    calls = []

    def progress(fraction, message):
        calls.append(fraction)
        return not message.startswith("decoding")

    with pytest.raises(LoadCancelled):
        open_trace(big_profile, progress=progress, use_cache=False)
    assert len(calls) == 1
