"""Driving real widgets in tests: showing one on screen, a double click as Qt delivers it, a mouse
move, and where a point of a chart is on screen."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication, QWidget


def show_exposed(qtbot, widget: QWidget, width: int, height: int) -> QWidget:
    """`widget` owned by qtbot, resized, shown, and waited for until it is on screen."""
    qtbot.addWidget(widget)
    widget.resize(width, height)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def double_click(qtbot, widget: QWidget, pos: QPoint) -> None:
    """What a real double click delivers: press, release, double-click (in place of the second press),
    release."""
    qtbot.mousePress(widget, Qt.MouseButton.LeftButton, pos=pos)
    qtbot.mouseRelease(widget, Qt.MouseButton.LeftButton, pos=pos)
    _send_mouse(widget, QEvent.Type.MouseButtonDblClick, pos, Qt.MouseButton.LeftButton)
    qtbot.mouseRelease(widget, Qt.MouseButton.LeftButton, pos=pos)


# pyqtgraph drops mouse moves that come sooner than 1/mouseRateLimit s (its default: 100 per second)
# after the last one: a test's moves wait this long.
MOUSE_MOVE_GAP_MS = 1000 // int(pg.getConfigOption("mouseRateLimit")) + 10


def hover(qtbot, widget: QWidget, pos: QPoint) -> None:
    """The mouse moved to `pos` over `widget`, no button held, as a user's move after a pause."""
    qtbot.wait(MOUSE_MOVE_GAP_MS)
    _send_mouse(widget, QEvent.Type.MouseMove, pos, Qt.MouseButton.NoButton)


def _send_mouse(widget: QWidget, kind: QEvent.Type, pos: QPoint, button: Qt.MouseButton) -> None:
    """A mouse event sent straight to `widget` (QTest has no double click of its own to send, and
    its moves are not all delivered on the offscreen platform)."""
    event = QMouseEvent(
        kind, QPointF(pos), widget.mapToGlobal(QPointF(pos)), button, button, Qt.KeyboardModifier.NoModifier
    )
    QApplication.sendEvent(widget, event)


def chart_position(plot: pg.PlotWidget, x: float, y: float) -> QPoint:
    """Where the chart point (x, y), in data coordinates, is in `plot`'s viewport (for mouse events)."""
    scene = plot.getPlotItem().vb.mapViewToScene(QPointF(x, y))
    point = plot.mapFromScene(scene)
    return QPoint(int(point.x()), int(point.y()))
