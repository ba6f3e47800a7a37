"""The Overview's step chart: each step's time split into device busy / waiting for input / waiting
for compilation / other idle, as stacked bars; without steps, equal slices of the profile, each as
shares of its length.

On a run of several hosts it draws one host's aligned steps or the pod's (the mean over its hosts
per step, `tpuscope.analysis.pod.step_split`), split into the pod table's parts (device compute,
in collectives, input, compile, host work and other idle).

A double-click on a bar emits its position (`stepPicked`), hovering one shows its split; the
hit-testing is the shared one (`tpuscope.ui.widgets.chart_hits`). The page around the chart
(its title, legend, host picker and hint) is the Overview's.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget

from tpuscope.analysis.overview import PARTS, StepSeries, part_label
from tpuscope.analysis.pod.step_split import PodStepSplit
from tpuscope.analysis.pod.summary import PART_LABELS as POD_PART_LABELS
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
# The pod table's parts (`tpuscope.analysis.pod.summary.PARTS`) in the same colours: compute is busy;
# collectives a darker blue, since the headline counts them as busy too; host work and other idle grey.
POD_PART_COLORS = {
    "compute": BUSY_COLOR,
    "collective": QColor(26, 75, 160),
    "input": PART_COLORS["input"],
    "compile": PART_COLORS["compile"],
    "host": PART_COLORS["idle"],
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
        self._pod: PodStepSplit | None = None  # shown instead of `_series` on a run of several hosts
        self._stepped = True
        self._has_devices = True
        self.hits = BarHits(self, self.stepPicked.emit, double_click=True, tooltip=self.tooltip)

    def reset(self) -> None:
        """No bars (the axis labels stay)."""
        self.clear()
        self.hits.clear()
        self._series = None
        self._pod = None

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
        layers = [
            (
                series.part(part) * scale
                if scale
                else 100.0 * series.part(part) / np.maximum(series.duration_ps, 1),
                PART_COLORS[part],
            )
            for part in PARTS
        ]
        self._stack(x, slot, layers)

    def show_pod(self, split: PodStepSplit) -> None:
        """Draws a pod's aligned steps (not empty): one host's, or the mean over its hosts per step,
        each split into the pod table's parts (seconds per step)."""
        self.reset()
        self._pod = split
        numbers = split.number.astype(np.float64)
        ordered = len(numbers) < 2 or bool(np.all(np.diff(numbers) > 0))
        x = numbers if ordered else np.arange(len(split), dtype=np.float64)
        self.setLabel("left", "step time", units="s")
        self.setLabel("bottom", "step" if ordered else "step (position)", units=None)
        few = len(x) <= MAX_LABELLED_STEPS
        self.getAxis("bottom").setTicks([[(v, f"{v:g}") for v in x]] if few else None)
        layers = [(split.part(p) * 1e-12, POD_PART_COLORS[p]) for p in split.parts_present()]
        self._stack(x, 1.0, layers)

    def _stack(self, x: np.ndarray, slot: float, layers: list[tuple[np.ndarray, QColor]]) -> None:
        """Stacks `layers` (heights per bar, colour), bottom first, at `x`; bars `slot` apart."""
        self.hits.set_bars(x, STEP_HIT_HALF_WIDTH * slot)
        bottom = np.zeros(len(x))
        for height, color in layers:
            if not np.any(height > 0):
                continue
            self.addItem(
                pg.BarGraphItem(
                    x=x,
                    y0=bottom.copy(),
                    height=height,
                    width=BAR_WIDTH * slot,
                    brush=color,
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
        if self._pod is not None:
            return pod_bar_tooltip(self._pod, position) if 0 <= position < len(self._pod) else ""
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


def pod_bar_tooltip(split: PodStepSplit, position: int) -> str:
    """A pod step's bar: its time and parts, of one host or the mean over the hosts."""
    duration = float(split.step_ps[position])
    lines = [f"step {int(split.number[position])} ({split.label}): {format_headline_duration(duration)}"]
    for part in split.parts_present():
        value = float(split.part(part)[position])
        share = 100.0 * value / duration if duration > 0 else 0.0
        lines.append(f"{POD_PART_LABELS[part]}: {format_headline_duration(value)} ({share:.1f}%)")
    lines.append("double-click to see it on the timeline")
    return "\n".join(lines)
