"""The Ops view's table model: a read-only Qt table that sits directly on the numpy columns of an `OpTable`.

Sorting and filtering only rebuild one permutation array (argsort / boolean mask), so 100k rows
sort at numpy speed, and `data()` formats one cell on demand. A QSortFilterProxyModel would call
back into Python for every comparison (commaai/openpilot PR #26150: >10 ms to sort 500 rows
through the proxy, 0.1 ms in the model).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor

from tpuscope.analysis.async_ops import NO_RATE_REASON
from tpuscope.analysis.ops import OpTable
from tpuscope.analysis.roofline import BOUND_NAMES
from tpuscope.model.units import duration_column_unit, format_duration_in

# Rates past a million (GB/s of a nanosecond-long op) carry no information past their
# third digit and would push the other columns out of view: they are shown as 3.15e+09.
COMPACT_NUMBER_FROM = 1e6
SELF_TIME_COLUMN = 6  # the table's natural order: self time, largest first
DURATION_COLUMNS = (4, 5, 6)  # Total, Average, Self: each in one unit for all its rows (issue 33)
RATE_COLUMNS = (9, 10)  # GFLOP/s and GB/s: an em dash where the op's time is not its work's
NO_RATE = "—"
OUTLINED_ROW = QColor(255, 236, 179)  # rows of the ops picked in another view (a source line's)

_ModelIndex = QModelIndex | QPersistentModelIndex


def _format_number(value: float, digits: int = 2) -> str:
    if not np.isfinite(value):
        return ""
    return f"{value:.3g}" if abs(value) >= COMPACT_NUMBER_FROM else f"{value:,.{digits}f}"


class OpsTableModel(QAbstractTableModel):
    """A read-only table over an OpTable's columns; sorting and filtering live in the model."""

    COLUMNS = (
        "Name",
        "Category",
        "Program",
        "Count",
        "Total",
        "Average",
        "Self",
        "Self %",
        "Cum. %",
        "GFLOP/s",
        "GB/s",
        "FLOP/byte",
        "Bound by",
    )
    TEXT_COLUMNS = 3  # the first three columns are labels, the rest numbers

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._table: OpTable | None = None
        self._rows = np.empty(0, dtype=np.int64)  # visible table rows, in display order
        self._keys: list[np.ndarray] = []
        self._filter = ""
        self._sort_column = SELF_TIME_COLUMN
        self._sort_order = Qt.SortOrder.DescendingOrder
        self._outlined = np.zeros(0, dtype=bool)  # per table row: one of the ops picked elsewhere
        self.outlined_names: set[str] = set()
        self._units: list[tuple[str, float]] = []  # of the duration columns, chosen from all the rows

    def set_outlined(self, names: set[str]) -> None:
        """Marks the rows of the ops named (a source line's ops, picked in the Source tab)."""
        self.outlined_names = set(names)
        self._outlined = self._outlined_rows()
        if self.rowCount():
            self.dataChanged.emit(self.index(0, 0), self.index(self.rowCount() - 1, self.columnCount() - 1))

    def _outlined_rows(self) -> np.ndarray:
        table = self._table
        if table is None or not self.outlined_names:
            return np.zeros(0 if table is None else len(table), dtype=bool)
        hit = np.fromiter((text in self.outlined_names for text in table.labels), bool, len(table.labels))
        return hit[table.name]

    # --- data -------------------------------------------------------------------------------
    def set_table(self, table: OpTable | None) -> None:
        self.beginResetModel()
        self._table = table
        self._keys = self._sort_keys(table) if table is not None else []
        # From every row, not the visible ones: filtering or sorting never changes a column's unit.
        self._units = [] if table is None else [duration_column_unit(c) for c in self._durations(table)]
        self._rows = self._visible_rows()
        self._outlined = self._outlined_rows()
        self.endResetModel()

    @property
    def table(self) -> OpTable | None:
        return self._table

    def _sort_keys(self, table: OpTable) -> list[np.ndarray]:
        label_rank = np.empty(len(table.labels), dtype=np.int64)
        label_rank[np.argsort(np.array(table.labels, dtype=object).astype(str), kind="stable")] = np.arange(
            len(table.labels)
        )
        return [
            label_rank[table.name],
            label_rank[table.category],
            label_rank[table.program],
            table.occurrences,
            table.total_ps,
            table.avg_ps,
            table.self_ps,
            table.percent,
            table.cumulative_percent,
            np.nan_to_num(table.flop_rate, nan=-1.0),
            np.nan_to_num(table.bytes_rate, nan=-1.0),
            np.nan_to_num(table.intensity, nan=-1.0),
            table.bound,
        ]

    @staticmethod
    def _durations(table: OpTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The columns of DURATION_COLUMNS, in their order."""
        return table.total_ps, table.avg_ps, table.self_ps

    def _visible_rows(self) -> np.ndarray:
        table = self._table
        if table is None:
            return np.empty(0, dtype=np.int64)
        rows = np.arange(len(table))
        if self._filter:
            needle = self._filter.lower()
            hit = np.fromiter((needle in text.lower() for text in table.labels), bool, len(table.labels))
            rows = rows[hit[table.name] | hit[table.category] | hit[table.program]]
        key = self._keys[self._sort_column][rows]
        order = np.argsort(key, kind="stable")
        if self._sort_order == Qt.SortOrder.DescendingOrder:
            order = order[::-1]
        return rows[order]

    def table_row(self, view_row: int) -> int:
        """The OpTable row shown at `view_row`."""
        return int(self._rows[view_row])

    def view_row_of(self, table_row: int) -> int | None:
        hits = np.flatnonzero(self._rows == table_row)
        return int(hits[0]) if len(hits) else None

    # --- sorting and filtering, in the model -------------------------------------------------
    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        table_rows = [self.table_row(i.row()) for i in persistent]  # a handful: the selection
        self._sort_column, self._sort_order = column, order
        self._rows = self._visible_rows()
        if persistent and self._table is not None:
            position = np.zeros(len(self._table), dtype=np.int64)
            position[self._rows] = np.arange(len(self._rows))  # sorting keeps the same rows visible
            moved = [
                self.index(int(position[r]), p.column()) for r, p in zip(table_rows, persistent, strict=True)
            ]
            self.changePersistentIndexList(persistent, moved)
        self.layoutChanged.emit()

    def set_filter(self, text: str) -> None:
        self.beginResetModel()
        self._filter = text.strip()
        self._rows = self._visible_rows()
        self.endResetModel()

    # --- QAbstractTableModel ----------------------------------------------------------------
    def rowCount(self, parent: _ModelIndex = QModelIndex()) -> int:  # noqa: B008 (Qt's signature)
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: _ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.COLUMNS[section]
        return None

    def data(self, index: _ModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or self._table is None:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(self.table_row(index.row()), index.column())
        if role == Qt.ItemDataRole.TextAlignmentRole:
            if index.column() >= self.TEXT_COLUMNS:
                return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            return None
        if role == Qt.ItemDataRole.ToolTipRole and index.column() < self.TEXT_COLUMNS:
            return self._display(self.table_row(index.row()), index.column())
        if role == Qt.ItemDataRole.ToolTipRole and index.column() in RATE_COLUMNS:
            row = self.table_row(index.row())
            return None if self._table.rate_known[row] else f"No rate: {NO_RATE_REASON}."
        if role == Qt.ItemDataRole.UserRole:
            return self.table_row(index.row())
        if role == Qt.ItemDataRole.BackgroundRole and len(self._outlined):
            return OUTLINED_ROW if self._outlined[self.table_row(index.row())] else None
        return None

    def outlined_rows(self) -> list[int]:
        """The table rows marked by `set_outlined`."""
        return np.flatnonzero(self._outlined).tolist()

    def _display(self, row: int, column: int) -> str:
        t = self._table
        assert t is not None
        if column == 0:
            return t.label(t.name[row])
        if column == 1:
            return t.label(t.category[row]) if t.category[row] else ""
        if column == 2:
            return t.label(t.program[row]) if t.program[row] else ""
        if column == 3:
            return f"{int(t.occurrences[row]):,}"
        if column in DURATION_COLUMNS:
            position = DURATION_COLUMNS.index(column)
            return format_duration_in(self._durations(t)[position][row], self._units[position])
        if column == 7:
            return f"{t.percent[row]:.2f}"
        if column == 8:
            return f"{t.cumulative_percent[row]:.2f}"
        if column in RATE_COLUMNS and not t.rate_known[row]:
            return NO_RATE  # an async start or done: the tooltip says why
        if column == 9:
            return _format_number(t.flop_rate[row] / 1e9)
        if column == 10:
            return _format_number(t.bytes_rate[row] / 1e9)
        if column == 11:
            return _format_number(t.intensity[row], 3)
        return BOUND_NAMES[int(t.bound[row])]
