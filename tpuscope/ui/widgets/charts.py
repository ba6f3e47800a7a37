"""Charts: a pyqtgraph plot with the views' look (the palette's base and text colours, no auto-range
button); the colours follow the palette when the desktop switches between light and dark."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QWidget

AXES = ("left", "bottom")
_TEXT = "k"  # the default axis pen: the palette's text colour (black on the light palette)


def make_chart(
    title: str | None = None, axis_pen: object = _TEXT, parent: QWidget | None = None
) -> pg.PlotWidget:
    """A chart on the palette's base colour with text-coloured axis text and `axis_pen` axis lines."""
    plot = pg.PlotWidget(parent, background="w")
    style_chart(plot, title, axis_pen)
    return plot


def style_chart(plot: pg.PlotWidget, title: str | None = None, axis_pen: object = _TEXT) -> None:
    """Gives a chart the views' look, in the palette's colours now and after each palette change."""
    plot.hideButtons()
    follower = plot.findChild(_PaletteFollower)
    if follower is None:
        follower = _PaletteFollower(plot)
        plot.installEventFilter(follower)
    follower.title, follower.axis_pen = title, axis_pen
    follower.apply()


class _PaletteFollower(QObject):
    """Colours its chart from the chart's palette, again whenever the palette changes."""

    def __init__(self, plot: pg.PlotWidget):
        super().__init__(plot)
        self.plot = plot
        self.title: str | None = None
        self.axis_pen: object = _TEXT

    def apply(self) -> None:
        palette = self.plot.palette()
        text = palette.color(QPalette.ColorRole.Text)
        self.plot.setBackground(palette.color(QPalette.ColorRole.Base))
        if self.title is not None:
            self.plot.setTitle(self.title, color=text)
        for side in AXES:
            axis = self.plot.getAxis(side)
            axis.setTextPen(text)
            axis.setPen(text if isinstance(self.axis_pen, str) and self.axis_pen == _TEXT else self.axis_pen)
            axis.labelStyle = {**axis.labelStyle, "color": text.name()}  # setLabel without a colour
            axis.setLabel(axis.labelText, units=axis.labelUnits, unitPrefix=axis.labelUnitPrefix)
            axis.showLabel(bool(axis.labelText))
        legend = self.plot.getPlotItem().legend
        if legend is not None:
            legend.setLabelTextColor(text)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self.apply()
        return False
