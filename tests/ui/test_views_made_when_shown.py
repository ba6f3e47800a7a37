"""Issue 23: the window makes a tab's view when the tab is first shown, so a load waits for the
modules and widgets of the view on screen only; a view made after the load shows that trace."""

from __future__ import annotations

from tests.conftest import TPU_TRACE, require_shared_traces
from tests.ui.conftest import open_and_wait
from tpuscope.ui.registry import TIMELINE, VIEWS
from tpuscope.ui.views import View

TAB_KEYS = [spec.key for spec in VIEWS if spec.available()]


def test_a_load_makes_the_overview_only_and_every_tab_is_there(qtbot, window):
    require_shared_traces()
    open_and_wait(qtbot, window, TPU_TRACE)
    assert sorted(window.made_views) == sorted(["overview", TIMELINE])
    assert [window.tabs.tabText(i) for i in range(window.tabs.count())] == [
        spec.title for spec in VIEWS if spec.key in TAB_KEYS
    ]
    assert list(window.views) == TAB_KEYS  # listing the keys makes nothing
    assert sorted(window.made_views) == sorted(["overview", TIMELINE])


def test_a_tab_clicked_after_the_load_gets_its_view_with_the_loaded_trace(qtbot, window):
    require_shared_traces()
    trace = open_and_wait(qtbot, window, TPU_TRACE)
    index = next(i for i in range(window.tabs.count()) if window.tabs.tabText(i) == "Op breakdown")
    window.tabs.setCurrentIndex(index)  # as the user's click on the tab
    ops = window.made_views["ops"]
    assert isinstance(ops, View) and window.tabs.currentWidget() is ops and window.tabs.indexOf(ops) == index
    window.hub.wait()
    qtbot.waitUntil(lambda: ops.table is not None)
    overview = window.views["overview"].overview
    assert ops.table is overview.ops  # the same op table the Overview shows: computed once
    assert ops.hub.trace is trace
    diagnostics = window.views["diagnostics"]  # looked up (not shown): made, showing the trace
    assert diagnostics.trace is trace and window.tabs.currentWidget() is ops


def test_a_window_shown_on_the_timeline_makes_no_other_view(qtbot, window):
    """`tpuscope screenshot --view timeline`: set_result with the timeline in front makes no Overview
    (its module pulls in pyqtgraph) and computes none of its results."""
    require_shared_traces()
    from tpuscope.ui.loader import prepare

    result = prepare(TPU_TRACE)
    window.set_result(result, TIMELINE)
    window.hub.wait()
    assert window.tabs.currentWidget() is window.views[TIMELINE]
    assert sorted(window.made_views) == [TIMELINE]
    assert "overview_figures" not in result.analysis.computed


def test_ops_outlined_before_a_view_is_made_are_outlined_there_too(qtbot, window):
    require_shared_traces()
    open_and_wait(qtbot, window, TPU_TRACE)
    overview = window.views["overview"].overview
    name = overview.ops.names()[0]
    window.outline_ops({name})
    ops = window.views["ops"]
    window.show_view("ops")
    window.hub.wait()
    qtbot.waitUntil(lambda: ops.table is not None)
    assert ops.model.outlined_names == {name}
