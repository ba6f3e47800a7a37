"""The window's analyses are computed once per trace for all its views together, off the UI thread,
and a result computed for a previous trace never reaches a view."""

from __future__ import annotations

import threading

import pytest

from tests.call_counts import SHARED_ANALYSES, count_shared_analyses
from tests.conftest import TPU_TRACE
from tests.ui.conftest import open_and_wait
from tpuscope.analysis.diagnose import engine
from tpuscope.analysis.session import STEPS, Result
from tpuscope.app.opener import open_trace
from tpuscope.ui.analysis_hub import AnalysisHub
from tpuscope.ui.registry import TIMELINE, VIEWS


@pytest.fixture
def counts(monkeypatch):
    return count_shared_analyses(monkeypatch)


def test_every_view_together_computes_each_analysis_once(qtbot, window, counts):
    on_ui_thread = []
    window.hub.resultReady.connect(lambda name, _value: on_ui_thread.append(threading.current_thread()))
    open_and_wait(qtbot, window, TPU_TRACE)
    for spec in VIEWS:  # every tab shown, as a user clicking through them
        assert window.show_view(spec.key)
        window.hub.wait()
    assert counts == {name: 1 for _, name in SHARED_ANALYSES}
    assert on_ui_thread and set(on_ui_thread) == {threading.main_thread()}
    computed = window.hub.analysis.computed
    assert len(computed) == len(set(computed))
    # The overview's numbers and the diagnostics' report are the same objects.
    assert window.views["overview"].overview.report is window.views["diagnostics"].report
    assert window.views["overview"].overview.ops is window.views["ops"].table
    # Another device in the op breakdown collects that device's ops once; going back costs nothing.
    ops_view = window.views["ops"]
    ops_view.set_device(1)
    window.hub.wait()
    ops_view.set_device("all")
    window.hub.wait()
    assert counts["collect_op_events"] == 2
    assert ops_view.table is window.views["overview"].overview.ops
    assert counts["find_steps"] == counts["diagnose"] == 1
    # A second trace is analysed afresh, once.
    open_and_wait(qtbot, window, TPU_TRACE.parent)
    for spec in VIEWS:
        window.show_view(spec.key)
        window.hub.wait()
    assert counts["find_steps"] == counts["diagnose"] == counts["overview_figures"] == 2


def test_the_window_is_shown_before_the_analyses_finish(qtbot, window, counts):
    """The trace reaches the timeline at once; the step band and the views fill in afterwards."""
    with qtbot.waitSignal(window.traceLoaded, timeout=60_000):
        window.open_path(TPU_TRACE)
    assert window.timeline.trace is window.trace
    window.hub.wait()
    assert window.timeline.steps is not None and len(window.timeline.steps) == 100
    assert "100 steps" in window.status_label.text()
    assert [spec.key for spec in VIEWS if spec.key != TIMELINE] == [
        key for key in window.views if key != TIMELINE
    ]


def test_the_overview_paints_its_figures_before_the_rules_have_run(qtbot, window, monkeypatch):
    """Issue 12: the window fills in as analyses finish; the rules take longest, so the overview's
    figures do not wait for them, and a hidden Diagnostics tab asks for nothing until opened."""
    release = threading.Event()
    real_diagnose = engine.diagnose

    def slow_diagnose(*args, **kwargs):
        assert release.wait(60)
        return real_diagnose(*args, **kwargs)

    monkeypatch.setattr(engine, "diagnose", slow_diagnose)
    overview_view, diagnostics = window.views["overview"], window.views["diagnostics"]
    try:
        with qtbot.waitSignal(window.traceLoaded, timeout=60_000):
            window.open_path(TPU_TRACE)
        qtbot.waitUntil(lambda: overview_view.overview is not None, timeout=60_000)
        figures = overview_view.overview
        assert figures.report is None and len(figures.steps) == 100 and figures.ops is not None
        assert overview_view.findings_caption.text() == "diagnosing…"
        assert overview_view.ops_table.rowCount() > 0
        assert diagnostics._asked_generation != window.hub.generation  # hidden: it has not asked
    finally:
        release.set()
    with qtbot.waitSignal(overview_view.overviewReady, timeout=60_000):
        pass
    assert overview_view.overview.report is not None
    assert overview_view.overview.series is figures.series  # the same figures, now with the report
    window.show_view("diagnostics")
    window.hub.wait()
    assert diagnostics.report is overview_view.overview.report


def test_a_result_of_the_previous_trace_is_dropped(qtbot):
    hub = AnalysisHub()
    release = threading.Event()
    old_trace, new_trace = open_trace(TPU_TRACE), open_trace(TPU_TRACE, use_cache=False)

    def slow(analysis):
        if analysis.trace is old_trace:
            assert release.wait(30)
        return analysis.trace

    result: Result[object] = Result("which_trace", slow)
    delivered = []
    hub.set_trace(old_trace)
    hub.request(result, delivered.append)
    assert hub.is_busy()
    hub.set_trace(new_trace)  # while the old trace's result is still being computed
    hub.request(result, delivered.append)
    release.set()
    hub.wait()
    assert delivered == [new_trace]


def test_a_late_subscriber_gets_a_computed_result_at_once(qtbot):
    hub = AnalysisHub()
    hub.set_trace(open_trace(TPU_TRACE))
    first, second = [], []
    hub.request(STEPS, first.append)
    hub.wait()
    hub.subscribe(STEPS, second.append)  # computed already: delivered without a worker
    assert not hub.is_busy()
    assert len(first) == 1 and second == first


def test_a_failing_analysis_reaches_the_view_that_asked(qtbot):
    hub = AnalysisHub()
    hub.set_trace(open_trace(TPU_TRACE))

    def broken(_analysis):
        raise RuntimeError("a rule's bug")

    errors, values = [], []
    hub.request(Result("broken", broken), values.append, errors.append)
    hub.wait()
    assert values == [] and [str(e) for e in errors] == ["a rule's bug"]
