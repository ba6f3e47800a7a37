"""Program and allocator memory agree with XProf's Memory Viewer and Memory Profile, to the byte.

XProf (the `xprof` package) is an independent implementation reading the same protos and events;
every file in ../shared/traces with memory data is compared, every program and memory space.
"""

from __future__ import annotations

import pytest

from tests.conftest import ALL_SHARED_TRACES, TF_TRACE, TPU_TRACE, require_shared_traces
from tests.memory.conftest import XProfMemory, mib_to_bytes
from tpuscope.analysis.memory.programs import HBM_SPACE
from tpuscope.analysis.memory.report import memory_report
from tpuscope.app.opener import open_trace

# XProf samples at most this many points of an allocator's timeline (xplane_to_memory_profile.cc,
# max_num_snapshots default); below it the sampled timeline is every event.
XPROF_MAX_SNAPSHOTS = 1000
# The placeholder XProf writes for a profile without HLO protos (the TF CPU sample).
XPROF_NO_MODULE = "NO_MODULE"


def _cases():
    require_shared_traces()
    return [pytest.param(p, id=p.parent.name) for p in ALL_SHARED_TRACES]


@pytest.fixture(scope="module", params=_cases())
def compared(request, tmp_path_factory):
    path = request.param
    return path, memory_report(open_trace(path)), XProfMemory(path, tmp_path_factory.mktemp("xprof_memory"))


def test_program_peaks_equal_xprof_memory_viewer(compared):
    path, report, xprof = compared
    checked = 0
    for program in report.programs:
        theirs = xprof.viewer(program.name, program.memory_space)
        assert mib_to_bytes(theirs.get("peakHeapMib", 0)) == program.peak_heap_bytes, (
            program.name,
            program.memory_space,
        )
        assert mib_to_bytes(theirs.get("peakUnpaddedHeapMib", 0)) == program.peak_unpadded_heap_bytes, (
            program.name
        )
        assert mib_to_bytes(theirs.get("totalBufferAllocationMib", 0)) == program.total_allocation_bytes, (
            program.name
        )
        if program.heap_bytes.size:
            assert [mib_to_bytes(m) for m in theirs["heapSizes"]] == program.heap_bytes.tolist(), program.name
            assert theirs.get("peakHeapSizePosition", 0) == program.peak_position, program.name
        # Every named buffer XProf lists at the peak is one of ours, with the same size and shape.
        ours = {b.buffer_id: b for b in program.buffers_at_peak}
        for heap_object in theirs.get("maxHeap", []):
            buffer_id = int(heap_object.get("logicalBufferId", -1))
            if buffer_id < 0:
                continue  # XProf's "small buffers" bucket
            assert buffer_id in ours, (program.name, buffer_id)
            assert mib_to_bytes(heap_object["logicalBufferSizeMib"]) == ours[buffer_id].bytes
            assert mib_to_bytes(heap_object["unpaddedShapeMib"]) == ours[buffer_id].unpadded_bytes
            assert heap_object["shapeString"] == ours[buffer_id].shape
            assert heap_object["groupName"] == ours[buffer_id].category
        checked += 1
    programs_with_protos = {p.name for p in report.programs}
    if path == TF_TRACE:
        assert not programs_with_protos  # TF on CPU compiles no XLA programs
    else:
        assert checked and all(
            any(p.memory_space == HBM_SPACE and p.name == n for p in report.programs)
            for n in programs_with_protos
        )


def test_every_xprof_program_is_listed(compared):
    path, report, xprof = compared
    listed = {p.name for p in report.programs}
    written = {f.name.removesuffix(".hlo_proto.pb") for f in xprof.copy.parent.glob("*.hlo_proto.pb")}
    assert written - {XPROF_NO_MODULE} == listed


def test_allocator_peaks_and_capacity_equal_xprof_memory_profile(compared):
    path, report, xprof = compared
    per_allocator = xprof.profile().get("memoryProfilePerAllocator", {})
    ours = {a.id: a for a in report.allocators}
    assert set(ours) == set(per_allocator)
    for memory_id, theirs in per_allocator.items():
        mine = ours[memory_id]
        summary = theirs["profileSummary"]
        assert int(summary["memoryCapacity"]) == mine.capacity_bytes, memory_id
        assert int(summary["peakStats"]["peakBytesInUse"]) == mine.peak_in_profile_bytes, memory_id
        sampled = theirs["sampledTimelineSnapshots"]
        if mine.samples < XPROF_MAX_SNAPSHOTS:
            assert len(sampled) == mine.samples
            # The lifetime peak is the largest the allocator reports in any of its events.
            assert mine.peak_bytes_in_use == max(
                int(s["aggregationStats"]["peakBytesInUse"]) for s in sampled
            )
        if path != TF_TRACE:
            assert int(summary["peakBytesUsageLifetime"]) == mine.peak_bytes_in_use, memory_id
        else:
            # Where we differ on purpose: XProf keeps the value of the last event it visits; the
            # TF sample spreads the allocator over threads, so that one is older and smaller.
            assert int(summary["peakBytesUsageLifetime"]) <= mine.peak_bytes_in_use


def test_tpu_sample_figures_named_in_the_issue():
    report = memory_report(open_trace(TPU_TRACE))
    by_id = {a.id: a for a in report.allocators}
    assert sorted(by_id) == ["0", "1", "2", "3"]
    assert by_id["0"].peak_bytes_in_use == 16_106_341_504
    assert {by_id[i].peak_bytes_in_use for i in "123"} == {10_737_555_584}
    assert {a.capacity_bytes for a in report.allocators} == {33_550_237_696}
    (jit_f,) = [p for p in report.program("jit_f") if p.memory_space == HBM_SPACE]
    assert jit_f.name == "jit_f(12190760917235803885)"
    assert jit_f.peak_heap_bytes == 20480 * (1 << 20) + 32


def test_jax_cpu_recording_equals_xprof(memory_recording, tmp_path):
    report = memory_report(open_trace(memory_recording))
    xprof = XProfMemory(memory_recording, tmp_path)
    assert report.programs
    for program in report.programs:
        theirs = xprof.viewer(program.name, program.memory_space)
        assert mib_to_bytes(theirs.get("peakHeapMib", 0)) == program.peak_heap_bytes, program.name
        assert mib_to_bytes(theirs.get("peakUnpaddedHeapMib", 0)) == program.peak_unpadded_heap_bytes
