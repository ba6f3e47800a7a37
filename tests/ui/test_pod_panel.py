"""The pod panel: Qt asks every widget's metric() for its DPI and pixel ratio, and on the Overview it is
laid out below the step chart without any of its parts drawn over another."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from PySide6.QtWidgets import QApplication

from tests.conftest import SAMPLES
from tests.ui.conftest import open_and_wait

ASK_PAINT_DEVICE_METRICS = """
from PySide6.QtWidgets import QApplication
from tpuscope.ui.pod.heatmap import PodPanel

app = QApplication([])
panel = PodPanel()
print(panel.logicalDpiX(), panel.devicePixelRatioF(), panel.widthMM())
"""


def test_pod_panel_answers_paint_device_queries():
    """No attribute of the panel may shadow QPaintDevice.metric(): a combo box stored as `metric` made
    Qt call it for the DPI and crashed the process. In a child process, so a crash fails only this test."""
    done = subprocess.run(
        [sys.executable, "-c", ASK_PAINT_DEVICE_METRICS],
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    dpi, ratio, width_mm = done.stdout.split()
    assert float(dpi) > 0 and float(ratio) > 0 and int(width_mm) >= 0


@pytest.mark.parametrize("size", [(1366, 768), (1600, 1000)])
def test_the_heat_map_and_the_host_table_do_not_overlap_on_the_overview(qtbot, window, size):
    """The 4-host pod sample's Overview: at 1366x768 the page's wrapped labels (the heat map's caption,
    the cards) took more height than the page was given, and its last heat-map row was drawn under
    the host table (the Details dock open beside it, as `tpuscope screenshot` shows it). Every widget
    of the panel gets its height, stacked in order."""
    overview = window.views["overview"]
    window.resize(*size)
    open_and_wait(qtbot, window, SAMPLES / "jax_cpu_pod_straggler", view="overview")
    window.details_dock.reveal()  # open, as after a click on an event: a narrower page, labels wrap
    qtbot.waitUntil(
        lambda: overview.overview is not None and overview.pod_section.isVisible(), timeout=60_000
    )
    QApplication.processEvents()
    panel = overview.pod_panel
    heatmap, table = panel.heatmap, panel.table
    assert heatmap.hosts == [f"worker{i}" for i in range(4)]
    assert heatmap.height() >= heatmap.minimumHeight()
    last_row = heatmap.cell_rect(len(heatmap.hosts) - 1, 0)
    assert heatmap.mapTo(panel, last_row.bottomLeft()).y() < table.geometry().top()
    assert table.height() >= table.minimumHeight()
    # Everything in the panel's column keeps its own height and order: nothing is drawn over another.
    layout = panel.layout()
    tops = [layout.itemAt(k).geometry() for k in range(layout.count())]
    for upper, lower in zip(tops, tops[1:], strict=False):
        assert upper.bottom() < lower.top()
    assert panel.geometry().bottom() < overview.pod_section.height()
    section_bottom = overview.pod_section.mapTo(overview.page, overview.pod_section.rect().bottomLeft()).y()
    assert section_bottom <= overview.page.height()
