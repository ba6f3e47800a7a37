"""The recompilation rule names what changed between compilations (HLO protos in /host:metadata).

The JAX recordings (recordings.py) feed `train_step(w, x)` with w f32[256,256] and x of
64, 80, 96, 112 rows (a new size every RECOMPILE_EVERY steps): those are the expected shapes.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import PTXLA_TRACE, TPU_TRACE, require_shared_traces
from tests.diagnose.costs import assert_costed
from tests.diagnose.recordings import RECOMPILE_EVERY, recompile_shapes
from tpuscope.analysis.diagnose import Severity
from tpuscope.analysis.diagnose.recompilation import describe_signature_changes
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.model.programs import ProgramSignature, program_signatures
from tpuscope.readers.xla_dialect import HLO_PROTO_STAT

FEATURES = 256  # recordings.py: batches of (rows, 256) against w of (256, 256)


def _recompilation(report):
    (finding,) = [f for f in report.findings if f.id == "recompilation"]
    return finding


@pytest.fixture(scope="module")
def recompile_finding(recorded_trace):
    return _recompilation(TraceAnalysis(recorded_trace("recompile")).report)


def test_finding_names_the_argument_shapes_that_changed(recompile_finding):
    rows = recompile_shapes()
    m = recompile_finding.metrics
    assert_costed(recompile_finding)
    expected = [
        f"argument 1 changed f32[{a},{FEATURES}] -> f32[{b},{FEATURES}] (step {RECOMPILE_EVERY * (k + 1)})"
        for k, (a, b) in enumerate(zip(rows, rows[1:], strict=False))
    ]
    assert m["argument_changes"] == expected
    assert expected[0] in recompile_finding.explanation
    # The program-id fallback is still there for JSON consumers, but the text names the shapes.
    assert "program ids" not in recompile_finding.explanation


def test_each_compilation_is_listed_with_its_step_shapes_and_time(recompile_finding, recorded_trace):
    trace = recorded_trace("recompile")
    rows = recompile_shapes()
    table = recompile_finding.metrics["signatures"]
    assert [r["step"] for r in table] == [f"step {RECOMPILE_EVERY * k}" for k in range(len(rows))]
    assert [r["arguments"] for r in table] == [
        f"f32[{FEATURES},{FEATURES}], f32[{n},{FEATURES}]" for n in rows
    ]
    assert {r["result"] for r in table} == {f"(f32[{FEATURES},{FEATURES}], f32[])"}
    # Program ids are the ones /host:metadata names jit_train_step(<id>) with.
    names = {trace.strings[int(n)] for p in trace.planes if p.kind == "metadata" for n in p.metadata.name_ids}
    assert all(f"jit_train_step({r['program_id']})" in names for r in table)
    # Each row's time is its own compile event's duration, in time order.
    events = sorted(
        (int(t.start_ps[i]), int(t.duration_ps[i]))
        for t, idx in trace.events_named("backend_compile_and_load")
        for i in idx
    )
    assert [r["compile_ms"] for r in table] == [round(d / 1e9, 3) for _, d in events]
    assert sum(r["compile_ms"] for r in table) == pytest.approx(
        recompile_finding.metrics["compile_ms"], abs=0.01
    )


def test_json_report_keeps_its_keys_and_adds_the_shapes(recorded_paths, capsys):
    assert main(["diagnose", str(recorded_paths["recompile"]), "--json", "--no-cache"]) == 0
    payload = json.loads(capsys.readouterr().out)
    (finding,) = [f for f in payload["findings"] if f["id"] == "recompilation"]
    assert set(finding["metrics"]) >= {
        "function", "compilations", "compile_ms", "percent_of_profile", "compiled_after_first_step",
        "steps", "what_differed", "signatures", "argument_changes",
    }  # fmt: skip
    assert len(finding["metrics"]["signatures"]) == len(recompile_shapes())


def test_healthy_loop_shows_its_one_signature(recorded_trace):
    finding = _recompilation(TraceAnalysis(recorded_trace("healthy")).report)
    assert finding.severity == Severity.INFO
    (function,) = finding.metrics["functions"]
    assert function["arguments"] == [f"f32[{FEATURES},{FEATURES}], f32[128,{FEATURES}]"]  # batches of 128
    assert "argument_changes" not in function


def test_without_hlo_protos_program_ids_are_what_differed(recorded_paths):
    """Older profiles carry no `Hlo Proto` stat: the finding falls back to the program ids."""
    trace = open_trace(recorded_paths["recompile"], use_cache=False)
    for plane in trace.planes:
        if plane.kind == "metadata":
            plane.metadata.stats.columns.pop(HLO_PROTO_STAT, None)
    assert program_signatures(trace) == {}
    finding = _recompilation(TraceAnalysis(trace).report)
    assert "signatures" not in finding.metrics and "argument_changes" not in finding.metrics
    (differed,) = finding.metrics["what_differed"]
    assert differed.startswith("program ids of jit_train_step")
    assert differed in finding.explanation


def test_pytorch_xla_graph_hashes_are_the_recorded_digests():
    require_shared_traces()
    trace = open_trace(PTXLA_TRACE, use_cache=False)
    finding = _recompilation(TraceAnalysis(trace).report)
    digests = {
        str(t.all_stats(int(i))["graph_hash"])
        for t, idx in trace.events_named("XLAGraphExecutor::Compile")
        for i in idx
    }
    (function,) = finding.metrics["functions"]
    assert len(digests) == 2
    assert sorted(function["what_differed"]) == sorted(f"graph_hash {d}" for d in digests)


def test_tpu_warm_up_summary_shows_each_function_arguments():
    require_shared_traces()
    trace = open_trace(TPU_TRACE, use_cache=False)
    finding = _recompilation(TraceAnalysis(trace).report)
    by_module = {s.module_name: s for s in program_signatures(trace).values()}
    for function in finding.metrics["functions"]:
        assert function["arguments"] == [", ".join(by_module[f"jit_{function['function']}"].parameters)]


def _signature(parameters, result="f32[]", names=None):
    return ProgramSignature(
        "jit_g", 1, 1, list(parameters), names or [f"p{i}" for i in range(len(parameters))], result
    )


def test_change_descriptions_cover_count_result_names_and_no_change():
    a = _signature(["f32[8]", "s32[]"])
    b = _signature(["f32[8]", "s32[]", "f32[2]"], result="f32[2]")
    c = _signature(["f32[8]", "s32[]", "f32[2]"], result="f32[2]")
    d = _signature(["bf16[8]", "s32[]", "f32[2]"], result="f32[2]", names=["weights", "p1", "p2"])
    assert describe_signature_changes([a, b, c, d], [None, "step 1", "step 2", None]) == [
        "argument count changed 2 -> 3 (step 1)",
        "result changed f32[] -> f32[2] (step 1)",
        "same argument and result shapes (a static argument or the sharding changed) (step 2)",
        "argument 0 (weights) changed f32[8] -> bf16[8]",
    ]
    assert describe_signature_changes([a]) == []
