"""Findings that name ops name their source lines too, as `ops --json` names them.

Real profiles: the JAX CPU recordings (recordings.py: the stack-frame index, no per-op source stat)
for host callbacks and recompilation, the TPU v6e sample (per-op source stats) for async waits and,
with its `jit_f` proto given a source line, for memory at the peak. GENERATED XSpaces
(xspace_builder.py, the sample's stats) for the TPU matmul rules, their ops carrying the `source`
stat as XLA:TPU writes it.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from tests.conftest import TPU_TRACE, require_shared_traces
from tests.diagnose import recordings
from tests.diagnose.test_generated_tpu_rules import BF16, F32, GATHER, HEALTHY, N, at_utilization, matmul
from tests.diagnose.xspace_builder import Op, TpuSteps, tpu_profile
from tests.hlo_edits import change_program_proto
from tpuscope.analysis.diagnose import (
    async_wait,
    dtype,
    embedding_lookup,
    flops_utilization,
    host_callback,
    shape_alignment,
)
from tpuscope.analysis.diagnose.op_evidence import lines_words, short_source
from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.readers.xplane import hlo_pb2

LINE = "/workspace/model/layers.py:42"  # where the generated ops say they come from
JIT_F = 12190760917235803885


def _line_of(text: str) -> int:
    """The line of recordings.py holding `text` (what the recorded stacks point at)."""
    source = inspect.getsource(recordings).splitlines()
    (found,) = [k for k, line in enumerate(source, start=1) if text in line]
    return found


def _open(tmp_path, ops):
    return TraceAnalysis(
        open_trace(tpu_profile(tmp_path / "generated.xplane.pb", TpuSteps(ops)), use_cache=False)
    )


def _sourced(op: Op) -> Op:
    return dataclasses.replace(op, source=LINE)


def _op_rows_name_the_line(rows):
    assert rows and all(row["source"] == LINE for row in rows), rows


def test_matmul_rules_name_the_line_of_each_op(tmp_path):
    slow = at_utilization(_sourced(matmul("fusion.3", N, N, N)), 0.2)
    finding = flops_utilization.run(_open(tmp_path, [HEALTHY[0], slow]).context).findings[0]
    assert finding.metrics["ops"][0]["op"] == "fusion.3"
    assert finding.metrics["ops"][0]["source"] == LINE
    assert "(from layers.py:42)" in finding.explanation

    odd = _sourced(matmul("fusion.4", N, 130, N))
    padded_time = at_utilization(matmul("padded", N, 256, N), 0.8)[1]
    finding = shape_alignment.run(_open(tmp_path, [(odd, padded_time)]).context).findings[0]
    _op_rows_name_the_line(finding.metrics["ops"])
    assert "`fusion.4` (from layers.py:42) on bf16" in finding.explanation

    f32 = at_utilization(_sourced(matmul("fusion.5", N, N, N, "f32", F32)), 0.3)
    reduce = Op(
        "reduce_fusion",
        f"%reduce_fusion = f32[{N}]{{0:T(1024)}} fusion(bf16[{N},{N}]{BF16} %p0), kind=kInput, "
        "calls=%fused_reduce",
        "reduction fusion",
        N * N,
        2 * N * N + 4 * N,
        source="/workspace/model/loss.py:7",
    )
    matmuls, promotions = dtype.run(_open(tmp_path, [f32, (reduce, 20_000_000)]).context).findings
    _op_rows_name_the_line(matmuls.metrics["ops"])
    assert "layers.py:42" in matmuls.explanation
    assert promotions.metrics["reductions"][0]["source"] == "/workspace/model/loss.py:7"
    assert "(from loss.py:7)" in promotions.explanation
    assert promotions.impact is not None and matmuls.impact is not None  # issue 24's impact kept

    gather = _sourced(GATHER)
    busy = sum(d for _, d in HEALTHY)
    finding = embedding_lookup.run(_open(tmp_path, [(gather, busy), *HEALTHY]).context).findings[0]
    assert finding.metrics["ops"][0] == {**finding.metrics["ops"][0], "op": "gather_fusion", "source": LINE}
    assert "(from layers.py:42)" in finding.explanation


def test_ops_without_a_line_say_so_with_an_empty_source(tmp_path):
    odd = matmul("fusion.4", N, 130, N)  # no source stat, no program proto
    padded_time = at_utilization(matmul("padded", N, 256, N), 0.8)[1]
    finding = shape_alignment.run(_open(tmp_path, [(odd, padded_time)]).context).findings[0]
    assert [row["source"] for row in finding.metrics["ops"]] == [""]
    assert "(from" not in finding.explanation


def test_async_waits_name_the_same_line_as_the_op_table():
    require_shared_traces()
    analysis = TraceAnalysis(open_trace(TPU_TRACE))
    finding = async_wait.run(analysis.context).findings[0]
    table = analysis.op_table("op")
    assert table is not None
    code = analysis.get(PROGRAM_CODE)
    by_name = {row["name"]: row["source"] for row in table.rows_json(code=code)}
    for row in finding.metrics["ops"]:
        assert row["source"] == by_name[row["op"]]  # XProf: copy-done ops have no source line
    assert finding.impact is not None


def test_host_callbacks_name_the_line_of_the_print(recorded_trace):
    finding = host_callback.run(TraceAnalysis(recorded_trace("debug_print")).context).findings[0]
    (op,) = finding.metrics["op_sources"]
    assert op["op"] == "debug_print.1"
    line = _line_of("jax.debug.print(")
    assert op["source"].endswith(f"recordings.py:{line}")
    assert f"(from recordings.py:{line})" in finding.explanation


def test_recompilation_names_the_line_that_calls_the_function(recorded_trace):
    report = TraceAnalysis(recorded_trace("recompile")).report
    (finding,) = [f for f in report.findings if f.id == "recompilation"]
    line = _line_of("w, loss = train_step(w, x)")
    assert finding.metrics["caller"].endswith(f"recordings.py:{line}")
    assert f"It is called from recordings.py:{line}." in finding.explanation


def _with_jit_f_at_a_line(trace, instruction_names: set[str]):
    """The TPU sample's `jit_f` with each named instruction given `layers.py:42` as its source."""

    def at_the_line(proto):
        for computation in proto.hlo_module.computations:
            for instruction in computation.instructions:
                if instruction.name in instruction_names:
                    instruction.metadata.source_file = LINE.rsplit(":", 1)[0]
                    instruction.metadata.source_line = 42

    return change_program_proto(trace, "jit_f", at_the_line, hlo_pb2.HloCodeProto)


def test_memory_at_the_peak_names_the_line_of_its_biggest_buffers():
    require_shared_traces()
    from tpuscope.analysis.diagnose import memory_pressure

    def grow(proto):  # as tests/memory/test_rules.py: the 20 GiB peak becomes 30 GiB of 31.25 GiB
        for buffer in proto.buffer_assignment.logical_buffers:
            if buffer.size == 5 << 30:
                buffer.size = 15 << 29

    trace = change_program_proto(open_trace(TPU_TRACE, use_cache=False), "jit_f", grow)
    plain = memory_pressure.run(TraceAnalysis(trace).context).findings[0]
    defined_by = {b["defined_by"] for b in plain.metrics["biggest_buffers"]}
    assert all(b["source"] == "" for b in plain.metrics["biggest_buffers"])  # the sample has none
    finding = memory_pressure.run(TraceAnalysis(_with_jit_f_at_a_line(trace, defined_by)).context).findings[0]
    assert [b["source"] for b in finding.metrics["biggest_buffers"]] == [LINE] * len(defined_by)
    assert "(from layers.py:42)" in finding.explanation
    assert finding.impact is not None and finding.impact.bytes == plain.impact.bytes


@pytest.mark.parametrize(
    ("sources", "words"),
    [
        ([], ""),
        (["", ""], ""),
        (["/a/b.py:3", "/a/b.py:3", "c.py:9"], " (from b.py:3, c.py:9)"),
        (["a.py:1", "b.py:2", "c.py:3", "d.py:4"], " (from a.py:1, b.py:2, c.py:3 and 1 more)"),
    ],
)
def test_lines_words(sources, words):
    assert lines_words(sources) == words
    assert short_source("/x/y/model.py:12") == "model.py:12"
