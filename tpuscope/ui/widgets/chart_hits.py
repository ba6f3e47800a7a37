"""Chart hit-testing, written once: the bar under the mouse, its tooltip, clicks that jump.

`BarSlots` says which bar a chart coordinate falls on (numpy, no Qt; the pod heat map finds its
cells with it too); `ChartMouse` turns a pyqtgraph chart's scene clicks and hovers into chart
coordinates; `BarHits` puts the two together for a bar chart: a click (or double-click) on a bar
calls `on_pick(bar)`, hovering one shows `tooltip(bar)`. The bars are numbered as the chart was
given them, whatever their order along the axis.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
import pyqtgraph as pg
from pyqtgraph.GraphicsScene.mouseEvents import MouseClickEvent
from PySide6.QtCore import QObject, QPointF

Axis = Literal["x", "y"]


class BarSlots:
    """Bars (or rows, or columns) along one axis that do not overlap, each a centre and the same
    half width: which one holds a coordinate. Each holds [centre - half width, centre + half width),
    so where two touch the coordinate belongs to the later one, as a grid's floor division says."""

    def __init__(self, centres: np.ndarray | None = None, half_width: float = 0.5):
        centres = np.empty(0, dtype=np.float64) if centres is None else np.asarray(centres, dtype=np.float64)
        self._order = np.argsort(centres, kind="stable")  # bar numbers by position along the axis
        self._starts = centres[self._order] - half_width
        self._width = 2 * float(half_width)
        self._grid: tuple[float, float] | None = None  # (start, size) of slots side by side

    @classmethod
    def uniform(cls, start: float, size: float, count: int) -> BarSlots:
        """`count` slots of `size` side by side from `start` (a grid's rows or columns)."""
        slots = cls(start + size * (np.arange(count) + 0.5), size / 2)
        slots._grid = (float(start), float(size))
        return slots

    def __len__(self) -> int:
        return len(self._starts)

    def bar_at(self, coordinate: float) -> int | None:
        """The bar whose slot holds `coordinate`, or None (off every bar, or in a gap between two)."""
        if self._grid is not None:
            # Slots side by side: floor division finds the slot, with no rounding of its edges.
            start, size = self._grid
            slot = (coordinate - start) // size
            return int(slot) if 0 <= slot < len(self) else None
        k = int(np.searchsorted(self._starts, coordinate, side="right")) - 1  # the last slot begun
        if k < 0 or coordinate >= self._starts[k] + self._width:
            return None
        return int(self._order[k])


class ChartMouse(QObject):
    """A pyqtgraph chart's clicks and hovers, delivered in the chart's own (data) coordinates."""

    def __init__(self, plot: pg.PlotWidget):
        super().__init__(plot)
        self.plot = plot

    def chart_point(self, scene_pos: QPointF) -> QPointF:
        """Where a point of the chart's scene is, in data coordinates."""
        return self.plot.getPlotItem().vb.mapSceneToView(scene_pos)

    def on_click(self, handler: Callable[[QPointF], bool | None], double: bool = False) -> None:
        """Calls `handler(point)` on each click (only double-clicks when `double`); a handler that
        returns True has used the click, which is then accepted."""

        def clicked(event: MouseClickEvent) -> None:
            if double and not event.double():
                return
            if handler(self.chart_point(event.scenePos())):
                event.accept()

        self.plot.scene().sigMouseClicked.connect(clicked)

    def on_hover(self, handler: Callable[[QPointF], None]) -> None:
        """Calls `handler(point)` whenever the mouse moves over the chart."""
        self.plot.scene().sigMouseMoved.connect(lambda scene_pos: handler(self.chart_point(scene_pos)))


class BarHits:
    """The bars of one chart under the mouse: a click on one picks it, hovering one shows its tooltip.

    `axis` is the axis the bars are laid along ("x": vertical bars, "y": horizontal ones). With
    `tooltip`, the chart's tooltip follows the mouse (empty off the bars); without, it is left alone.
    """

    def __init__(
        self,
        plot: pg.PlotWidget,
        on_pick: Callable[[int], None],
        *,
        axis: Axis = "x",
        double_click: bool = False,
        tooltip: Callable[[int], str] | None = None,
    ):
        self.plot = plot
        self.axis = axis
        self.slots = BarSlots()
        self._on_pick = on_pick
        self._tooltip = tooltip
        self.mouse = ChartMouse(plot)
        self.mouse.on_click(self._clicked, double=double_click)
        if tooltip is not None:
            self.mouse.on_hover(self._hovered)

    def set_bars(self, centres: np.ndarray, half_width: float) -> None:
        """The bars now drawn: their centres along `axis`, in the order `on_pick` numbers them."""
        self.slots = BarSlots(centres, half_width)

    def clear(self) -> None:
        """No bars; a hover tooltip of the bars that were drawn goes with them."""
        self.slots = BarSlots()
        if self._tooltip is not None:
            self.plot.setToolTip("")

    def bar_at(self, coordinate: float) -> int | None:
        return self.slots.bar_at(coordinate)

    def bar_at_point(self, point: QPointF) -> int | None:
        return self.bar_at(point.x() if self.axis == "x" else point.y())

    def _clicked(self, point: QPointF) -> bool:
        bar = self.bar_at_point(point)
        if bar is None:
            return False
        self._on_pick(bar)
        return True

    def _hovered(self, point: QPointF) -> None:
        if len(self.slots) == 0 or self._tooltip is None:
            return
        bar = self.bar_at_point(point)
        self.plot.setToolTip("" if bar is None else self._tooltip(bar))
