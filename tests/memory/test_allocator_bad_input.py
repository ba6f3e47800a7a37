"""Allocator events that are inconsistent give a partial answer with a note, never an exception."""

from __future__ import annotations

from tpuscope.analysis.memory.report import memory_report
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.readers.xplane import xplane_pb2

STATS = ["index_on_host", "bytes_reserved", "bytes_allocated", "bytes_available", "peak_bytes_in_use",
         "requested_bytes", "allocation_bytes", "addr"]  # fmt: skip


def _write(tmp_path, events):
    """A /host:CPU plane with one thread of allocator events: (name, offset_ps, {stat: value})."""
    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=1, name="/host:CPU")
    for i, name in enumerate(STATS, start=1):
        plane.stat_metadata[i].id = i
        plane.stat_metadata[i].name = name
    for i, name in enumerate(["MemoryAllocation", "MemoryDeallocation"], start=1):
        plane.event_metadata[i].id = i
        plane.event_metadata[i].name = name
    line = plane.lines.add(id=1, name="allocator", timestamp_ns=1_000)
    for name, offset, stats in events:
        event = line.events.add(metadata_id=1 if name == "MemoryAllocation" else 2, offset_ps=offset)
        for stat, value in stats.items():
            event.stats.add(metadata_id=STATS.index(stat) + 1, int64_value=value)
    path = tmp_path / "allocator.xplane.pb"
    path.write_bytes(space.SerializeToString())
    return path


def _state(allocated, available=1000, addr=0, size=0, peak=None):
    stats = {"index_on_host": 0, "bytes_allocated": allocated, "bytes_available": available, "addr": addr,
             "allocation_bytes": size}  # fmt: skip
    if peak is not None:
        stats["peak_bytes_in_use"] = peak
    return stats


def test_free_without_alloc_and_missing_stats(tmp_path, capsys):
    path = _write(tmp_path, [
        ("MemoryDeallocation", 10, _state(0, addr=77, size=50)),  # frees what the profile never saw
        ("MemoryAllocation", 20, _state(100, 900, addr=1, size=100, peak=100)),
        ("MemoryAllocation", 30, {"index_on_host": 0}),  # no sizes at all
        ("MemoryAllocation", 40, _state(-5, addr=2, size=-5)),  # negative sizes
        ("MemoryDeallocation", 50, _state(0, addr=1, size=100, peak=100)),
    ])  # fmt: skip
    (allocator,) = memory_report(open_trace(path)).allocators
    assert allocator.id == "0" and allocator.samples == 5
    assert allocator.peak_in_profile_bytes == 100 and allocator.capacity_bytes == 1000
    assert allocator.notes  # the missing / negative sizes are said
    assert main(["memory", str(path), "--json"]) == 0
    assert '"allocators"' in capsys.readouterr().out


def test_events_without_allocator_id(tmp_path):
    path = _write(tmp_path, [("MemoryAllocation", 10, {"bytes_allocated": 10})])
    (allocator,) = memory_report(open_trace(path)).allocators
    assert allocator.id == "" and any("name no allocator" in n for n in allocator.notes)
