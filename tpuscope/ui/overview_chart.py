"""The Overview's step chart: each step's time split into device busy / waiting for input / waiting
for compilation / other idle, as stacked bars; without steps, equal slices of the profile, each as
shares of its length.

A double-click on a bar emits its position (`stepPicked`), hovering one shows its split; the
hit-testing is the shared one (`tpuscope.ui.widgets.chart_hits`). The page around the chart
(its title, legend and hint) is the Overview's.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget

from tpuscope.analysis.overview import PARTS, StepSeries, part_label
from tpuscope.ui.widgets.card import format_headline_duration
from tpuscope.ui.widgets.chart_hits import BarHits
from tpuscope.ui.widgets.charts import style_chart
from tpuscope.ui.widgets.colors import BUSY_COLOR

# Colours of the step parts: busy as the Ops view draws it; input and compilation warm, so the waits
# that findings talk about stand out; other idle grey.
PART_COLORS = {
    "busy": BUSY_COLOR,
    "input": QColor(244, 140, 30),
    "compile": QColor(156, 80, 182),
    "idle": QColor(205, 208, 212),
}
AXIS_GREY = (120, 120, 120)
BAR_WIDTH = 0.8  # of one step's slot in the chart
MAX_LABELLED_STEPS = 24  # up to this many steps, every bar gets its own tick label
# A double-click lands on a step when within this fraction of a slot from its centre.
STEP_HIT_HALF_WIDTH = 0.5
X_MARGIN_SLOTS = 0.6  # room left and right of the outer bars, in slots
Y_HEADROOM = 1.08  # the value axis reaches this much past the tallest bar


class StepPartsChart(pg.PlotWidget):
    """Stacked bars of a `StepSeries`: the steps (seconds per step) or the profile's slices (percent
    of each slice)."""

    stepPicked = Signal(int)  # the position of the bar double-clicked, 0-based

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, background="w")
        style_chart(self, axis_pen=pg.mkPen(*AXIS_GREY))
        self.setMouseEnabled(x=False, y=False)
        self.setMenuEnabled(False)
        self.setLabel("left", "step time", units="s")
        self.setLabel("bottom", "step")
        self.showGrid(x=False, y=True, alpha=0.15)
        self._series: StepSeries | None = None
        self._stepped = True
        self._has_devices = True
        self.hits = BarHits(self, self.stepPicked.emit, double_click=True, tooltip=self.tooltip)

    def reset(self) -> None:
        """No bars (the axis labels stay)."""
        self.clear()
        self.hits.clear()
        self._series = None

    def show_series(self, series: StepSeries, stepped: bool, has_devices: bool) -> None:
        """Draws `series` (not empty): its steps when `stepped`, else its slices of the profile."""
        self.reset()
        self._series, self._stepped, self._has_devices = series, stepped, has_devices
        if stepped:
            numbers = series.number.astype(np.float64)
            ordered = len(numbers) < 2 or bool(np.all(np.diff(numbers) > 0))
            x = numbers if ordered else np.arange(len(series), dtype=np.float64)
            slot = 1.0
            scale: float | None = 1e-12  # ps -> s
            self.setLabel("left", "step time", units="s")
            self.setLabel("bottom", "step" if ordered else "step (position)", units=None)
            # With few steps pyqtgraph's automatic ticks fall between bars (0.5, 1.5, ...): label each bar.
            few = len(x) <= MAX_LABELLED_STEPS
            self.getAxis("bottom").setTicks([[(v, f"{v:g}") for v in x]] if few else None)
        else:
            x = (series.start_ps + series.end_ps) / 2e12  # slice centres, s from the trace start
            slot = float(series.duration_ps.mean()) / 1e12
            scale = None  # per slice, as a share of it
            self.setLabel("left", "share of slice", units="%")
            self.setLabel("bottom", "time from profile start", units="s")
            self.getAxis("bottom").setTicks(None)
        self.hits.set_bars(x, STEP_HIT_HALF_WIDTH * slot)
        bottom = np.zeros(len(series))
        for part in PARTS:
            values = series.part(part)
            height = values * scale if scale else 100.0 * values / np.maximum(series.duration_ps, 1)
            if not np.any(height > 0):
                continue
            self.addItem(
                pg.BarGraphItem(
                    x=x,
                    y0=bottom.copy(),
                    height=height,
                    width=BAR_WIDTH * slot,
                    brush=PART_COLORS[part],
                    pen=pg.mkPen(None),
                )
            )
            bottom += height
        top = float(bottom.max()) if len(bottom) else 0.0
        margin = X_MARGIN_SLOTS * slot
        self.setXRange(float(x[0]) - margin, float(x[-1]) + margin, padding=0)
        self.setYRange(0, top * Y_HEADROOM if top > 0 else 1.0, padding=0)

    def bar_at(self, x: float) -> int | None:
        """The bar (position in the charted steps or slices) at chart coordinate `x`, or None."""
        return self.hits.bar_at(x)

    def tooltip(self, position: int) -> str:
        """What hovering bar `position` tells: its time and how it splits."""
        series = self._series
        if series is None or not 0 <= position < len(series):
            return ""
        return bar_tooltip(series, position, self._stepped, self._has_devices)


def bar_tooltip(series: StepSeries, position: int, stepped: bool, has_devices: bool) -> str:
    duration = float(series.duration_ps[position])
    if stepped:
        head = f"step {int(series.number[position])}: {format_headline_duration(duration)}"
    else:
        t0, t1 = float(series.start_ps[position]), float(series.end_ps[position])
        head = f"{format_headline_duration(t0)} to {format_headline_duration(t1)} from the profile start"
    lines = [head]
    for part in PARTS:
        value = float(series.part(part)[position])
        share = 100.0 * value / duration if duration > 0 else 0.0
        lines.append(f"{part_label(part, has_devices)}: {format_headline_duration(value)} ({share:.1f}%)")
    lines.append("double-click to see it on the timeline")
    return "\n".join(lines)
