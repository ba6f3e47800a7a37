"""The shared per-trace analysis: every result computed once, in dependency order, equal to the
functions it wraps, and the commands read the same object."""

from __future__ import annotations

import threading

import pytest

from tests.call_counts import SHARED_ANALYSES, count_shared_analyses
from tests.conftest import TPU_TRACE
from tpuscope.analysis import ops, trace_results
from tpuscope.analysis.compare.runs import RUN_ANALYSIS, analyze_run, compare_runs
from tpuscope.analysis.diagnose import engine
from tpuscope.analysis.overview import overview_figures, with_report
from tpuscope.analysis.session import HOST_NAMES, OVERVIEW, POD, Result, TraceAnalysis
from tpuscope.app.opener import open_trace


@pytest.fixture(scope="module")
def tpu_trace():
    return open_trace(TPU_TRACE)


@pytest.fixture
def counts(monkeypatch):
    return count_shared_analyses(monkeypatch)


def test_every_result_is_computed_once_and_shared(tpu_trace, counts):
    analysis = TraceAnalysis(tpu_trace)
    first = analysis.overview  # needs steps, framework, devices, the report and the op table
    assert counts == {name: 1 for _, name in SHARED_ANALYSES}
    # Asking again, or for what the overview was made from, computes nothing more.
    assert analysis.overview is first
    assert analysis.report is first.report
    assert analysis.steps is first.steps is analysis.report.steps
    assert analysis.framework is first.framework
    assert analysis.op_table("op", "all") is first.ops
    assert analysis.context.devices is analysis.devices
    assert counts == {name: 1 for _, name in SHARED_ANALYSES}
    # Another grouping or device regroups the same op events, or collects one device's.
    analysis.op_table("category", "all")
    assert counts["collect_op_events"] == 1
    analysis.op_table("op", 2)
    analysis.op_table("category", 2)
    assert counts["collect_op_events"] == 2
    # The dependencies came first.
    order = analysis.computed
    assert order.index("steps") < order.index("report") < order.index("overview")
    assert order.index("context") < order.index("pod") < order.index("report")


def test_results_equal_the_functions_they_share(tpu_trace):
    analysis = TraceAnalysis(tpu_trace)
    fresh = TraceAnalysis(tpu_trace)
    report = engine.diagnose(fresh.context)
    alone = with_report(overview_figures(fresh.context, fresh.op_table("op", "all")), report)
    assert analysis.overview.to_json() == alone.to_json()
    assert analysis.report.to_json() == report.to_json()
    by_program = ops.op_breakdown(tpu_trace, 1, "program")
    assert analysis.op_table("program", 1).rows_json() == by_program.rows_json()


def test_a_context_computes_nothing_its_analysis_holds(tpu_trace, counts):
    analysis = TraceAnalysis(tpu_trace)
    ctx = analysis.context
    report, overview = analysis.report, analysis.overview
    comparison = compare_runs(analyze_run(analysis), analyze_run(analysis))
    assert comparison.findings.to_json() == {"new": [], "resolved": [], "changed": []}
    # The rules, the overview and the comparison read one context, whose facts are the results.
    assert ctx.steps is analysis.steps is report.steps is overview.steps
    assert ctx.framework is analysis.framework and ctx.devices is analysis.devices
    assert ctx.host_names is analysis.get(HOST_NAMES) and ctx.op_table is analysis.op_table("op", "all")
    assert ctx.get(POD) is analysis.pod is overview.pod
    assert analysis.get(RUN_ANALYSIS).overview is overview
    # Each result once, each analysis function once.
    assert len(analysis.computed) == len(set(analysis.computed))
    assert {"context", "pod", "report", "overview", "run_analysis"} <= set(analysis.computed)
    assert counts == {name: 1 for _, name in SHARED_ANALYSES}


def test_threads_asking_at_once_compute_once(tpu_trace, counts):
    analysis = TraceAnalysis(tpu_trace)
    gate = threading.Barrier(4)
    results = []

    def ask():
        gate.wait()
        results.append(analysis.get(OVERVIEW))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and all(r is results[0] for r in results)
    assert counts == {name: 1 for _, name in SHARED_ANALYSES}


def test_a_failing_result_raises_and_is_retried():
    attempts = []

    def flaky(_analysis):
        attempts.append(1)
        if len(attempts) == 1:
            raise ValueError("first try fails")
        return "fine"

    analysis = TraceAnalysis(open_trace(TPU_TRACE))
    result: Result[str] = Result("flaky", flaky)
    with pytest.raises(ValueError):
        analysis.get(result)
    assert not analysis.has(result)
    assert analysis.get(result) == "fine" and analysis.has(result)


def test_results_started_ahead_are_the_ones_asked_for(tpu_trace, counts):
    ahead, inline = TraceAnalysis(tpu_trace), TraceAnalysis(tpu_trace)
    ahead.start(POD, ops_result := trace_results.op_table_result("op", "all"))
    # The caller asks at once, while the background thread computes: each result once, shared.
    assert ahead.overview.to_json() == inline.overview.to_json()
    assert ahead.get(POD) is ahead.overview.pod and ahead.get(ops_result) is ahead.overview.ops
    assert len(ahead.computed) == len(set(ahead.computed))


def test_a_result_failing_ahead_raises_where_it_is_asked_for():
    attempts: list[str] = []
    done = threading.Event()

    def failing(_analysis):
        attempts.append(threading.current_thread().name)
        if len(attempts) == 1:
            done.set()
        raise ValueError("cannot be computed")

    analysis = TraceAnalysis(open_trace(TPU_TRACE))
    result: Result[str] = Result("failing", failing)
    analysis.start(result)
    assert done.wait(30)
    with pytest.raises(ValueError, match="cannot be computed"):
        analysis.get(result)  # computed again here, and its error raised to the caller
    assert len(attempts) == 2 and attempts[1] == threading.current_thread().name


@pytest.mark.parametrize(
    "argv",
    [["overview", "--json"], ["diagnose", "--json"], ["ops", "--json"], ["ops", "--by", "category", "--csv"]],
)
def test_each_command_computes_each_analysis_once(counts, argv, capsys):
    from tpuscope.cli import main

    assert main([argv[0], str(TPU_TRACE), *argv[1:]]) == 0
    assert capsys.readouterr().out
    assert all(n <= 1 for n in counts.values()), counts
