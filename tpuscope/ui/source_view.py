"""The "Source" view: device time by line of the user's code, and the code itself beside it.

On the left the op table by source line (`ops --by source`: each `file:line` with its function,
self time, share and the ops on it); on the right, when the file is on this machine (the path as
recorded, or under a source root the user maps a recorded prefix to, remembered per logdir), the
file with a gutter of device time per line. Picking a line, in the table or in the file, outlines
its ops on the timeline (`highlightRequested`) and in the op table (`opsOutlined`).

The file is shown by one `setPlainText` and a gutter that paints only the lines on screen, so a
10k-line file opens in milliseconds (benchmarks/bench_source_view.py).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QRect,
    QSettings,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QFont, QFontDatabase, QMouseEvent, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractScrollArea,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from tpuscope.analysis.ops import OpTable
from tpuscope.analysis.session import op_table_result
from tpuscope.model.trace import Trace
from tpuscope.model.units import SHORT_SPEC, duration_column_unit, format_duration, format_duration_in
from tpuscope.ui.analysis_hub import AnalysisHub
from tpuscope.ui.source_files import (
    SourceRoot,
    SourceText,
    line_self_times,
    logdir_of,
    read_source,
    settings_key,
    split_line,
)
from tpuscope.ui.views import View
from tpuscope.ui.widgets.elide import ElidingDelegate

_ModelIndex = QModelIndex | QPersistentModelIndex
GUTTER_PAD_PX = 6
HOT_LINE = QColor(255, 140, 0)  # the gutter's bar: the line's share of the file's busiest line
PICKED_LINE = QColor(255, 236, 179)
GUTTER_BACKGROUND = QColor(246, 247, 249)
TAB_WIDTH = 8  # columns a tab takes, as Python's tokenizer counts them
TABLE_SHARE = 45  # of the width, in percent: the lines table beside the file
LINE_COLUMN_SHARES = (0.5, 0.25)  # Line and Function, of the width the numbers leave; Ops the rest
NUMBER_PAD_PX = 8


def default_settings() -> QSettings:
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "tpuscope", "tpuscope")


class SourceLinesModel(QAbstractTableModel):
    """The op table by source line, in its own order (self time, largest first)."""

    COLUMNS = ("Line", "Function", "Self", "Self %", "Ops")

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.table: OpTable | None = None
        self._percent = np.empty(0)
        self._unit: tuple[str, float] = ("ps", 1.0)

    def set_table(self, table: OpTable | None) -> None:
        self.beginResetModel()
        self.table = table
        self._percent = table.percent if table is not None else np.empty(0)
        # The self time column in one unit for all its rows (issue 33), chosen from every row.
        self._unit = duration_column_unit(table.self_ps) if table is not None else ("ps", 1.0)
        self.endResetModel()

    def rowCount(self, parent: _ModelIndex = QModelIndex()) -> int:  # noqa: B008 (Qt's signature)
        return 0 if self.table is None or parent.isValid() else len(self.table)

    def columnCount(self, parent: _ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.COLUMNS[section]
        return None

    def data(self, index: _ModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        table = self.table
        if table is None or not index.isValid():
            return None
        row, column = index.row(), index.column()
        if role == Qt.ItemDataRole.TextAlignmentRole and column in (2, 3):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        if column == 0:
            return table.label(table.name[row])
        if column == 1:
            return table.functions[row] if table.functions else ""
        if column == 2:
            return format_duration_in(int(table.self_ps[row]), self._unit)
        if column == 3:
            return f"{float(self._percent[row]):.2f}"
        ops = table.folded_ops[row] if table.folded_ops else []
        return ", ".join(ops) if role == Qt.ItemDataRole.ToolTipRole else ", ".join(ops[:8])


class SourceEditor(QAbstractScrollArea):
    """A read-only file with a gutter: line number and the device time spent on each line.

    It holds the file as a list of lines and paints only those on screen, gutter included, so
    opening a file costs a `splitlines` whatever its length (QPlainTextEdit lays out every line of
    an unwrapped file to size its horizontal scroll bar: 50-170 ms for 10k lines here).
    `linePicked(line)`: the user clicked a line (1-based).
    """

    linePicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.viewport().setBackgroundRole(QPalette.ColorRole.Base)
        self.lines: list[str] = []
        self.times: dict[int, int] = {}  # line (1-based) -> device self time, ps
        self._hottest = 1
        self._current = 0  # the marked line, 1-based (0: none)
        self._widest = 0  # characters of the longest line

    def show_text(self, text: str, times: dict[int, int]) -> None:
        self.lines = text.expandtabs(TAB_WIDTH).splitlines()
        self.times = dict(times)
        self._hottest = max(self.times.values(), default=0) or 1
        self._widest = max(map(len, self.lines), default=0)
        self._current = 0
        self._fit_scroll_bars()
        self.verticalScrollBar().setValue(0)
        self.horizontalScrollBar().setValue(0)
        self.viewport().update()

    def text(self) -> str:
        return "\n".join(self.lines) + ("\n" if self.lines else "")

    def line_count(self) -> int:
        return len(self.lines)

    def _line_height(self) -> int:
        return max(self.fontMetrics().height(), 1)

    def _number_width(self) -> int:
        return self.fontMetrics().horizontalAdvance("9" * len(str(max(len(self.lines), 1))))

    def gutter_width(self) -> int:
        return self._number_width() + self.fontMetrics().horizontalAdvance("999.9 ms") + 3 * GUTTER_PAD_PX

    def _fit_scroll_bars(self) -> None:
        rows = max(self.viewport().height() // self._line_height(), 1)
        self.verticalScrollBar().setRange(0, max(len(self.lines) - rows, 0))
        self.verticalScrollBar().setPageStep(rows)
        text_width = self.viewport().width() - self.gutter_width()
        content = self._widest * self.fontMetrics().horizontalAdvance("x") + 2 * GUTTER_PAD_PX
        self.horizontalScrollBar().setRange(0, max(content - text_width, 0))
        self.horizontalScrollBar().setPageStep(max(text_width, 1))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_scroll_bars()

    def paintEvent(self, event: QPaintEvent) -> None:
        """Only the lines on screen: the text, then the gutter over its left edge."""
        painter = QPainter(self.viewport())
        height, ascent = self._line_height(), self.fontMetrics().ascent()
        first = self.verticalScrollBar().value()
        visible = self.lines[first : first + self.viewport().height() // height + 2]
        gutter, number_width = self.gutter_width(), self._number_width()
        width, shift = self.viewport().width(), self.horizontalScrollBar().value()
        painter.setPen(self.palette().color(QPalette.ColorRole.Text))
        for k, text in enumerate(visible):
            if first + k + 1 == self._current:
                painter.fillRect(gutter, k * height, width - gutter, height, PICKED_LINE)
            painter.drawText(gutter + GUTTER_PAD_PX - shift, k * height + ascent, text)
        painter.fillRect(0, 0, gutter, self.viewport().height(), GUTTER_BACKGROUND)
        right = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        time_left = number_width + 2 * GUTTER_PAD_PX
        for k in range(len(visible)):
            line, top = first + k + 1, k * height
            spent = self.times.get(line)
            if spent:
                share = spent / self._hottest
                bar = int((gutter - time_left) * share)
                painter.fillRect(
                    gutter - bar - 2, top + 1, bar, height - 2, HOT_LINE.lighter(100 + int(80 * (1 - share)))
                )
                painter.setPen(QColor(30, 30, 30))
                time_box = QRect(time_left, top, gutter - time_left - GUTTER_PAD_PX, height)
                painter.drawText(time_box, right, format_duration(spent, SHORT_SPEC))
            painter.setPen(QColor(140, 146, 156))
            painter.drawText(QRect(GUTTER_PAD_PX, top, number_width, height), right, str(line))
        painter.end()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        line = self.verticalScrollBar().value() + int(event.position().y()) // self._line_height() + 1
        if 1 <= line <= len(self.lines):
            self._current = line
            self.viewport().update()
            self.linePicked.emit(line)
        super().mousePressEvent(event)

    def go_to_line(self, line: int) -> None:
        """Scrolls `line` (1-based) to the middle and marks it."""
        if not 1 <= line <= len(self.lines):
            return
        self._current = line
        self.verticalScrollBar().setValue(line - 1 - self.verticalScrollBar().pageStep() // 2)
        self.viewport().update()

    def current_line(self) -> int:
        return self._current


class SourceView(View):
    """Device time by source line beside the file (module docstring)."""

    def __init__(
        self, hub: AnalysisHub | None = None, parent: QWidget | None = None, settings: QSettings | None = None
    ) -> None:
        super().__init__(hub, parent)
        self.settings = settings if settings is not None else _window_settings(parent) or default_settings()
        self._trace: Trace | None = None
        self._table: OpTable | None = None
        self._logdir = ""
        self.root: SourceRoot | None = None
        self.shown_file = ""  # the recorded path of the file shown ("" for none)
        self.source: SourceText | None = None
        self._build()
        self.follow_trace(self._on_trace)
        self.subscribe_when_shown(op_table_result("source", "all"), self._show_table)

    def _build(self) -> None:
        self.summary = QLabel("No profile loaded.")
        self.summary.setWordWrap(True)
        self.prefix_edit = QLineEdit()
        self.prefix_edit.setPlaceholderText("recorded prefix, e.g. /workspace")
        self.folder_edit = QLineEdit()
        self.folder_edit.setPlaceholderText("local folder")
        browse = QPushButton("Browse\u2026")
        browse.clicked.connect(self._browse)
        apply = QPushButton("Apply")
        apply.clicked.connect(lambda: self.set_source_root(self.prefix_edit.text(), self.folder_edit.text()))
        roots = QHBoxLayout()
        roots.addWidget(QLabel("Source root:"))
        roots.addWidget(self.prefix_edit, 1)
        roots.addWidget(QLabel("\u2192"))
        roots.addWidget(self.folder_edit, 2)
        roots.addWidget(browse)
        roots.addWidget(apply)

        self.model = SourceLinesModel(self)
        self.lines_view = QTableView()
        self.lines_view.setModel(self.model)
        self.lines_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.lines_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.lines_view.setAlternatingRowColors(True)
        self.lines_view.setWordWrap(False)
        self.lines_view.setTextElideMode(Qt.TextElideMode.ElideLeft)  # a path's end says the most
        # The Line column keeps its file name and line number whole (the tooltip has the whole path).
        self._eliding = ElidingDelegate(self.lines_view)
        self.lines_view.setItemDelegateForColumn(0, self._eliding)
        self.lines_view.verticalHeader().hide()
        self.lines_view.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.lines_view.horizontalHeader().setStretchLastSection(True)
        self.lines_view.selectionModel().selectionChanged.connect(self._on_row_picked)

        self.file_label = QLabel("")
        self.file_label.setWordWrap(True)
        bold = QFont(self.file_label.font())
        bold.setBold(True)
        self.file_label.setFont(bold)
        self.editor = SourceEditor()
        self.editor.linePicked.connect(self._on_line_clicked)
        right = QWidget()
        column = QVBoxLayout(right)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.file_label)
        column.addWidget(self.editor, 1)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.lines_view)
        splitter.addWidget(right)
        splitter.setSizes([TABLE_SHARE * 10, (100 - TABLE_SHARE) * 10])
        layout = QVBoxLayout(self)
        layout.addLayout(roots)
        layout.addWidget(self.summary)
        layout.addWidget(splitter, 1)

    # --- input ----------------------------------------------------------------------------------
    def _on_trace(self, trace: Trace | None) -> None:
        self._trace = trace
        self._table = None
        self.model.set_table(None)
        self.shown_file = ""
        self.source = None
        self.editor.show_text("", {})
        self.file_label.setText("")
        self._logdir = logdir_of(trace) if trace is not None else ""
        self.root = self._remembered_root()
        self.prefix_edit.setText(self.root.prefix if self.root else "")
        self.folder_edit.setText(self.root.folder if self.root else "")
        self.summary.setText("No profile loaded." if trace is None else "Computing device time by line\u2026")

    def _show_table(self, table: OpTable | None) -> None:
        self._table = table
        self.model.set_table(table)
        header = self.lines_view.horizontalHeader()
        metrics = self.lines_view.fontMetrics()
        numbers = [
            metrics.horizontalAdvance(sample) + 2 * NUMBER_PAD_PX for sample in ("999.999 ms", "100.00")
        ]
        width = max(self.lines_view.viewport().width() - sum(numbers), 300)
        for column, share in enumerate(LINE_COLUMN_SHARES):
            header.resizeSection(column, int(width * share))
        for column, size in enumerate(numbers, start=len(LINE_COLUMN_SHARES)):
            header.resizeSection(column, size)
        if table is None:
            self.summary.setText("This profile holds no device ops, so no device time by line.")
            return
        lines = sum(1 for name in table.names() if split_line(name) is not None)
        files = {w[0] for name in table.names() if (w := split_line(name)) is not None}
        total = table.total_self_ps
        placed = sum(int(table.self_ps[r]) for r, n in enumerate(table.names()) if split_line(n) is not None)
        share = 100.0 * placed / total if total else 0.0
        self.summary.setText(
            f"{lines:,} source line(s) in {len(files):,} file(s) hold {share:.1f}% of device self time "
            f"({format_duration(total)}); pick a line to see its file and outline its ops."
        )
        # The biggest line's file is shown, but no row is selected: a selection would outline its ops
        # over the op the user picked elsewhere, and opening a tab must not change it (issue 37).
        first = next((where for n in table.names() if (where := split_line(n)) is not None), None)
        if first is not None:
            self.show_file(*first)

    # --- source roots -----------------------------------------------------------------------------
    def _remembered_root(self) -> SourceRoot | None:
        if not self._logdir:
            return None
        value = self.settings.value(settings_key(self._logdir))
        if not isinstance(value, str) or "\n" not in value:
            return None
        prefix, folder = value.split("\n", 1)
        return SourceRoot(prefix, folder)

    def set_source_root(self, prefix: str, folder: str) -> None:
        """Maps recorded paths starting with `prefix` to `folder` (remembered for this logdir) and
        shows the picked file again through it."""
        self.root = SourceRoot(prefix.strip(), folder.strip()) if folder.strip() else None
        if self._logdir:
            key = settings_key(self._logdir)
            if self.root is None:
                self.settings.remove(key)
            else:
                self.settings.setValue(key, f"{self.root.prefix}\n{self.root.folder}")
            self.settings.sync()
        if self.shown_file:
            recorded, self.shown_file = self.shown_file, ""
            self.show_file(recorded, self.editor.current_line())

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, "Local folder of the recorded sources", self.folder_edit.text()
        )
        if folder:
            self.folder_edit.setText(folder)
            self.set_source_root(self.prefix_edit.text(), folder)

    # --- picking lines ----------------------------------------------------------------------------
    def _on_row_picked(self, *_args) -> None:
        selected = self.lines_view.selectionModel().selectedRows()
        if not selected or self._table is None:
            return
        self.pick_row(selected[0].row())

    def pick_row(self, row: int) -> None:
        """Shows row `row`'s line in its file and outlines the line's ops."""
        table = self._table
        if table is None or not 0 <= row < len(table):
            return
        self.highlightRequested.emit(table.events_of_row(row))
        self.opsOutlined.emit(set(table.folded_ops[row]) if table.folded_ops else set())
        where = split_line(table.label(table.name[row]))
        if where is not None:
            self.show_file(*where)

    def show_file(self, recorded: str, line: int = 1) -> None:
        """Shows the recorded file (through the source root), its gutter, and marks `line`."""
        if recorded != self.shown_file:
            self.shown_file = recorded
            self.source = read_source(recorded, self.root)
            times = line_self_times(self._table, recorded) if self._table is not None else {}
            self.editor.show_text(self.source.text, times)
            shown = str(self.source.path) if self.source.path is not None else recorded
            self.file_label.setText(self.source.note or shown)
        if self.source is not None and self.source.text:
            self.editor.go_to_line(line)

    def _on_line_clicked(self, line: int) -> None:
        """A click on a line of the file: the table row of that line, if the line ran ops."""
        table = self._table
        if table is None or not self.shown_file:
            return
        name = f"{self.shown_file}:{line}"
        rows = [r for r, n in enumerate(table.names()) if n == name]
        if rows:
            self.lines_view.selectRow(rows[0])


def _window_settings(parent: QWidget | None) -> QSettings | None:
    """The main window's settings, when the view lives in one (a screenshot's are throwaway)."""
    while parent is not None:
        settings = getattr(parent, "settings", None)
        if isinstance(settings, QSettings):
            return settings
        parent = parent.parentWidget()
    return None
