"""The main window's wiring to the views other parts provide: tabs, highlight and zoom requests, capture."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog

from tests.conftest import PTXLA_TRACE, TPU_TRACE
from tests.ui.conftest import LOAD_TIMEOUT_MS, open_and_wait
from tpuscope.ui.capture_dialog import CaptureDialog
from tpuscope.ui.registry import TIMELINE, VIEWS, ViewSpec
from tpuscope.ui.timeline.view import PICKED_LAYER
from tpuscope.ui.views import FindingAt, OpRow, View

# Every registered view but the timeline (which the window builds itself) is a `View` tab.
TAB_VIEWS = [spec.key for spec in VIEWS if spec.key != TIMELINE]


@pytest.mark.parametrize("key", TAB_VIEWS)
def test_each_view_is_a_tab_on_the_windows_shared_analyses(qtbot, window, key):
    view = window.views[key]
    spec = next(s for s in VIEWS if s.key == key)
    assert isinstance(view, spec.load()) and isinstance(view, View)
    assert view.hub is window.hub
    assert window.tabs.tabText(window.tabs.indexOf(view)) == spec.title
    trace = open_and_wait(qtbot, window, TPU_TRACE)
    assert view.hub.trace is trace
    assert window.show_view(key) and window.tabs.currentWidget() is view


@pytest.mark.parametrize("key", TAB_VIEWS)
def test_highlight_and_zoom_requests_reach_the_timeline(qtbot, window, key):
    trace = open_and_wait(qtbot, window, TPU_TRACE)
    view = window.views[key]
    window.show_view(key)
    track = trace.find_plane("/device:TPU:1").track("XLA Ops")
    picked = np.flatnonzero(track.duration_ps > np.median(track.duration_ps))[:5]
    timeline = window.timeline
    before = (timeline.t0_ps, timeline.t1_ps)
    view.highlightRequested.emit([(track, picked)])
    assert set(timeline.highlights[PICKED_LAYER]) == {id(track)}
    assert window.tabs.currentWidget() is view  # a highlight neither steals the tab nor moves the timeline
    assert (timeline.t0_ps, timeline.t1_ps) == before
    message = window.statusBar().currentMessage()
    assert f"{len(picked)} events outlined" in message
    assert window.tabs.tabText(window.tabs.indexOf(view)) in message
    t0, t1 = int(track.start_ps[picked[0]]), int(track.end_ps[picked[-1]])
    view.zoomRequested.emit(t0, t1)
    assert window.tabs.currentWidget() is window.views["timeline"]
    assert (timeline.t0_ps, timeline.t1_ps) == pytest.approx((t0, t1))
    qtbot.keyClick(timeline, Qt.Key_Escape)
    assert timeline.highlights == {}


def test_missing_views_are_left_out_but_broken_ones_raise():
    assert ViewSpec("nothing", "Nothing", "tpuscope.ui.no_such_view", "NoSuchView").load() is None
    with pytest.raises(AttributeError):
        ViewSpec("broken", "Broken", "tpuscope.ui.timeline.view", "NoSuchClass").load()


def test_file_capture_opens_what_the_dialog_captured(qtbot, window, monkeypatch):
    dialog_class = CaptureDialog
    action = next(
        a for a in window.menuBar().actions()[0].menu().actions() if a.text().startswith("&Capture")
    )
    opened = []

    def finish_at_once(dialog):  # stands in for the user running a capture: emits a real profile's folder
        opened.append(dialog)
        dialog.captured.emit(str(PTXLA_TRACE.parent))
        return QDialog.Accepted

    monkeypatch.setattr(dialog_class, "exec", finish_at_once)
    with qtbot.waitSignal(window.traceLoaded, timeout=LOAD_TIMEOUT_MS):
        action.trigger()
    assert len(opened) == 1 and isinstance(opened[0], dialog_class)
    assert window.path == PTXLA_TRACE.parent


def test_overview_leads_to_the_other_tabs_with_the_row_selected(qtbot, window):
    open_and_wait(qtbot, window, TPU_TRACE)
    overview, ops, diagnostics = window.views["overview"], window.views["ops"], window.views["diagnostics"]
    overview.openRequested.emit("diagnostics", None)
    assert window.tabs.currentWidget() is diagnostics
    overview.openRequested.emit("timeline", None)
    assert window.tabs.currentWidget() is window.views["timeline"]
    overview.openRequested.emit("ops", OpRow(2))
    assert window.tabs.currentWidget() is ops
    window.hub.wait()  # the op table the ops view shows may still be on its way
    selected = ops.table_view.selectionModel().selectedRows()
    assert [ops.model.table_row(i.row()) for i in selected] == [2]
    assert diagnostics.findings.count() > 1
    overview.openRequested.emit("diagnostics", FindingAt(1))
    assert diagnostics.findings.currentRow() == 1
