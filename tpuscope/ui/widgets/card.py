"""Headline cards: a caption, a large value and a line of detail; clicking one opens its target.

A page of cards styles them all at once with `card_style_sheet` (a stylesheet on the page, not on
each card, so that hovering one outlines only that one).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QMouseEvent, QPalette
from PySide6.QtWidgets import QFrame, QLabel, QSizePolicy, QVBoxLayout, QWidget

from tpuscope.model import units
from tpuscope.ui.widgets.colors import BUSY_COLOR
from tpuscope.ui.widgets.labels import mute

CARD_OBJECT_NAME = "headlineCard"  # what `card_style_sheet` selects
VALUE_POINT_SIZE_DELTA = 7  # card values are this many points larger than the body font
CAPTION_SCALE = 0.85  # captions are this much of the body font, in capitals
CAPTION_LETTER_SPACING_PERCENT = 108


def format_headline_duration(ps: float) -> str:
    """A card value (and the overview page's chart tooltips): the duration as it reads everywhere else,
    `units.format_duration` (784.156 ms); issue 33: one rounding of a number wherever it is shown, so a
    card never reads 784.16 ms where the command line and the findings say 784.156 ms."""
    return units.format_duration(ps)


# A card's share reads as every other share does (the one percent formatter).
format_percent = units.format_percent


class Card(QFrame):
    """One headline number: a caption, the value, a line of detail. Clicking it opens `target`."""

    clicked = Signal(str)

    def __init__(self, caption: str, target: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.target = target
        self.setObjectName(CARD_OBJECT_NAME)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.caption = QLabel(caption.upper())
        self.value = QLabel("–")
        self.detail = QLabel("")
        caption_font = self.caption.font()
        caption_font.setPointSizeF(caption_font.pointSizeF() * CAPTION_SCALE)
        caption_font.setLetterSpacing(QFont.SpacingType.PercentageSpacing, CAPTION_LETTER_SPACING_PERCENT)
        caption_font.setBold(True)
        self.caption.setFont(caption_font)
        value_font = self.value.font()
        value_font.setPointSizeF(value_font.pointSizeF() + VALUE_POINT_SIZE_DELTA)
        value_font.setBold(True)
        self.value.setFont(value_font)
        self.detail.setWordWrap(True)
        self.detail.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        for label in (self.caption, self.detail):
            mute(label)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.setSpacing(3)
        layout.addWidget(self.caption)
        layout.addWidget(self.value)
        layout.addWidget(self.detail, 1)

    def set(self, value: str, detail: str = "", tooltip: str = "") -> None:
        self.value.setText(value)
        self.detail.setText(detail)
        self.setToolTip(tooltip)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton and self.rect().contains(event.position().toPoint()):
            self.clicked.emit(self.target)
        super().mouseReleaseEvent(event)


def card_style_sheet(palette: QPalette) -> str:
    """The cards' frame (base background, rounded border, blue on hover), for the page holding them."""
    selector = f"QFrame#{CARD_OBJECT_NAME}"
    return (
        f"{selector} {{ background: {palette.color(QPalette.ColorRole.Base).name()};"
        f" border: 1px solid {palette.color(QPalette.ColorRole.Mid).name()}; border-radius: 6px; }}"
        f"{selector}:hover {{ border-color: {BUSY_COLOR.name()}; }}"
        f"{selector} QLabel {{ border: none; background: transparent; }}"
    )
