"""Driving real widgets in tests: showing one on screen, and a double click as Qt delivers it."""

from __future__ import annotations

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
    double = QMouseEvent(
        QEvent.Type.MouseButtonDblClick,
        QPointF(pos),
        widget.mapToGlobal(QPointF(pos)),
        Qt.MouseButton.LeftButton,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(widget, double)
    qtbot.mouseRelease(widget, Qt.MouseButton.LeftButton, pos=pos)
