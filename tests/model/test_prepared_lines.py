"""Big lines get their model columns in the decoder threads (tpuscope.readers.xplane.assemble's
_LinePreparer); the trace must be the same as when the assembly after the decode does all of it.
The threshold is lowered
so that every line of the real profiles takes the decoder-thread path, and a built profile covers
what the real ones lack: a line out of order (sorted there, its stats permuted with it) and a line
naming an event id its plane does not define (left to the assembly)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ALL_SHARED_TRACES, SAMPLES, require_shared_traces
from tpuscope.app.opener import open_trace
from tpuscope.model import _kernels
from tpuscope.model.trace import Trace
from tpuscope.readers.xplane import assemble as load
from tpuscope.readers.xplane.xplane_pb2 import XSpace

EVERY_LINE = 1
NO_LINE = 1 << 62
REAL_PROFILES = [*ALL_SHARED_TRACES, *sorted(SAMPLES.glob("*.xplane.pb"))]


def _built_profile(path: Path) -> Path:
    space = XSpace()
    plane = space.planes.add(id=1, name="/device:TPU:0")
    plane.stat_metadata[1].id = 1
    plane.stat_metadata[1].name = "flops"
    for meta_id, name in ((1, "fusion.1"), (2, "copy.2")):
        plane.event_metadata[meta_id].id = meta_id
        plane.event_metadata[meta_id].name = name
    backwards = plane.lines.add(id=1, name="XLA Ops", timestamp_ns=5000)
    for i in range(200):  # written last event first, in pairs that start together
        start, duration = (200 - i // 2) * 100, 40 + i % 2
        event = backwards.events.add(metadata_id=1 + i % 2, offset_ps=start, duration_ps=duration)
        event.stats.add(metadata_id=1, int64_value=i)
    stray = plane.lines.add(id=2, name="XLA Modules", timestamp_ns=5000)
    for i in range(50):
        stray.events.add(metadata_id=7 if i == 25 else 1, offset_ps=i * 1000, duration_ps=500)
    path.write_bytes(space.SerializeToString())
    return path


def _load(path: Path, monkeypatch, threshold: int) -> tuple[Trace, int]:
    monkeypatch.setattr(load, "_PREPARE_IN_DECODER_MIN_EVENTS", threshold)
    seen: list[int] = []
    assemble = load.assemble

    def counting(spaces, on_plane=None, prepared=None):
        seen.append(len(prepared or {}))
        return assemble(spaces, on_plane, prepared)

    monkeypatch.setattr(load, "assemble", counting)
    trace = open_trace(path, use_cache=False)
    return trace, seen[0]


def _assert_same(a: Trace, b: Trace) -> None:
    assert a.origin_ns == b.origin_ns and a.duration_ps == b.duration_ps
    assert [a.strings[i] for i in range(len(a.strings))] == [b.strings[i] for i in range(len(b.strings))]
    for track_a, track_b in zip(a.tracks(), b.tracks(), strict=True):
        for column in ("start_ps", "duration_ps", "meta_index", "name_id", "depth"):
            np.testing.assert_array_equal(getattr(track_a, column), getattr(track_b, column), err_msg=column)
        assert track_a.stats.names() == track_b.stats.names()
        for name in track_a.stats.names():
            col_a, col_b = track_a.stats.column(name), track_b.stats.column(name)
            assert col_a is not None and col_b is not None
            assert col_a.kind == col_b.kind
            values_a, values_b = col_a.dense(len(track_a), 0), col_b.dense(len(track_b), 0)
            np.testing.assert_array_equal(values_a, values_b, err_msg=name)


@pytest.mark.parametrize("path", REAL_PROFILES, ids=lambda p: p.name)
def test_lines_prepared_in_the_decoder_threads_equal_lines_assembled_after(path, monkeypatch):
    require_shared_traces()
    prepared, n_prepared = _load(path, monkeypatch, EVERY_LINE)
    plain, n_plain = _load(path, monkeypatch, NO_LINE)
    assert n_prepared > 0 and n_plain == 0  # both paths were really taken
    _assert_same(prepared, plain)


def test_out_of_order_lines_and_undefined_ids_load_the_same_on_both_paths(tmp_path, monkeypatch):
    path = _built_profile(tmp_path / "built.xplane.pb")
    prepared, n_prepared = _load(path, monkeypatch, EVERY_LINE)
    plain, _ = _load(path, monkeypatch, NO_LINE)
    assert n_prepared == 1  # the out-of-order line; the line with an undefined id is left to the assembly
    _assert_same(prepared, plain)
    plane = prepared.find_plane("/device:TPU:0")
    assert plane is not None
    ops = plane.tracks[0]
    assert (np.diff(ops.start_ps) >= 0).all() and ops.max_depth == 1  # sorted, the pairs nested
    flops = ops.stats.column("flops")
    assert flops is not None
    # Each stat moved with its event: the event written i-th carries i, and the longer of two events
    # starting together (odd i) comes first.
    expected = [i for k in reversed(range(100)) for i in (2 * k + 1, 2 * k)]
    assert flops.dense(len(ops), -1).tolist() == expected


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint16])
def test_gather_rows_is_numpys_take_with_minus_one_outside_the_table(dtype):
    table = np.array([7, -1, 30, 4, 12], np.int32)
    info = np.iinfo(dtype)
    indices = np.array([0, 4, 2, 3, 1, 5, max(info.min, -3), min(info.max, 10**6)], dtype)
    out = np.empty(len(indices), np.int32)
    outside = load._gather_rows(table, indices, out)
    expected = [int(table[i]) if 0 <= i < len(table) else -1 for i in indices.tolist()]
    assert out.tolist() == expected
    assert outside == sum(1 for i in indices.tolist() if not 0 <= i < len(table))
    strided = np.empty(2 * len(indices), np.int32)[::2]
    assert load._gather_rows(table, indices, strided) == outside and strided.tolist() == expected


def test_gather_rows_refuses_columns_of_different_lengths():
    with pytest.raises(ValueError):
        _kernels.gather_rows(np.zeros(3, np.int32), np.zeros(4, np.int8), 1, np.empty(3, np.int32))
    with pytest.raises(ValueError):
        _kernels.gather_rows(np.zeros(3, np.int32), np.zeros(4, np.int8), 3, np.empty(4, np.int32))
