"""Text widgets: secondary (muted) labels, section headings, framed messages, wrapped painted lines."""

from __future__ import annotations

import re

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


# A painted line's pieces: (text, is_code, space_before). Code spans stay whole; text glued to a
# span (`copy-done.4`, with its comma) stays on its line.
_PIECES = re.compile(r"`([^`\n]+)`|(\s+)|([^\s`]+|`)")
ELLIPSIS = "\u2026"

Piece = tuple[str, bool]
Word = list[Piece]


def code_span_words(text: str) -> list[Word]:
    """`text` as words (split at spaces), each a list of (text, is_code) pieces; a Markdown code
    span is one piece, its backticks dropped."""
    words: list[Word] = []
    glued = False
    for match in _PIECES.finditer(text):
        code, space, plain = match.groups()
        if space is not None:
            glued = False
            continue
        piece = (code, True) if code is not None else (plain, False)
        if glued and words:
            words[-1].append(piece)
        else:
            words.append([piece])
        glued = True
    return words


def wrap_code_spans(
    text: str, metrics: QFontMetrics, code_metrics: QFontMetrics, width: int, max_lines: int
) -> list[list[Word]]:
    """`text` (with code spans) broken between words into at most `max_lines` lines of `width` px,
    code measured in `code_metrics`; the last line ends in an ellipsis when words are left over."""

    def advance(word: Word) -> int:
        return sum((code_metrics if code else metrics).horizontalAdvance(t) for t, code in word)

    space = metrics.horizontalAdvance(" ")
    words = code_span_words(text)
    lines: list[list[Word]] = []
    while words and len(lines) < max_lines:
        line = [words.pop(0)]
        used = advance(line[0])
        while words and used + space + advance(words[0]) <= width:
            used += space + advance(words[0])
            line.append(words.pop(0))
        lines.append(line)
    if words and lines:  # more than fits: the last line says so
        last = lines[-1]
        ellipsis = metrics.horizontalAdvance(ELLIPSIS)
        while len(last) > 1 and sum(advance(w) for w in last) + space * (len(last) - 1) + ellipsis > width:
            last.pop()
        last[-1] = last[-1] + [(ELLIPSIS, False)]
    return lines
