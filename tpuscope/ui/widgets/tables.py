"""Table widgets: cells that sort by a number while showing text, and the look of a short list table."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QTableWidget, QTableWidgetItem

SORT_ROLE = Qt.ItemDataRole.UserRole + 1  # the number a SortableItem sorts by
ROW_PADDING_PX = 8  # a list table's rows are the font's height plus this


class SortableItem(QTableWidgetItem):
    """A cell that shows `text` and sorts by the number `key` (bytes, durations, shares); cells
    without a number sort by their text."""

    def __init__(self, text: str, key: float | None = None):
        super().__init__(text)
        if key is not None:
            self.setData(SORT_ROLE, key)

    @property
    def key(self) -> float | None:
        value = self.data(SORT_ROLE)
        return value if _is_number(value) else None

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.data(SORT_ROLE), other.data(SORT_ROLE)
        if _is_number(mine) and _is_number(theirs):
            return mine < theirs
        return self.text() < other.text()


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def style_list_table(table: QTableWidget) -> None:
    """A short read-only table read row by row: whole rows selected one at a time, no grid, striped
    rows a little taller than the text, no row numbers, headers aligned with their text."""
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setShowGrid(False)
    table.setAlternatingRowColors(True)
    table.verticalHeader().hide()
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + ROW_PADDING_PX)
    table.horizontalHeader().setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)


def height_for_rows(table: QTableWidget, rows: int) -> int:
    """The height, in px, that shows the header and exactly `rows` rows of `table`."""
    return (
        table.horizontalHeader().sizeHint().height()
        + rows * table.verticalHeader().defaultSectionSize()
        + 2 * table.frameWidth()
        + 2
    )
