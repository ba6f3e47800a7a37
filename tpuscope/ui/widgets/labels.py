"""Text widgets: secondary (muted) labels, section headings, framed messages, wrapped lines."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontMetrics, QPalette
from PySide6.QtWidgets import QFrame, QLabel

HEADING_POINTS_LARGER = 1.5  # a section heading is this many points larger than the body font


def mute(label: QLabel) -> None:
    """Secondary text: the window text colour, lighter (keeps working with dark palettes)."""
    palette = label.palette()
    text = palette.color(QPalette.ColorRole.WindowText)
    background = palette.color(QPalette.ColorRole.Window)
    mixed = QColor(
        (text.red() * 3 + background.red() * 2) // 5,
        (text.green() * 3 + background.green() * 2) // 5,
        (text.blue() * 3 + background.blue() * 2) // 5,
    )
    palette.setColor(QPalette.ColorRole.WindowText, mixed)
    label.setPalette(palette)


def muted_label(text: str = "") -> QLabel:
    label = QLabel(text)
    mute(label)
    return label


def heading(text: str) -> QLabel:
    """A section's title: bold, a little larger than the body text."""
    label = QLabel(text)
    font = label.font()
    font.setPointSizeF(font.pointSizeF() + HEADING_POINTS_LARGER)
    font.setBold(True)
    label.setFont(font)
    return label


def message_label() -> QLabel:
    """A framed, centred, muted message that stands in for a chart or a table with nothing to show."""
    label = QLabel("")
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setWordWrap(True)
    label.setFrameShape(QFrame.Shape.StyledPanel)
    mute(label)
    return label


def wrap_lines(text: str, metrics: QFontMetrics, width: int, max_lines: int) -> list[str]:
    """`text` broken between words into at most `max_lines` lines of `width` px; the last one elided."""
    lines: list[str] = []
    words = text.split()
    while words and len(lines) < max_lines:
        if len(lines) == max_lines - 1:
            lines.append(metrics.elidedText(" ".join(words), Qt.TextElideMode.ElideRight, width))
            break
        line = words.pop(0)
        while words and metrics.horizontalAdvance(line + " " + words[0]) <= width:
            line += " " + words.pop(0)
        lines.append(line)
    return lines
