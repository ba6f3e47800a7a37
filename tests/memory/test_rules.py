"""The memory rules: silent on healthy recordings and on every real profile, firing on the pattern.

JAX on the CPU writes no allocator events (its CPU client allocates without the BFC allocator's
trace events), so the growth cases are host planes shaped like the TPU sample's allocator events,
written by benchmarks/generate_memory_xspace.py: a loop that keeps one 64 MiB output of every step
alive, and the same loop freeing everything. The pressure and padding cases take the real TPU
sample's `jit_f` and change its buffer assignment the way a bigger or badly shaped model would.
"""

from __future__ import annotations

import pytest

from benchmarks.generate_memory_xspace import generate
from tests.conftest import ALL_SHARED_TRACES, TPU_TRACE, require_shared_traces
from tests.hlo_edits import change_program_proto
from tpuscope.analysis.diagnose.padding_waste import round_up_hint
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace

MEMORY_RULES = ("memory_pressure", "padding_waste", "memory_growth")
JIT_F = 12190760917235803885
LEAK_BYTES = 64 << 20


def _memory_findings(trace):
    report = TraceAnalysis(trace).report
    assert not report.rule_errors
    checked = {c["rule"]: c["summary"] for c in report.checked}
    assert all(checked.get(rule) for rule in MEMORY_RULES), checked
    return [f for f in report.findings if f.id in MEMORY_RULES], checked


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.parent.name)
def test_silent_on_every_real_profile(path):
    require_shared_traces()
    findings, _ = _memory_findings(open_trace(path))
    assert findings == []


def test_silent_on_a_healthy_jax_cpu_recording(memory_recording):
    findings, checked = _memory_findings(open_trace(memory_recording))
    assert findings == []
    assert checked["memory_growth"] == "no allocator events in this profile"


def test_growth_fires_when_every_step_keeps_its_output(tmp_path):
    path = generate(4000, tmp_path / "leak.xplane.pb", steps=8, leak_bytes=LEAK_BYTES)
    findings, _ = _memory_findings(open_trace(path))
    (growth,) = [f for f in findings if f.id == "memory_growth"]
    assert growth.metrics["growth_per_step_bytes"] == pytest.approx(LEAK_BYTES, rel=0.05)
    assert growth.metrics["steps"] == 8 and growth.evidence


def test_growth_silent_when_every_step_frees(tmp_path):
    path = generate(4000, tmp_path / "healthy.xplane.pb", steps=8, leak_bytes=0)
    findings, checked = _memory_findings(open_trace(path))
    assert findings == []
    assert "over 8 steps" in checked["memory_growth"]


def _with_jit_f(change):
    """The TPU sample with its `jit_f` HLO proto changed by `change(proto)`."""
    return change_program_proto(open_trace(TPU_TRACE, use_cache=False), "jit_f", change)


def test_pressure_fires_near_capacity():
    def grow(proto):  # every 5 GiB buffer becomes 7.5 GiB: the 20 GiB peak becomes 30 GiB of 31.25 GiB
        for buffer in proto.buffer_assignment.logical_buffers:
            if buffer.size == 5 << 30:
                buffer.size = 15 << 29

    findings, _ = _memory_findings(_with_jit_f(grow))
    (pressure,) = [f for f in findings if f.id == "memory_pressure"]
    assert pressure.metrics["program"] == f"jit_f({JIT_F})"
    assert pressure.metrics["peak_heap_bytes"] == 4 * (15 << 29) + 32
    assert "f32[5,1024,1024,256]" in pressure.explanation and pressure.evidence


def test_padding_fires_on_badly_shaped_buffers():
    def reshape(proto):  # same padded sizes, but the data is [5,1024,1024,130]: 49% of it is padding
        for computation in proto.hlo_module.computations:
            for instruction in computation.instructions:
                for shape in [instruction.shape, *instruction.shape.tuple_shapes]:
                    if list(shape.dimensions) == [5, 1024, 1024, 256]:
                        shape.dimensions[3] = 130

    findings, _ = _memory_findings(_with_jit_f(reshape))
    (padding,) = [f for f in findings if f.id == "padding_waste"]
    assert padding.metrics["padding_percent"] == pytest.approx(100 * 126 / 256, abs=0.1)
    assert "dimension 3 (130) to a multiple of 128" in padding.explanation


def test_round_up_hint():
    assert (
        round_up_hint("f32[10,500]{1,0:T(8,128)}")
        == "dimension 0 (10) to a multiple of 8, dimension 1 (500) to a multiple of 128"
    )
    assert round_up_hint("bf16[16,512]{1,0:T(8,128)(2,1)}") == ""
    assert round_up_hint("f32[10,500]{1,0}") == ""
