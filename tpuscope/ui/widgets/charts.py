"""Charts: a pyqtgraph plot with the views' look (white, black text, no auto-range button)."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QWidget

AXES = ("left", "bottom")


def make_chart(
    title: str | None = None, axis_pen: object = "k", parent: QWidget | None = None
) -> pg.PlotWidget:
    """A white chart with black axis text and `axis_pen` axis lines, titled `title` in black."""
    plot = pg.PlotWidget(parent, background="w")
    style_chart(plot, title, axis_pen)
    return plot


def style_chart(plot: pg.PlotWidget, title: str | None = None, axis_pen: object = "k") -> None:
    """Gives a chart (made with a white background) the views' look; see `make_chart`."""
    if title is not None:
        plot.setTitle(title, color="k")
    plot.hideButtons()
    for side in AXES:
        plot.getAxis(side).setTextPen("k")
        plot.getAxis(side).setPen(axis_pen)
