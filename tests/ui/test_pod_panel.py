"""The pod panel is a QWidget, and Qt asks every widget's metric() for its DPI and pixel ratio."""

from __future__ import annotations

import os
import subprocess
import sys

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
