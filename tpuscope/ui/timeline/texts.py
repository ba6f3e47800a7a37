"""Timeline texts laid out once and drawn many times (QPainter.drawStaticText).

Why: QPainter.drawText lays its text out again on every call: 54 us a box
label on this project's machines, against 17 us for a QStaticText that keeps
its layout (measured on 150 labels); a zoomed frame draws ~150 of them and
the label column ~25 more, and panning redraws the same ones.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QPainter, QStaticText, QTransform

from tpuscope.ui.widgets.elide import elided

ELLIPSIS = "\u2026"
# An elide mode of `fitted` beside Qt's: keep the distinguishing tail (tpuscope.ui.widgets.elide).
KEEP_TAIL = "keep-tail"


class StaticTexts:
    """Elided, laid-out texts of one font, by (text, room in whole average characters, elide mode).

    A text is elided to the width of its room in characters, never wider,
    so it needs no clip when drawn inside a box at least that wide.
    """

    MAX_ENTRIES = 20_000  # then the cache starts over (labels of the last few views fit easily)

    def __init__(self, font: QFont):
        self.font = font
        self.metrics = QFontMetricsF(font)
        self.char_px = max(1.0, self.metrics.averageCharWidth())
        self.line_px = self.metrics.height()
        self._texts: dict[tuple[str, int, Qt.TextElideMode | str], QStaticText | None] = {}

    def fitted(
        self, text: str, width_px: float, mode: Qt.TextElideMode | str = Qt.TextElideMode.ElideRight
    ) -> QStaticText | None:
        """`text` elided to fit `width_px` (rounded down to whole average characters), None when no
        character and ellipsis fit."""
        chars = int(width_px / self.char_px)
        key = (text, chars, mode)
        if key in self._texts:
            return self._texts[key]
        if len(self._texts) >= self.MAX_ENTRIES:
            self._texts.clear()
        room = chars * self.char_px
        fits = self.metrics.horizontalAdvance(text) <= room
        if fits:
            shown = text
        elif isinstance(mode, str):
            shown = elided(self.metrics, text, room)
        else:
            shown = self.metrics.elidedText(text, mode, room)
        static = None
        # Qt hands back a one-character text unelided however small the room: checked, not trusted.
        if shown and shown != ELLIPSIS and (fits or self.metrics.horizontalAdvance(shown) <= room):
            static = QStaticText(shown)
            static.setTextFormat(Qt.TextFormat.PlainText)
            static.prepare(QTransform(), self.font)
        self._texts[key] = static
        return static

    def draw(self, painter: QPainter, left: float, top: float, height: float, static: QStaticText) -> None:
        """Draws `static` at `left`, centred vertically in the row from `top` of `height` (as drawText's
        AlignVCenter does); the painter's font must be this cache's."""
        painter.drawStaticText(QPointF(left, top + (height - self.line_px) / 2), static)
