"""Putting a view's widgets back as a new profile should find them: scrolled to the start, charts empty.

A view empties its own models and labels when the trace changes; what it would not think of (a page
scrolled halfway down, a chart's axis still labelled with the last profile's op names, a chart the
user zoomed) is reset here, for every view alike, by walking its widgets (`View.reset`).
"""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QAbstractScrollArea, QWidget

CHART_AXES = ("left", "bottom", "right", "top")
EMPTY_RANGE = (0.0, 1.0)  # an empty chart's axes, pyqtgraph's own default range


def reset_widgets(root: QWidget) -> None:
    """Scrolls every scroll area under `root` (pages, tables, lists, text) to its start and empties
    every pyqtgraph chart under it (`reset_chart`)."""
    for area in root.findChildren(QAbstractScrollArea):
        for bar in (area.verticalScrollBar(), area.horizontalScrollBar()):
            bar.setValue(bar.minimum())
    # No chart can exist unless pyqtgraph was imported: a view without charts does not import it.
    pg = sys.modules.get("pyqtgraph")
    if pg is not None:
        for plot in root.findChildren(pg.PlotWidget):
            reset_chart(plot)


def reset_chart(plot) -> None:
    """A pyqtgraph chart with no items (bars, points, text, legend entries), automatic axis ticks (a
    bar chart's category labels are custom ticks), axes from 0 to 1 and automatic ranges (the user's
    zoom dropped); its title and axis labels stay."""
    item = plot.getPlotItem()
    item.clear()
    for name in CHART_AXES:
        axis = item.getAxis(name)
        axis.setTicks(None)
    # An empty chart keeps the range it had: its axes would still read the last profile's scale.
    item.setRange(xRange=EMPTY_RANGE, yRange=EMPTY_RANGE, padding=0)
    item.enableAutoRange()
