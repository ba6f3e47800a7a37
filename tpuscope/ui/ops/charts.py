"""The Ops view's two charts: the top ops by self time, and each step's device busy vs idle time.

Each chart draws what it is given and says which bar the user picked (`rowPicked`, `stepPicked`);
the hit-testing is the shared one (`tpuscope.ui.widgets.chart_hits`).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget

from tpuscope.analysis.ops import OpTable
from tpuscope.analysis.step_breakdown import StepBreakdown
from tpuscope.ui.widgets.chart_hits import BarHits
from tpuscope.ui.widgets.charts import style_chart
from tpuscope.ui.widgets.colors import BUSY_COLOR

BAR_LABEL_CHARS = 36  # longer bar labels are cut: the full name is in the table
TOP_N_BARS = 15  # bars in the top-N chart: enough to see the long tail start, few enough to read
TOP_BAR_HEIGHT = 0.7  # of one op's slot
STEP_BAR_WIDTH = 0.8  # of one step's slot
STEP_TITLE = "Per step: device busy (blue) vs idle (grey)"  # the title is the legend: no box over the bars
STEP_AXIS_LABEL = "step (double-click a bar to zoom the timeline to it)"
IDLE_COLOR = QColor(200, 200, 200)
RANGE_HEADROOM = 1.05  # the value axis reaches this much past the largest bar


class TopOpsChart(pg.PlotWidget):
    """The first TOP_N_BARS rows of an op table (it is in self-time order) as horizontal bars,
    largest on top; a click on a bar emits its table row."""

    rowPicked = Signal(int)  # the OpTable row of the bar clicked

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, background="w")
        style_chart(self, f"Top {TOP_N_BARS} by self time")
        self.setLabel("bottom", "self time", units="s")
        self.setMouseEnabled(x=False, y=False)
        self.setToolTip("Click a bar to select its op in the table.")
        self._rows = np.empty(0, dtype=np.int64)  # table rows drawn as bars, top first
        self.hits = BarHits(self, lambda bar: self.rowPicked.emit(int(self._rows[bar])), axis="y")

    def reset(self) -> None:
        """No bars (the titles stay)."""
        self.clear()
        self._rows = np.empty(0, dtype=np.int64)
        self.hits.clear()

    def show_table(self, table: OpTable | None) -> None:
        self.reset()
        if table is None or len(table) == 0:
            return
        rows = np.arange(min(TOP_N_BARS, len(table)))  # the table is in self-time order
        self._rows = rows
        y = np.arange(len(rows))[::-1].astype(float)  # largest on top
        width = table.self_ps[rows] / 1e12
        self.addItem(pg.BarGraphItem(x0=0, y=y, height=TOP_BAR_HEIGHT, width=width, brush=BUSY_COLOR))
        self.hits.set_bars(y, 0.5)  # the whole slot: the gaps between bars pick too
        names = [table.label(i) for i in table.name[rows]]
        if len(set(names)) < len(names):  # the same op name in several programs: say which
            names = [
                f"{n} · {table.label(p)}" if p else n for n, p in zip(names, table.program[rows], strict=True)
            ]
        cut = BAR_LABEL_CHARS
        ticks = [
            (float(yy), n if len(n) <= cut else n[: cut - 1] + "…") for yy, n in zip(y, names, strict=True)
        ]
        self.getAxis("left").setTicks([ticks])
        self.setYRange(-0.6, len(rows) - 0.4, padding=0)
        self.setXRange(0, float(table.self_ps[0]) / 1e12 * RANGE_HEADROOM, padding=0)


class StepBreakdownChart(pg.PlotWidget):
    """Each step's device busy time (blue) under its idle time (grey); a double-click on a bar emits
    the step's position."""

    stepPicked = Signal(int)  # the position of the step double-clicked, 0-based

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, background="w")
        style_chart(self, STEP_TITLE)
        self.setLabel("left", "time", units="s")
        self.setLabel("bottom", STEP_AXIS_LABEL)
        self.setToolTip("Double-click a step's bar to show that step on the timeline.")
        self.setMouseEnabled(x=True, y=False)
        self.hits = BarHits(self, self.stepPicked.emit, double_click=True)

    def reset(self) -> None:
        """No bars (the titles stay)."""
        self.clear()
        self.hits.clear()

    def show_breakdown(self, breakdown: StepBreakdown | None) -> None:
        self.reset()
        b = breakdown
        if b is None or len(b) == 0:
            self.setTitle("Per step: no steps found in this profile", color="k")
            self.setLabel("bottom", "step")
            return
        self.setTitle(STEP_TITLE, color="k")
        self.setLabel("bottom", STEP_AXIS_LABEL)
        x = np.arange(len(b), dtype=float)
        busy, idle = b.busy_ps / 1e12, b.idle_ps / 1e12
        width = STEP_BAR_WIDTH
        self.addItem(pg.BarGraphItem(x=x, height=busy, width=width, brush=BUSY_COLOR, name="busy"))
        self.addItem(pg.BarGraphItem(x=x, y0=busy, height=idle, width=width, brush=IDLE_COLOR, name="idle"))
        self.hits.set_bars(x, width / 2)  # on a bar, not in the gap between two
        self.setXRange(-0.6, len(b) - 0.4, padding=0)
        self.setYRange(0, float((busy + idle).max()) * RANGE_HEADROOM or 1.0, padding=0)
