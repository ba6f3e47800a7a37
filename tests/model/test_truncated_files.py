"""A profile cut short (a killed writer, a full disk, a partial copy: jax-ml/jax#21295) loads what precedes
the cut and says in one sentence what is missing; a cut file with no complete event is one ProfileError."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from tests.conftest import GPU_TRACE, PTXLA_TRACE, TPU_TRACE
from tests.trace_checks import assert_consistent
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.errors import ProfileError
from tpuscope.readers.xplane import xplane_pb2
from tpuscope.readers.xplane.decode import decode_xspace

EVENTS_PER_LINE = 3
LINES_PER_PLANE = 2
KEPT_PLANES = ("/host:metadata", "/device:GPU:0", "/device:GPU:1", "/host:CPU")


def small_real_profile() -> bytes:
    """The real MI300X JAX profile shrunk to a few KB: its first lines and events, their own metadata.

    Why shrink: the test cuts the file at every byte, and each cut is a full
    decode. Kept: a metadata plane without lines, a device plane, an empty
    device plane, the host plane, and the host name that ends real JAX files.
    """
    space = xplane_pb2.XSpace()
    space.ParseFromString(GPU_TRACE.read_bytes())
    planes = [p for p in space.planes if p.name in KEPT_PLANES]
    del space.planes[:]
    for source in planes:
        plane = space.planes.add()
        plane.CopyFrom(source)
        del plane.lines[LINES_PER_PLANE:]
        used_metadata: set[int] = set()
        used_stats = {s.metadata_id for s in plane.stats}
        for line in plane.lines:
            del line.events[EVENTS_PER_LINE:]
            used_metadata.update(e.metadata_id for e in line.events)
            used_stats.update(s.metadata_id for e in line.events for s in e.stats)
        kept = used_metadata if plane.lines else set(sorted(plane.event_metadata)[:1])
        for key in [k for k in plane.event_metadata if k not in kept]:
            del plane.event_metadata[key]
        used_stats.update(s.metadata_id for m in plane.event_metadata.values() for s in m.stats)
        for key in [k for k in plane.stat_metadata if k not in used_stats]:
            del plane.stat_metadata[key]
    assert list(space.hostnames), "the real file ends with its host name"
    return space.SerializeToString()


def top_level_boundaries(data: bytes) -> set[int]:
    """Offsets where a top-level XSpace field ends: a cut there leaves a complete, smaller XSpace."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(data)
    ends, position = {0}, 0
    for plane in space.planes:
        position += len(xplane_pb2.XSpace(planes=[plane]).SerializeToString())
        ends.add(position)
    return ends


def _line_sizes(space) -> list[list[int]]:
    return [[len(line) for line in plane.lines] for plane in space.planes]


@pytest.mark.timeout(300)
def test_every_cut_of_a_small_real_profile_keeps_all_it_can():
    data = small_real_profile()
    whole = decode_xspace(data, threads=1)
    whole_sizes = _line_sizes(whole)
    boundaries = top_level_boundaries(data)
    assert whole.truncation is None and whole.event_count == LINES_PER_PLANE * EVENTS_PER_LINE * 2
    previous_events = 0
    for cut in range(1, len(data)):
        space = decode_xspace(data[:cut], threads=1)
        # More bytes never give fewer events: every complete event before a cut is kept.
        assert space.event_count >= previous_events, cut
        previous_events = space.event_count
        if space.truncation is None:
            # Only a cut exactly between two planes leaves a valid smaller XSpace (undetectable).
            assert cut in boundaries, cut
        else:
            sentence = space.truncation.sentence()
            assert "\n" not in sentence and "." not in sentence.replace("...", ""), sentence
        complete = space.truncation.complete_planes if space.truncation else len(space.planes)
        # The planes before the cut are whole; the cut plane's lines are a prefix of the real ones.
        assert _line_sizes(space)[:complete] == whole_sizes[:complete], cut
        for got, full in zip(_line_sizes(space)[complete:], whole_sizes[complete:], strict=False):
            assert (
                len(got) <= len(full) and got[:-1] == full[: len(got) - 1] and got[-1] <= full[len(got) - 1]
            )
    assert previous_events <= whole.event_count


@pytest.mark.timeout(300)
def test_cuts_of_a_small_real_profile_load_with_one_warning_or_fail_cleanly(tmp_path):
    data = small_real_profile()
    boundaries = top_level_boundaries(data)
    path = tmp_path / "cut.xplane.pb"
    outcomes = set()
    for cut in range(1, len(data), 29):
        path.write_bytes(data[:cut])
        try:
            trace = open_trace(path, use_cache=False)
        except ProfileError as error:
            message = str(error)
            assert str(path) in message and "cut short before its first complete event" in message, message
            assert "\n" not in message
            outcomes.add("error")
            continue
        assert_consistent(trace)
        assert trace.event_count > 0
        if cut in boundaries:
            assert trace.load_warnings == []
        else:
            assert len(trace.load_warnings) == 1, cut
            assert trace.load_warnings[0].startswith(f"{path} is cut short: it ends ")
            outcomes.add("salvaged")
    assert outcomes == {"error", "salvaged"}


def test_the_sentence_names_the_plane_the_line_and_what_is_missing(tmp_path):
    data = TPU_TRACE.read_bytes()
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(data[: int(len(data) * 0.63)])
    trace = open_trace(path, use_cache=False)
    whole = open_trace(TPU_TRACE, use_cache=False)
    (message,) = trace.load_warnings
    assert "% into /host:CPU, after " in message and "complete lines and" in message
    assert "the rest of that line, any later lines, the plane's event and stat names" in message
    assert message.endswith("and any planes after it are missing.")
    # Every device plane before the cut is there whole, with its op names.
    for plane in trace.device_planes():
        twin = whole.find_plane(plane.name)
        assert [len(t) for t in plane.tracks] == [len(t) for t in twin.tracks]
        assert plane.tracks[-1].event_name(0) == twin.tracks[-1].event_name(0)
    # The cut host plane keeps its complete lines whole and the cut line's first events.
    host, twin = trace.find_plane("/host:CPU"), whole.find_plane("/host:CPU")
    kept = {t.name: len(t) for t in host.tracks}
    full = {t.name: len(t) for t in twin.tracks}
    assert sum(kept[name] == full[name] for name in kept) == len(kept) - 1
    assert 0 < trace.event_count < whole.event_count


def test_a_cut_in_the_metadata_after_all_lines_keeps_every_event(tmp_path):
    data = TPU_TRACE.read_bytes()
    whole = open_trace(TPU_TRACE, use_cache=False)
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(data[:-200])  # inside the last plane's stat metadata or stats
    trace = open_trace(path, use_cache=False)
    assert trace.event_count == whole.event_count
    (message,) = trace.load_warnings
    assert "% into /host:CPU, after" in message and "lines" not in message.split(";")[1]


def test_nothing_usable_is_still_one_sentence_error(tmp_path):
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(PTXLA_TRACE.read_bytes()[:40])
    with pytest.raises(ProfileError) as info:
        open_trace(path, use_cache=False)
    message = str(info.value)
    assert message.startswith(f"Cannot open {path}: the file is cut short before its first complete event")
    assert "\n" not in message


def test_cli_warns_on_stderr_and_exits_0_and_strict_exits_2(tmp_path, capsys):
    path = tmp_path / "cut.xplane.pb"
    data = TPU_TRACE.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert main(["info", str(path), "--no-cache"]) == 0
    captured = capsys.readouterr()
    warning_lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(warning_lines) == 1 and warning_lines[0].startswith(f"tpuscope: warning: {path} is cut short")
    assert "Events:" in captured.out
    assert main(["info", str(path), "--no-cache", "--strict"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tpuscope: Cannot open {path}: the file is cut short: it ends ")
    assert "Traceback" not in err and err.strip().count("\n") == 0
    assert main(["info", str(TPU_TRACE), "--no-cache", "--strict"]) == 0  # a whole file: no warning
    assert "warning" not in capsys.readouterr().err


def test_info_json_lists_what_is_missing(tmp_path, capsys):
    path = tmp_path / "cut.xplane.pb"
    data = TPU_TRACE.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    assert main(["info", str(path), "--no-cache", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert len(payload["load_warnings"]) == 1 and "cut short" in payload["load_warnings"][0]


def test_cache_keeps_the_warning_of_a_cut_file(tmp_path):
    path = tmp_path / "cut.xplane.pb"
    data = TPU_TRACE.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    first = open_trace(path)
    again = open_trace(path)  # from the columnar cache
    assert again.load_warnings == first.load_warnings and len(first.load_warnings) == 1
    assert again.event_count == first.event_count
    with pytest.raises(ProfileError, match="cut short"):
        open_trace(path, strict=True)


def test_a_cut_gzip_loads_what_decompresses(tmp_path):
    raw = TPU_TRACE.read_bytes()
    packed = gzip.compress(raw)
    path = tmp_path / "cut.xplane.pb.gz"
    path.write_bytes(packed[: len(packed) // 2])
    trace = open_trace(path, use_cache=False)
    (message,) = trace.load_warnings
    assert message.startswith(f"{path} is cut short: its gzip data ends ") and "% into /" in message
    assert 0 < trace.event_count < open_trace(TPU_TRACE, use_cache=False).event_count
    # Only the gzip trailer missing: every plane is there, and the warning still says the file is cut.
    path.write_bytes(packed[:-4])
    trace = open_trace(path, use_cache=False)
    assert trace.event_count == open_trace(TPU_TRACE, use_cache=False).event_count
    assert (
        len(trace.load_warnings) == 1
        and "its gzip data ends after 7 complete planes" in trace.load_warnings[0]
    )


def test_a_gzip_cut_in_its_header_is_one_sentence_error(tmp_path):
    path = tmp_path / "cut.xplane.pb.gz"
    path.write_bytes(gzip.compress(PTXLA_TRACE.read_bytes())[:12])
    with pytest.raises(ProfileError, match="cut short") as info:
        open_trace(path, use_cache=False)
    assert "\n" not in str(info.value)


def test_a_run_with_one_file_cut_to_nothing_loads_the_others(tmp_path):
    run = tmp_path / "plugins" / "profile" / "run1"
    run.mkdir(parents=True)
    (run / "host_a.xplane.pb").write_bytes(PTXLA_TRACE.read_bytes())
    (run / "host_b.xplane.pb").write_bytes(PTXLA_TRACE.read_bytes()[:30])
    trace = open_trace(tmp_path, use_cache=False)
    assert trace.event_count == open_trace(PTXLA_TRACE, use_cache=False).event_count
    (message,) = trace.load_warnings
    assert "host_b.xplane.pb is cut short before its first complete event and is left out" in message


def test_cut_line_events_equal_the_whole_files_first_events(tmp_path):
    data = TPU_TRACE.read_bytes()
    whole = open_trace(TPU_TRACE, use_cache=False)
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(data[: int(len(data) * 0.05)])  # inside the first device plane's XLA Ops line
    trace = open_trace(path, use_cache=False)
    (plane,) = trace.planes
    cut_track = plane.tracks[-1]
    twin = whole.find_plane(plane.name).track(cut_track.name)
    assert 0 < len(cut_track) < len(twin)
    # The same events as the whole file's (times are relative to each trace's own first event).
    shift_ps = (trace.origin_ns - whole.origin_ns) * 1000
    assert np.isin(cut_track.start_ps + shift_ps, twin.start_ps).all()
    assert np.isin(cut_track.duration_ps, twin.duration_ps).all()
