"""Comparing across formats: a PyTorch profiler (Kineto) trace of a GPU run against XPlane profiles.

The real files are not recordings of one model: the Kineto traces are HTA's test data (an A100
training job with NCCL collectives and five `ProfilerStep`s; a sampled rank of a recommendation
model), the XPlane ones XProf's TPU v6e inference sample and a JAX CPU training loop the test
records. So these tests check the mechanics of a cross-format comparison, not whether the step-time
change means anything: ops are matched by neutral op family where their names share nothing, every
family row holds exactly that family's ops of each run, the configuration differences (trace format,
framework, device, step source) come first, and the summary says the comparison is across formats
and, where the runs define a step differently, that too.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import PTXLA_TRACE, SHARED_TRACES, TPU_TRACE, require_shared_traces
from tests.jax_recordings import record_training_profile
from tpuscope.analysis.compare.ops import MATCH_CATEGORY, MATCH_STRIPPED_NAME, ONLY_BASE, ONLY_NEW
from tpuscope.analysis.compare.runs import (
    OPS_BY_CATEGORY,
    OPS_BY_NAME,
    OPS_BY_NAME_THEN_CATEGORY,
    RunAnalysis,
    analyze_run,
    compare_runs,
)
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.model.vocabulary import OpFamily
from tpuscope.readers.trace_event.kineto import KINETO_DIALECT, kernel_category
from tpuscope.readers.xla_dialect import XPLANE_DIALECT

KINETO = SHARED_TRACES / "kineto"
A100_STEPS = KINETO / "negative_queue_length_values_check__rank0.json.gz"  # 5 ProfilerSteps, NCCL
RANK0 = KINETO / "trace_filter__sampled_rank-0.json.gz"
RANK1 = KINETO / "trace_filter__sampled_rank-1.json.gz"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name -> RunAnalysis of the real files (each loaded and analysed once)."""
    require_shared_traces()
    found: dict[str, RunAnalysis] = {}

    def get(name: str) -> RunAnalysis:
        if name not in found:
            if name == "jax_cpu":
                path = record_training_profile(tmp_path_factory.mktemp("jax_cpu"), steps=8)
            else:
                path = {
                    "a100": A100_STEPS,
                    "tpu": TPU_TRACE,
                    "rank0": RANK0,
                    "rank1": RANK1,
                    "ptxla": PTXLA_TRACE,
                }[name]
            found[name] = analyze_run(TraceAnalysis(open_trace(path, use_cache=False)))
        return found[name]

    return get


def _expected_by_family(run: RunAnalysis) -> dict[str, float]:
    """Per op family, the run's self time per step, from its own op table and its dialect."""
    ops = run.overview.ops
    assert ops is not None
    totals: dict[str, float] = {}
    for r in range(len(ops)):
        category = ops.label(ops.category[r]) if ops.category[r] else ""
        family = run.dialect.op_family_of(category)
        totals[family] = totals.get(family, 0.0) + float(ops.self_ps[r]) / run.steps
    return totals


def _check_family_rows(c, base: RunAnalysis, new: RunAnalysis) -> None:
    rows = c.ops.rows
    assert {r.match for r in rows} <= {MATCH_CATEGORY, ONLY_BASE, ONLY_NEW}
    assert len({r.name for r in rows}) == len(rows) and {r.name for r in rows} <= set(OpFamily.ALL)
    for side, run in (("base", base), ("new", new)):
        expected = _expected_by_family(run)
        ours = {r.name: getattr(r, f"{side}_self_ps") for r in rows if getattr(r, f"{side}_self_ps") > 0}
        assert ours.keys() == {f for f, v in expected.items() if v > 0}
        for family, value in ours.items():
            assert value == pytest.approx(expected[family], rel=1e-9)
        # Each row's op-table rows are exactly that family's ops: every op in one row.
        table_rows = sorted(t for r in rows for t in getattr(r, f"{side}_rows"))
        assert table_rows == list(range(len(run.overview.ops)))
    # The per-category table is by family too, and agrees with the op rows.
    by_category = {r.name: r for r in c.categories.rows}
    assert by_category.keys() == {r.name for r in rows}
    for r in rows:
        assert by_category[r.name].match == r.match
        assert by_category[r.name].base_self_ps == pytest.approx(r.base_self_ps, rel=1e-9)
        assert by_category[r.name].new_self_ps == pytest.approx(r.new_self_ps, rel=1e-9)


def test_a_kineto_gpu_trace_against_the_tpu_xplane_matches_ops_by_category(runs):
    base, new = runs("a100"), runs("tpu")
    c = compare_runs(base, new)
    assert c.op_matching == OPS_BY_CATEGORY and c.across_formats
    _check_family_rows(c, base, new)
    matched = {r.name: r for r in c.ops.rows if r.match == MATCH_CATEGORY}
    # NCCL kernels on the A100 against XLA all-reduces on the TPU; CUDA copies against copy-done.
    assert {OpFamily.COLLECTIVE, OpFamily.MEMCPY, OpFamily.ELEMENTWISE} <= set(matched)
    collective = matched[OpFamily.COLLECTIVE]
    assert all(name.startswith("ncclKernel_") for name in collective.base_members)
    assert collective.new_members and all("all-reduce" in name for name in collective.new_members)
    assert any(name.startswith("Memcpy") for name in matched[OpFamily.MEMCPY].base_members)
    assert any(name.startswith("copy-done") for name in matched[OpFamily.MEMCPY].new_members)
    # The A100's GEMMs have no partner family in the TPU sample, whose ops are copies and fusions.
    gemm = next(r for r in c.ops.rows if r.name == OpFamily.MATMUL)
    assert gemm.match == ONLY_BASE and any("gemm" in n.lower() for n in gemm.base_members)
    # Configuration differences first: format, framework, device, step definition.
    differing = [p.aspect for p in c.parity if not p.same]
    assert [p.aspect for p in c.parity[: len(differing)]] == differing
    assert {"trace format", "framework", "device kind", "step source"} <= set(differing)
    fmt = next(p for p in c.parity if p.aspect == "trace format")
    assert (fmt.base, fmt.new) == (KINETO_DIALECT.name, XPLANE_DIALECT.name)
    # The summary: the differences, then that it is across formats, then the step definitions.
    summary = c.summary
    assert summary.startswith("The runs differ in configuration (trace format PyTorch profiler vs XPlane")
    assert "across formats" in summary and "matched by category" in summary
    assert c.step_definitions_differ and "define a step differently" in summary
    assert summary.index("across formats") < summary.index("define a step") < summary.index("per step (")


def test_a_kineto_gpu_trace_against_a_jax_cpu_recording(runs):
    base, new = runs("a100"), runs("jax_cpu")
    c = compare_runs(base, new)
    assert c.across_formats
    _check_family_rows(c, base, new)
    matched = {r.name: r for r in c.ops.rows if r.match == MATCH_CATEGORY}
    # cuBLAS/CUTLASS GEMMs against XLA:CPU's `dot`; ATen elementwise kernels against XLA fusions.
    assert OpFamily.MATMUL in matched and OpFamily.ELEMENTWISE in matched
    assert any(n.startswith("dot") for n in matched[OpFamily.MATMUL].new_members)
    # Both mark their loop iterations (ProfilerStep#N, StepTraceAnnotation): the same step definition.
    assert {p.aspect: p.base for p in c.parity}["step source"] == "host step markers"
    assert {p.aspect: p.new for p in c.parity}["step source"] == "host step annotations"
    assert not c.step_definitions_differ and "define a step" not in c.summary
    assert "across formats" in c.summary
    assert c.summary.index("differ in configuration") < c.summary.index("across formats")


def test_one_format_is_still_matched_by_name(runs):
    """Two ranks of one job (same format and framework): kernels are matched by name, not family."""
    c = compare_runs(runs("rank0"), runs("rank1"))
    assert c.op_matching == OPS_BY_NAME and not c.across_formats
    assert MATCH_STRIPPED_NAME in c.ops.match_counts() and MATCH_CATEGORY not in c.ops.match_counts()
    assert "across formats" not in c.summary


def test_one_format_of_two_frameworks_matches_names_first_then_categories(runs):
    """JAX and PyTorch/XLA on XLA:CPU (both XPlane): HLO names could match, and where none does (here
    the programs differ, so no op does), the op families still pair XLA's `dot`s and fusions."""
    base, new = runs("jax_cpu"), runs("ptxla")
    c = compare_runs(base, new)
    assert c.op_matching == OPS_BY_NAME_THEN_CATEGORY and not c.across_formats
    assert "ops no name matches are matched by category" in c.summary and "across formats" not in c.summary
    matched = {r.name: r for r in c.ops.rows if r.match == MATCH_CATEGORY}
    assert OpFamily.MATMUL in matched
    assert any(n.startswith("dot") for n in matched[OpFamily.MATMUL].base_members)
    assert any(n.startswith("dot") for n in matched[OpFamily.MATMUL].new_members)
    for side, run in (("base", base), ("new", new)):  # every op in exactly one row
        table_rows = sorted(t for r in c.ops.rows for t in getattr(r, f"{side}_rows"))
        assert table_rows == list(range(len(run.overview.ops)))


def test_cli_text_and_json_say_it_is_across_formats(runs, capsys):
    require_shared_traces()
    assert main(["compare", str(A100_STEPS), str(TPU_TRACE), "--json", "--no-cache"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["across_formats"] is True and payload["op_matching"] == OPS_BY_CATEGORY
    assert payload["step_definitions_differ"] is True
    assert payload["parity"][0]["same"] is False
    rows = {r["name"]: r for r in payload["ops"]}
    assert rows[OpFamily.COLLECTIVE]["match"] == MATCH_CATEGORY
    assert rows[OpFamily.COLLECTIVE]["base_op_count"] >= 1 and rows[OpFamily.COLLECTIVE]["new_op_count"] >= 1
    assert "across formats" in payload["summary"]
    assert main(["compare", str(A100_STEPS), str(TPU_TRACE), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "trace format: PyTorch profiler  ->  XPlane" in out
    collective_line = next(line for line in out.splitlines() if line.strip().startswith(OpFamily.COLLECTIVE))
    assert collective_line.rstrip().endswith(MATCH_CATEGORY)


def test_op_categories_map_onto_families():
    """XLA's categories (HloInstruction::ToCategory) and the reader's kernel categories."""
    xla = XPLANE_DIALECT.op_family_of
    assert xla("convolution fusion") == xla("dot") == xla("output fusion") == OpFamily.MATMUL
    assert xla("loop fusion") == xla("non-fusion elementwise") == xla("multiply") == OpFamily.ELEMENTWISE
    assert xla("reduce-precision") == OpFamily.ELEMENTWISE  # elementwise, not a reduction
    assert xla("input fusion") == xla("reduce-window") == xla("reduce") == OpFamily.REDUCTION
    assert xla("reduce-scatter") == xla("all-reduce-start") == xla("send-done") == OpFamily.COLLECTIVE
    assert xla("copy-done") == xla("copy-start") == xla("infeed") == OpFamily.MEMCPY
    assert xla("data formatting") == xla("copy") == xla("transpose") == OpFamily.DATA_MOVEMENT
    assert xla("custom fusion") == xla("") == OpFamily.OTHER
    kineto = KINETO_DIALECT.op_family_of
    examples = {
        "ampere_sgemm_128x64_tn": OpFamily.MATMUL,
        "void cudnn::detail::implicit_convolve_sgemm<float>": OpFamily.MATMUL,
        "void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>": OpFamily.ELEMENTWISE,
        "void at::native::reduce_kernel<512, 1>": OpFamily.REDUCTION,
        "triton_red_fused_sum_0": OpFamily.REDUCTION,
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4>": OpFamily.REDUCTION,
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)": OpFamily.COLLECTIVE,
        "Memcpy HtoD (Pageable -> Device)": OpFamily.MEMCPY,
        "Memset (Device)": OpFamily.MEMCPY,
    }
    assert {name: kineto(kernel_category(name)) for name in examples} == examples


def test_every_category_of_the_tpu_sample_has_a_family(runs):
    ops = runs("tpu").overview.ops
    categories = {ops.label(c) for c in set(ops.category.tolist()) if c}
    assert categories and all(XPLANE_DIALECT.op_family_of(c) != OpFamily.OTHER for c in categories)


def test_the_compare_view_shows_family_rows_and_outlines_a_family_in_both(qtbot, tmp_path):
    from tests.ui.widgets import show_exposed
    from tpuscope.ui.compare_view import CompareView, compare_paths
    from tpuscope.ui.timeline.view import PICKED_LAYER

    require_shared_traces()
    view = show_exposed(qtbot, CompareView(), 1500, 1300)
    view.set_result(compare_paths(A100_STEPS, TPU_TRACE))
    assert "across formats" in view.summary.text()
    shown = {view.table.item(r, 0).text(): view.table.item(r, 3).text() for r in range(view.table.rowCount())}
    assert shown[OpFamily.COLLECTIVE] == MATCH_CATEGORY
    assert view.select_op(OpFamily.COLLECTIVE)
    base_outlined = view.base_timeline.highlights.get(PICKED_LAYER)
    new_outlined = view.new_timeline.highlights.get(PICKED_LAYER)
    assert base_outlined and new_outlined
    image = view.grab()
    image.save(str(tmp_path / "compare_across_formats.png"))
    assert image.width() >= 1500
