"""The main window's wiring to the views other parts provide: tabs, highlight and zoom requests, capture."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog

from tests.conftest import PTXLA_TRACE, TPU_TRACE
from tests.ui.conftest import LOAD_TIMEOUT_MS, open_and_wait
from tpuscope.ui.optional_views import OPTIONAL_MODULES, optional_class
from tpuscope.ui.timeline.view import PICKED_LAYER

# The views other parts provide; each present one is tested (overview may not have landed yet).
TAB_VIEWS = [key for key in ("ops", "diagnostics", "overview") if optional_class(key) is not None]


@pytest.mark.parametrize("key", TAB_VIEWS)
def test_each_view_is_a_tab_that_receives_the_trace(qtbot, window, key, monkeypatch):
    view = window.views[key]
    assert isinstance(view, optional_class(key))
    received = []
    original = view.set_trace
    monkeypatch.setattr(view, "set_trace", lambda trace: (received.append(trace), original(trace)))
    trace = open_and_wait(qtbot, window, TPU_TRACE)
    assert received == [trace]
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


def test_missing_views_are_left_out_but_broken_ones_raise(monkeypatch):
    monkeypatch.setitem(OPTIONAL_MODULES, "nothing", ("tpuscope.ui.no_such_view", "NoSuchView"))
    assert optional_class("nothing") is None
    monkeypatch.setitem(OPTIONAL_MODULES, "broken", ("tpuscope.ui.timeline.view", "NoSuchClass"))
    with pytest.raises(AttributeError):
        optional_class("broken")


def test_file_capture_opens_what_the_dialog_captured(qtbot, window, monkeypatch):
    dialog_class = optional_class("capture")
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


@pytest.mark.skipif(optional_class("overview") is None, reason="the overview view has not landed yet")
def test_overview_leads_to_the_other_tabs_with_the_row_selected(qtbot, window):
    open_and_wait(qtbot, window, TPU_TRACE)
    overview, ops, diagnostics = window.views["overview"], window.views["ops"], window.views["diagnostics"]
    overview.openViewRequested.emit("diagnostics")
    assert window.tabs.currentWidget() is diagnostics
    overview.openViewRequested.emit("timeline")
    assert window.tabs.currentWidget() is window.views["timeline"]
    overview.opSelected.emit(2)
    selected = ops.table_view.selectionModel().selectedRows()
    assert [ops.model.table_row(i.row()) for i in selected] == [2]
    assert diagnostics.findings.count() > 1
    overview.findingSelected.emit(1)
    assert diagnostics.findings.currentRow() == 1
