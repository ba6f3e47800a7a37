"""The GUI on a recorded pod run: the host x step view, and jumps from it and from the straggler finding
to the late host's step on the timeline (rendered to PNG for a look)."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from tests.pods import recordings
from tests.ui.conftest import open_and_wait
from tests.ui.widgets import show_exposed
from tpuscope.ui.main_window import MainWindow

LATE_HOST = f"worker{recordings.STRAGGLER}"
WAIT_MS = 60_000


@pytest.fixture
def window(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    settings = QSettings(str(tmp_path / "tpuscope.ini"), QSettings.IniFormat)
    win = show_exposed(qtbot, MainWindow(settings), 1600, 1150)
    yield win
    win.wait_for_background_work()


def _overview_of(qtbot, win, path):
    overview = win.views["overview"]
    open_and_wait(qtbot, win, path)
    qtbot.waitUntil(lambda: overview.overview is not None, timeout=WAIT_MS)
    QApplication.processEvents()
    return overview


def _visible_hosts(timeline) -> set[str]:
    top, bottom = timeline.y_scroll, timeline.y_scroll + timeline.height() - timeline.events_top
    rows = timeline.layout_.rows_between(top, bottom)
    return {r.track.plane.host for r in rows if r.track is not None}


def test_heat_map_shows_hosts_by_steps_and_a_click_opens_that_hosts_step(qtbot, window, pod_run, tmp_path):
    overview = _overview_of(qtbot, window, pod_run("straggler"))
    panel = overview.pod_panel
    assert overview.pod_section.isVisible()
    heatmap = panel.heatmap
    assert heatmap.hosts == [f"worker{i}" for i in range(recordings.PROCESSES)]
    assert heatmap.steps == list(range(recordings.STEPS))
    # Coloured by time in collectives: the late host's row is the palest in most steps.
    palest = np.argmin(heatmap.values, axis=0)
    assert (palest == recordings.STRAGGLER).mean() >= 0.75
    late_cell = heatmap.color_of(float(heatmap.values[recordings.STRAGGLER, 3]))
    busy_cell = heatmap.color_of(float(heatmap.values.max()))
    assert late_cell.lightness() > busy_cell.lightness()
    overview.page.grab().save(str(tmp_path / "pod_overview.png"))

    # The table sorts by collective wait: the late host comes first, ascending.
    panel.table.sortItems(3, Qt.SortOrder.AscendingOrder)
    assert panel.table.item(0, 0).text() == LATE_HOST
    panel.table.sortItems(2, Qt.SortOrder.DescendingOrder)  # input wait, largest first
    assert panel.table.item(0, 0).text() == LATE_HOST

    # A click on the late host's cell of step 3: the timeline shows that step of that host.
    center = heatmap.cell_rect(recordings.STRAGGLER, 3).center()
    qtbot.mouseClick(heatmap, Qt.MouseButton.LeftButton, pos=QPoint(center.x(), center.y()))
    QApplication.processEvents()
    timeline = window.timeline
    assert window.tabs.currentWidget() is window.views["timeline"]
    summary = overview.overview.pod.host_summaries[recordings.STRAGGLER]
    assert timeline.t0_ps == pytest.approx(summary.start_ps[3])
    assert timeline.t1_ps == pytest.approx(summary.end_ps[3])
    assert LATE_HOST in _visible_hosts(timeline)


def test_opening_the_straggler_finding_jumps_to_the_late_hosts_slowest_step(qtbot, window, pod_run, tmp_path):
    overview = _overview_of(qtbot, window, pod_run("straggler"))
    diagnostics = window.views["diagnostics"]
    window.show_view("diagnostics")  # a hidden Diagnostics tab asks for its report when first shown
    qtbot.waitUntil(lambda: diagnostics.report is not None, timeout=WAIT_MS)
    row = next(k for k, f in enumerate(diagnostics.report.findings) if f.id == "straggler")
    finding = diagnostics.report.findings[row]
    focus = finding.evidence[0]
    assert focus["focus"] and focus["host"] == LATE_HOST
    window.show_view("diagnostics")
    diagnostics.findings.setCurrentRow(row)
    item = diagnostics.findings.item(row)
    diagnostics.findings.itemDoubleClicked.emit(item)
    QApplication.processEvents()
    timeline = window.timeline
    assert window.tabs.currentWidget() is window.views["timeline"]
    assert (timeline.t0_ps, timeline.t1_ps) == (
        pytest.approx(focus["start_ps"]),
        pytest.approx(focus["end_ps"]),
    )
    assert LATE_HOST in _visible_hosts(timeline)
    outlined = [t for layer in timeline.highlights.values() for t in (lod.track for lod in layer.values())]
    assert any(t.plane.host == LATE_HOST and t.name == focus["track"] for t in outlined)
    window.grab().save(str(tmp_path / "pod_straggler_step.png"))
    # The late host's own input-bound finding ranks beside the straggler (both critical, by cost).
    assert "straggler" in [f.id for f in overview.overview.findings[:2]]
