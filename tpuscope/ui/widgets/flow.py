"""A layout that wraps its widgets into as many rows as the width needs (headline cards).

A row of seven cards is wider than a laptop's window: in a grid they were cut off at the right
edge (issue 23). Here each widget asks for its preferred width (its text unwrapped, at most
`cap_px`, at least its minimum); as many as fit go on a row, and the row's spare width is shared
among them, so a full row still spans the page. Packing by the minimum instead would squeeze a
card's wrapped detail into a column of single words.
"""

from __future__ import annotations

from PySide6.QtCore import QMargins, QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QWidget


class FlowLayout(QLayout):
    """Widgets left to right, wrapped into rows; each row's spare width shared by its widgets."""

    def __init__(self, parent: QWidget | None = None, spacing_px: int = 10, cap_px: int = 10_000):
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._spacing_px = spacing_px
        self._cap_px = cap_px
        self.setContentsMargins(QMargins(0, 0, 0, 0))

    # -- QLayout's item list -------------------------------------------------------------------
    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation.Horizontal

    # -- sizes ---------------------------------------------------------------------------------
    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._arrange(QRect(0, 0, width, 0), place=False)

    def minimumHeightForWidth(self, width: int) -> int:
        return self.heightForWidth(width)

    def sizeHint(self) -> QSize:
        """One row of every widget at its preferred size."""
        visible = self._visible()
        width = sum(item.sizeHint().width() for item in visible) + self._spacing_px * max(len(visible) - 1, 0)
        height = max((item.sizeHint().height() for item in visible), default=0)
        margins = self.contentsMargins()
        return QSize(width + margins.left() + margins.right(), height + margins.top() + margins.bottom())

    def minimumSize(self) -> QSize:
        """As narrow as the widest widget (everything else wraps below it)."""
        visible = self._visible()
        width = max((item.minimumSize().width() for item in visible), default=0)
        margins = self.contentsMargins()
        return QSize(width + margins.left() + margins.right(), margins.top() + margins.bottom())

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._arrange(rect, place=True)

    # -- placing -------------------------------------------------------------------------------
    def _visible(self) -> list[QLayoutItem]:
        return [item for item in self._items if not item.isEmpty()]

    def _asked(self, item: QLayoutItem) -> int:
        """The width `item` asks for on its row (module docstring)."""
        return max(item.minimumSize().width(), min(item.sizeHint().width(), self._cap_px))

    def _rows(self, width: int) -> list[list[QLayoutItem]]:
        """The widgets packed greedily into rows of at most `width` px at the widths they ask for."""
        rows: list[list[QLayoutItem]] = []
        used = 0
        for item in self._visible():
            need = self._asked(item)
            if rows and used + self._spacing_px + need <= width:
                rows[-1].append(item)
                used += self._spacing_px + need
            else:
                rows.append([item])
                used = need
        return self._balanced(rows, width) or rows

    def _balanced(self, rows: list[list[QLayoutItem]], width: int) -> list[list[QLayoutItem]] | None:
        """The same items in as many rows, as evenly filled (7 cards as 4 + 3, not 6 + 1), or None
        when such rows would not fit `width`."""
        items = [item for row in rows for item in row]
        if len(rows) < 2:
            return None
        per_row = -(-len(items) // len(rows))
        even = [items[k : k + per_row] for k in range(0, len(items), per_row)]
        for row in even:
            if sum(self._asked(i) for i in row) + self._spacing_px * (len(row) - 1) > width:
                return None
        return even

    def _arrange(self, rect: QRect, place: bool) -> int:
        """Places the widgets in `rect` (when `place`) and returns the height they take."""
        margins = self.contentsMargins()
        inner = rect.marginsRemoved(margins)
        y = inner.y()
        for row_number, row in enumerate(self._rows(inner.width())):
            if row_number:
                y += self._spacing_px
            mins = [max(min(self._asked(item), inner.width()), item.minimumSize().width()) for item in row]
            spare = max(inner.width() - sum(mins) - self._spacing_px * (len(row) - 1), 0)
            widths = [m + spare // len(row) + (1 if k < spare % len(row) else 0) for k, m in enumerate(mins)]
            height = max(
                item.heightForWidth(w) if item.hasHeightForWidth() else item.sizeHint().height()
                for item, w in zip(row, widths, strict=True)
            )
            x = inner.x()
            for item, w in zip(row, widths, strict=True):
                if place:
                    item.setGeometry(QRect(QPoint(x, y), QSize(w, height)))
                x += w + self._spacing_px
            y += height
        return y - inner.y() + margins.top() + margins.bottom()
