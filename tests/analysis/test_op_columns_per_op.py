"""Issue 23: the op columns read once per op (`ops._OpStats`, where events take what an op is from
their metadata) are the columns read event by event, and a row's events found through the rows'
sort are those its mask selects: the faster paths change no number."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import ALL_SHARED_TRACES, SHARED_TRACES, TPU_TRACE, require_shared_traces
from tpuscope.analysis import ops
from tpuscope.app.opener import open_trace

# Every shared XPlane profile and two Kineto traces (GPU kernels whose events carry their own stats).
KINETO = [
    SHARED_TRACES / "kineto" / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    SHARED_TRACES / "kineto" / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
]
PROFILES = ALL_SHARED_TRACES + KINETO
COLUMNS = (
    "device", "op", "category", "program", "framework", "time_ps", "self_ps", "flops",
    "bytes_accessed", "program_id", "text", "source", "stack",
)  # fmt: skip


def _same_events(a: list, b: list) -> bool:
    if len(a) != len(b):
        return False
    return all(ta is tb and np.array_equal(ia, ib) for (ta, ia), (tb, ib) in zip(a, b, strict=True))


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_op_columns_read_per_op_are_those_read_per_event(path, monkeypatch):
    require_shared_traces()
    trace = open_trace(path, use_cache=False)
    per_op = ops.collect_op_events(trace)
    monkeypatch.setattr(ops._OpStats, "of", classmethod(lambda cls, track, idx: None))  # every event read
    per_event = ops.collect_op_events(trace)
    for name in COLUMNS:
        a, b = getattr(per_op, name), getattr(per_event, name)
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
    assert per_op.labels.texts == per_event.labels.texts
    for by in ("op", "category", "program", "framework"):
        table, table_per_event = ops.aggregate(per_op, by), ops.aggregate(per_event, by)
        assert table.names() == table_per_event.names()
        assert np.array_equal(table.self_ps, table_per_event.self_ps)
        for row in range(len(table)):
            by_mask = table.events.events_of(table.row_of_event == row)
            assert _same_events(table.events_of_row(row), by_mask), (by, row)


def test_a_tpu_op_line_is_read_per_op():
    """The TPU sample's op lines take every per-op stat from the ops' metadata: the fast path applies."""
    require_shared_traces()
    trace = open_trace(TPU_TRACE)
    device = ops.find_devices(trace)[0]
    track, idx = device.events[0]
    found = ops._OpStats.of(track, idx)
    assert found is not None and len(found.rows) < len(idx)  # fewer ops than events
    assert np.array_equal(found.name_id[found.of_event], track.name_id[idx])


def test_self_times_of_a_flat_line_are_the_durations_and_nesting_still_counts():
    start = np.array([0, 10, 20, 35], np.int64)
    duration = np.array([10, 5, 15, 0], np.int64)  # touching, apart, and one of no length
    assert ops.self_times(start, duration).tolist() == [10, 5, 15, 0]
    nested = ops.self_times(np.array([0, 2, 4]), np.array([10, 3, 1]))  # 4..5 inside 2..5 inside 0..10
    assert nested.tolist() == [7, 2, 1]


def test_self_times_written_into_a_given_array_are_those_returned():
    """`out` (how `collect_op_events` writes straight into its columns) is overwritten whole: events of
    no length read 0 there too, whatever it held."""
    require_shared_traces()
    trace = open_trace(TPU_TRACE)
    cases = [(np.array([0, 10, 20, 35], np.int64), np.array([10, 5, 15, 0], np.int64))]
    cases += [(t.start_ps, t.duration_ps) for t in trace.tracks() if len(t)]
    for start, duration in cases:
        out = np.full(len(start), -7, np.int64)
        found = ops.self_times(start, duration, out=out)
        assert found is out and np.array_equal(out, ops.self_times(start, duration))
