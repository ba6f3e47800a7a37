"""Item delegates: a share drawn as a bar behind a cell's text, and an icon-title-explanation item."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontDatabase, QFontMetrics, QIcon, QPainter, QPalette
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from tpuscope.ui.widgets.colors import BUSY_COLOR
from tpuscope.ui.widgets.labels import Word, wrap_code_spans

PERCENT_ROLE = Qt.ItemDataRole.UserRole + 1  # a cell's share, 0..100, for PercentBarDelegate
EXPLANATION_ROLE = Qt.ItemDataRole.UserRole + 2  # an item's explanation, for ExplainedItemDelegate
MARKED_TITLE_ROLE = Qt.ItemDataRole.UserRole + 3  # its title with Markdown code spans, to paint
PERCENT_BAR_ALPHA = 70  # the bar is this opaque (of 255): the text over it stays readable

_ModelIndex = QModelIndex | QPersistentModelIndex


class PercentBarDelegate(QStyledItemDelegate):
    """Draws a cell's share (PERCENT_ROLE, 0..100) as a bar behind its text."""

    def __init__(self, parent: QWidget | None = None, color: QColor = BUSY_COLOR):
        super().__init__(parent)
        self.color = QColor(color)
        self.color.setAlpha(PERCENT_BAR_ALPHA)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: _ModelIndex) -> None:
        percent = index.data(PERCENT_ROLE)
        if isinstance(percent, float) and percent > 0:
            rect = option.rect.adjusted(2, 3, -2, -3)
            width = int(rect.width() * min(percent, 100.0) / 100.0)
            painter.fillRect(QRect(rect.left(), rect.top(), max(width, 1), rect.height()), self.color)
        super().paint(painter, option, index)


class ExplainedItemDelegate(QStyledItemDelegate):
    """An item as its icon, its title and the start of its explanation (EXPLANATION_ROLE): three
    lines in all, the title bold and up to two of them. An item without an explanation is one line.

    Both texts may hold Markdown code spans (finding texts name ops as `copy-done.4`): they are
    painted in the monospace face, without their backticks. The title comes from MARKED_TITLE_ROLE
    when set (the item's own text, read by tests and screen readers, is plain)."""

    ICON_PX = 22
    PAD_PX = 7

    def sizeHint(self, option: QStyleOptionViewItem, index: _ModelIndex) -> QSize:
        line = option.fontMetrics.height()
        width = option.rect.width()
        if index.data(EXPLANATION_ROLE) is None:
            return QSize(width, line + 2 * self.PAD_PX)
        return QSize(width, 3 * line + 2 * self.PAD_PX + 2)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: _ModelIndex) -> None:
        widget = option.widget
        style = widget.style() if widget is not None else QApplication.style()
        background = QStyleOptionViewItem(option)
        self.initStyleOption(background, index)
        background.text = ""
        background.icon = QIcon()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, background, painter, widget)
        font: QFont = option.font
        rect = option.rect.adjusted(self.PAD_PX, self.PAD_PX, -self.PAD_PX, -self.PAD_PX)
        icon = index.data(Qt.ItemDataRole.DecorationRole)
        text_left = rect.left()
        if isinstance(icon, QIcon) and not icon.isNull():
            icon.paint(painter, QRect(rect.left(), rect.top(), self.ICON_PX, self.ICON_PX))
            text_left += self.ICON_PX + self.PAD_PX
        width = max(rect.right() - text_left, 10)
        painter.save()
        explanation = index.data(EXPLANATION_ROLE)
        title_font = QFont(font)
        title_font.setBold(explanation is not None)
        line = QFontMetrics(font).height()
        # The title may take two lines; the explanation gets what is left of three.
        title = index.data(MARKED_TITLE_ROLE) or index.data(Qt.ItemDataRole.DisplayRole)
        title_code = _code_font(title_font)
        title_lines = wrap_code_spans(
            str(title), QFontMetrics(title_font), QFontMetrics(title_code), width, 2 if explanation else 1
        )
        for k, words in enumerate(title_lines):
            _draw_words(painter, words, text_left, rect.top() + k * line, line + 2, title_font, title_code)
        if explanation:
            muted = option.palette.color(QPalette.ColorRole.Text)
            muted.setAlpha(150)
            painter.setPen(muted)
            code = _code_font(font)
            lines = wrap_code_spans(
                str(explanation), QFontMetrics(font), QFontMetrics(code), width, 3 - len(title_lines)
            )
            for k, words in enumerate(lines, start=len(title_lines)):
                _draw_words(painter, words, text_left, rect.top() + k * line + 2, line, font, code)
        painter.restore()


def _code_font(font: QFont) -> QFont:
    """The monospace face at `font`'s size and weight, for code spans."""
    code = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    code.setPointSizeF(font.pointSizeF())
    code.setBold(font.bold())
    return code


def _draw_words(
    painter: QPainter, words: list[Word], left: int, top: int, height: int, font: QFont, code: QFont
) -> None:
    """One line of words (code pieces in `code`), a space between words."""
    x = left
    space = QFontMetrics(font).horizontalAdvance(" ")
    for word in words:
        for text, is_code in word:
            face = code if is_code else font
            painter.setFont(face)
            advance = QFontMetrics(face).horizontalAdvance(text)
            painter.drawText(QRect(x, top, advance + 1, height), Qt.AlignmentFlag.AlignLeft, text)
            x += advance
        x += space
