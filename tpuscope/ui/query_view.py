"""The Query tab: SQL over the open profile's tables (`tpuscope.query`), results in a sortable table.

A query runs in a worker thread on the hub's trace (one `QuerySession` per trace, made in the worker:
importing DuckDB and registering the tables never blocks the window); Cancel interrupts it through
DuckDB (`QuerySession.interrupt`, repeated until it stops), a query past its time limit
(QUERY_TIMEOUT_KEY, default `DEFAULT_TIMEOUT_S`) or its memory limit (QUERY_MEMORY_KEY, default
`default_memory_limit_bytes()`) stops with one sentence, and a newer Run supersedes an older one
whose rows are then dropped, as the other views drop stale results (`tpuscope.ui.jobs.LatestJobs`).
The worker fetches at most MAX_ROWS rows, a batch at a time; the table shows them a chunk at a time
as it scrolls (Qt's fetchMore), and a cut result says so and advises a LIMIT. Every failure (a refused
statement, a parse error with its line and column, out of memory) is one sentence under the editor.

A result with `ts_ps` and `dur_ps` can be pinned on the timeline as a query track (Perfetto's debug
tracks), and one that names events (`id`, or `track_id` with `ts_ps`) outlined on the profile's
own tracks. Past queries are kept in the settings (QSettings), examples come from the schema.
"""

from __future__ import annotations

import csv
import io
import re
import threading
import time
from dataclasses import field
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QSettings, Qt, Signal
from PySide6.QtGui import QColor, QFont, QKeySequence, QShortcut, QSyntaxHighlighter, QTextCharFormat
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tpuscope.model import order_statistics
from tpuscope.model.records import record
from tpuscope.model.trace import Trace
from tpuscope.ui.analysis_hub import AnalysisHub
from tpuscope.ui.jobs import LatestJobs
from tpuscope.ui.timeline.query_tracks import QueryTrack, event_positions, events_at, make_query_track
from tpuscope.ui.views import View

# Rows one query brings into the table at most; more are cut and a LIMIT advised (a table of millions
# of Python values would take the window's memory and seconds to sort).
MAX_ROWS = 100_000
HISTORY_KEY = "query/history"
# Settings that change a query's bounds (tpuscope.query.engine.QueryLimits): seconds (0: none), bytes.
QUERY_TIMEOUT_KEY = "query/timeout_s"
QUERY_MEMORY_KEY = "query/memory_limit_bytes"
CHUNK_ROWS = 1_000  # rows the table adds per fetchMore as it scrolls
MAX_HISTORY = 50
CELL_CHARS = 200  # characters a cell shows (the CSV copy has every character)
SCHEMA_NAME_PX, SCHEMA_PX = 170, 260  # the schema list: its name column, its starting width
COMBO_CHARS = 14  # characters the Examples and History lists show closed (not their longest entry)
COMBO_MIN_PX = 110
_ModelIndex = QModelIndex | QPersistentModelIndex
DEFAULT_QUERY = (
    "SELECT name, count(*) AS count, sum(dur_ps) / 1e6 AS total_us\n"
    "FROM events\nGROUP BY name\nORDER BY total_us DESC\nLIMIT 50"
)
# DuckDB's reserved words the highlighter marks (its full list: `SELECT * FROM duckdb_keywords()`).
SQL_KEYWORDS = (
    "select from where group by order having limit offset as and or not in is null like ilike between "
    "case when then else end join left right inner outer full cross on using with distinct union all "
    "except intersect asc desc nulls first last over partition window qualify filter exists cast "
    "true false explain describe create view table macro temp temporary drop replace pragma values"
).split()


@record
class QueryResult:
    """What the worker hands the view: the rows fetched (column-wise), and how the query went."""

    query: str
    columns: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    data: list[list[Any]] = field(default_factory=list)  # one list per column
    rows: int = 0
    cut: bool = False  # more rows than MAX_ROWS: the rest were not fetched
    seconds: float = 0.0
    returns_rows: bool = True


class ResultModel(QAbstractTableModel):
    """The fetched columns of a result; rows join the view CHUNK_ROWS at a time (`fetchMore`)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.result = QueryResult("")
        self._order = np.empty(0, np.int64)  # row shown at position i: result row _order[i]
        self._shown = 0

    def set_result(self, result: QueryResult) -> None:
        self.beginResetModel()
        self.result = result
        self._order = np.arange(result.rows, dtype=np.int64)
        self._shown = min(result.rows, CHUNK_ROWS)
        self.endResetModel()

    def rowCount(self, parent: _ModelIndex = QModelIndex()) -> int:  # noqa: B008 (Qt's signature)
        return 0 if parent.isValid() else self._shown

    def columnCount(self, parent: _ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.result.columns)

    def canFetchMore(self, parent: _ModelIndex) -> bool:
        return not parent.isValid() and self._shown < self.result.rows

    def fetchMore(self, parent: _ModelIndex) -> None:
        more = min(CHUNK_ROWS, self.result.rows - self._shown)
        if more <= 0:
            return
        self.beginInsertRows(QModelIndex(), self._shown, self._shown + more - 1)
        self._shown += more
        self.endInsertRows()

    def value(self, row: int, column: int) -> Any:
        return self.result.data[column][int(self._order[row])]

    def data(self, index: _ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        value = self.value(index.row(), index.column())
        if role == Qt.ItemDataRole.DisplayRole:
            return _cell_text(value)
        if role == Qt.ItemDataRole.TextAlignmentRole and isinstance(value, (int, float)):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and value is None:
            return QColor("#8a93a2")
        return None

    def headerData(self, section: int, orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Horizontal:
            return self.result.columns[section]
        return section + 1

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sorts every fetched row (not only those shown); nulls last either way."""
        if column < 0 or column >= len(self.result.columns):
            return
        values = self.result.data[column]
        present = [i for i, v in enumerate(values) if v is not None]
        descending = order == Qt.SortOrder.DescendingOrder
        try:
            present.sort(key=values.__getitem__, reverse=descending)
        except TypeError:  # mixed types in one column (a JSON value): by their text
            present.sort(key=lambda i: str(values[i]), reverse=descending)
        nulls = [i for i, v in enumerate(values) if v is None]
        self.layoutAboutToBeChanged.emit()
        self._order = np.asarray(present + nulls, np.int64)
        self.layoutChanged.emit()

    def csv_text(self, rows: list[int] | None = None) -> str:
        """The rows (positions as shown; None: every fetched row, in the shown order) as CSV."""
        from tpuscope.query.cells import csv_cell

        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.result.columns)
        positions = range(len(self._order)) if rows is None else rows
        for r in positions:
            writer.writerow([csv_cell(self.value(r, c)) for c in range(len(self.result.columns))])
        return out.getvalue()

    def column(self, name: str) -> np.ndarray | None:
        """A fetched column by name (case-insensitive), in result order, or None."""
        lowered = [c.lower() for c in self.result.columns]
        if name not in lowered:
            return None
        return np.asarray(self.result.data[lowered.index(name)], dtype=object)


class SqlHighlighter(QSyntaxHighlighter):
    """Keywords, the schema's tables and columns, strings, numbers and comments, each in its colour."""

    def __init__(self, document, tables: set[str], columns: set[str]):
        super().__init__(document)

        def style(colour: str, bold: bool = False, italic: bool = False) -> QTextCharFormat:
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(colour))
            if bold:
                fmt.setFontWeight(QFont.Weight.Bold)
            fmt.setFontItalic(italic)
            return fmt

        def words(names) -> re.Pattern:
            alternatives = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
            return re.compile(rf"\b(?:{alternatives})\b", re.IGNORECASE)

        self.rules: list[tuple[re.Pattern, QTextCharFormat]] = [
            (words(SQL_KEYWORDS), style("#1a57d6", bold=True)),
            (words(columns), style("#0b7a61")),
            (words(tables), style("#8a3ab9", bold=True)),  # after columns: `events` is both
            (re.compile(r"\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b", re.IGNORECASE), style("#b35900")),
            (re.compile(r"'(?:[^']|'')*'?"), style("#a31515")),
            (re.compile(r"--[^\n]*"), style("#6a737d", italic=True)),
        ]

    def highlightBlock(self, text: str) -> None:
        for pattern, fmt in self.rules:  # later rules win: a keyword inside a string is a string
            for match in pattern.finditer(text):
                self.setFormat(match.start(), match.end() - match.start(), fmt)


def examples(schema) -> list[tuple[str, str]]:
    """(title, query) examples built from the schema: questions over the events table using the
    columns it has, and each table's first rows with its columns named."""
    columns: dict[str, list[str]] = {}
    for row in schema:
        columns.setdefault(row.table, []).append(row.column)
    events = set(columns.get("events", []))
    found: list[tuple[str, str]] = []
    questions = (
        ("Time per event name", {"name", "dur_ps"}, DEFAULT_QUERY),
        ("Longest events (pin them on the timeline)", {"name", "ts_ps", "dur_ps", "track_id"},
         "SELECT id, track_id, ts_ps, dur_ps, name\nFROM events\nORDER BY dur_ps DESC\nLIMIT 100"),
        ("Time per op category and program", {"category", "program", "dur_ps"},
         "SELECT category, program, count(*) AS count, sum(dur_ps) / 1e6 AS total_us\nFROM events\n"
         "WHERE category IS NOT NULL\nGROUP BY ALL\nORDER BY total_us DESC\nLIMIT 50"),
        ("Ops longer than 1 ms after step 10", {"step", "dur_ps", "hlo_op"},
         "SELECT e.id, e.track_id, e.ts_ps, e.dur_ps, e.name, e.step\nFROM events e JOIN tracks t ON "
         "t.id = e.track_id\nWHERE t.kind = 'device_ops' AND e.dur_ps > 1e9 AND e.step > 10\n"
         "ORDER BY e.dur_ps DESC\nLIMIT 200"),
        ("Time per source line", {"source", "dur_ps"},
         "SELECT source, count(*) AS count, sum(dur_ps) / 1e6 AS total_us\nFROM events\n"
         "WHERE source IS NOT NULL\nGROUP BY source\nORDER BY total_us DESC\nLIMIT 50"),
        ("Events per track", {"track_id"},
         "SELECT t.id, t.host, t.plane, t.line, t.kind, count(e.id) AS events\nFROM tracks t LEFT JOIN "
         "events e ON e.track_id = t.id\nGROUP BY ALL\nORDER BY events DESC"),
    )  # fmt: skip
    for title, needed, query in questions:
        if needed <= events:
            found.append((title, query))
    for table, names in columns.items():
        found.append((f"{table}: first rows", f"SELECT {', '.join(names)}\nFROM {table}\nLIMIT 100"))
    return found


class QueryView(View):
    """The Query tab (see the module docstring)."""

    queryFinished = Signal(object)  # the QueryResult shown, or the error sentence (str)

    def __init__(self, hub: AnalysisHub | None = None, parent: QWidget | None = None,
                 settings: QSettings | None = None):  # fmt: skip
        super().__init__(hub, parent)
        from tpuscope.query.session import schema_rows  # no DuckDB import: the schema is ours

        window_settings = getattr(parent, "settings", None)
        self.settings = settings or (
            window_settings if isinstance(window_settings, QSettings) else QSettings()
        )
        self.jobs = LatestJobs(self)
        self._session: Any = None  # the QuerySession of `_session_trace`, made in the worker
        self._session_trace: Trace | None = None
        self._session_lock = threading.Lock()  # one query on the session at a time
        self._running = False
        self._cancel = threading.Event()  # the running query's Stop
        self.pinned: list[QueryTrack] = []
        schema = schema_rows()

        self.editor = QPlainTextEdit(self)
        self.editor.setFont(QFont("monospace", 10))
        self.editor.setPlainText(DEFAULT_QUERY)
        self.editor.setPlaceholderText("SELECT ... FROM events ...  (Ctrl+Enter runs)")
        self.highlighter = SqlHighlighter(
            self.editor.document(), {r.table for r in schema}, {r.column for r in schema}
        )
        self.run_button = QPushButton("Run", self)
        self.run_button.setToolTip("Run the query (Ctrl+Enter)")
        self.run_button.clicked.connect(self.run_query)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.examples = QComboBox(self)
        self.examples.addItem("Examples\u2026")
        for title, query in examples(schema):
            self.examples.addItem(title, query)
        self.examples.activated.connect(self._example_chosen)
        self.history = QComboBox(self)
        self.history.activated.connect(self._history_chosen)
        self._refresh_history()
        for combo in (self.examples, self.history):  # a long query must not widen the window
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(COMBO_CHARS)
            combo.setMinimumWidth(COMBO_MIN_PX)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self.editor, self.run_query)

        self.status = QLabel("Write a query and press Run. The tables are listed on the right.", self)
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.model = ResultModel(self)
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.horizontalHeader().setSortIndicatorShown(True)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setDefaultSectionSize(20)
        self.copy_button = QPushButton("Copy as CSV", self)
        self.copy_button.clicked.connect(self.copy_csv)
        self.pin_button = QPushButton("Pin on timeline", self)
        self.pin_button.setToolTip("Draw the rows (they need ts_ps and dur_ps) as a track of their own")
        self.pin_button.clicked.connect(self.pin_result)
        self.outline_button = QPushButton("Outline events", self)
        self.outline_button.setToolTip("Outline the rows' events (id, or track_id and ts_ps) on the timeline")
        self.outline_button.clicked.connect(self.outline_result)
        self.unpin_button = QPushButton("Unpin all", self)
        self.unpin_button.clicked.connect(self.unpin_all)
        self.schema_tree = QTreeWidget(self)
        self.schema_tree.setHeaderLabels(["Table / column", "Type"])
        for name in dict.fromkeys(r.table for r in schema):
            item = QTreeWidgetItem([name, ""])
            for r in (r for r in schema if r.table == name):
                child = QTreeWidgetItem([r.column, r.type])
                child.setToolTip(0, r.meaning)
                item.addChild(child)
            self.schema_tree.addTopLevelItem(item)
        self.schema_tree.setColumnWidth(0, SCHEMA_NAME_PX)
        self.schema_tree.itemDoubleClicked.connect(lambda item, _: self.editor.insertPlainText(item.text(0)))

        buttons = QHBoxLayout()
        for widget in (self.run_button, self.cancel_button, self.examples, self.history):
            buttons.addWidget(widget)
        buttons.addStretch(1)
        result_buttons = QHBoxLayout()
        for widget in (self.copy_button, self.pin_button, self.outline_button, self.unpin_button):
            result_buttons.addWidget(widget)
        result_buttons.addStretch(1)
        top = QWidget(self)
        top_column = QVBoxLayout(top)
        top_column.setContentsMargins(0, 0, 0, 0)
        top_column.addWidget(self.editor, 1)
        top_column.addLayout(buttons)
        top_column.addWidget(self.status)
        bottom = QWidget(self)
        bottom_column = QVBoxLayout(bottom)
        bottom_column.setContentsMargins(0, 0, 0, 0)
        bottom_column.addLayout(result_buttons)
        bottom_column.addWidget(self.table, 1)
        left = QSplitter(Qt.Orientation.Vertical, self)
        left.addWidget(top)
        left.addWidget(bottom)
        left.setStretchFactor(0, 1)
        left.setStretchFactor(1, 3)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(left)
        split.addWidget(self.schema_tree)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 1)
        split.setSizes([4 * SCHEMA_PX, SCHEMA_PX])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(split)
        self.follow_trace(self._on_trace)
        self._update_buttons()

    # ----- running -----------------------------------------------------------------------------

    def run_query(self, query: str | None = None) -> None:
        """Runs `query` (default: the editor's text) in a worker; a query still running is cancelled."""
        text = (query if isinstance(query, str) else self.editor.toPlainText()).strip()
        if isinstance(query, str):
            self.editor.setPlainText(text)
        analysis = self.hub.analysis
        if analysis is None:
            self._show_error("open a profile first: a query reads the open profile's tables.")
            return
        if not text:
            self._show_error("the query is empty.")
            return
        self.cancel()
        self._remember(text)
        self._running = True
        self.status.setStyleSheet("")
        self.status.setText("Running\u2026")
        self._update_buttons()
        cancel = self._cancel = threading.Event()  # this Run's Stop (see `QuerySession.run`)
        self.jobs.start(lambda: self._execute(analysis, text, cancel), self._on_done, self._on_failed)

    def query_limits(self):
        """The bounds of the tab's queries: the settings' time and memory limits, MAX_ROWS rows."""
        from tpuscope.query.engine import DEFAULT_TIMEOUT_S, QueryLimits

        def number(key: str, default: float | None) -> float | None:
            try:
                value = float(str(self.settings.value(key, default) or 0))
            except (TypeError, ValueError):
                return default
            return value if value > 0 else None

        memory = number(QUERY_MEMORY_KEY, None)
        return QueryLimits(
            number(QUERY_TIMEOUT_KEY, DEFAULT_TIMEOUT_S), int(memory) if memory else None, MAX_ROWS
        )

    def _execute(self, analysis, text: str, cancel: threading.Event | None = None) -> QueryResult:
        """In the worker: the query's first MAX_ROWS rows, a batch at a time."""
        from tpuscope.query.session import QueryError, QuerySession

        with self._session_lock:
            limits = self.query_limits()
            if (
                self._session is None
                or self._session.analysis is not analysis
                or self._session.limits != limits
            ):
                if self._session is not None:
                    self._session.close()
                self._session = QuerySession(analysis, limits=limits)
            session = self._session
            started = time.perf_counter()
            result = QueryResult(text)
            run = session.run(text, cancel=cancel)  # a failure, a Stop or a limit: QueryError
            try:
                result.columns = list(run.columns)
                result.types = list(run.types)
                result.data = [[] for _ in result.columns]
                for batch in run.batches():
                    for target, column in zip(result.data, batch.columns, strict=True):
                        target.extend(column.to_pylist())
                    result.rows += batch.num_rows
                result.cut = run.cut
            except MemoryError:  # the rows as Python values: past the window's memory
                raise QueryError(
                    "the query's rows do not fit in memory; add a LIMIT or aggregate first."
                ) from None
            finally:
                run.close()
            result.seconds = time.perf_counter() - started
            return result

    def cancel(self) -> None:
        """Interrupts the running query (DuckDB stops it between vectors); its result is dropped."""
        if not self._running:
            return
        self._cancel.set()
        session = self._session
        if session is not None:
            session.interrupt()
        self.jobs.supersede()
        self._running = False
        self.status.setText("Cancelled.")
        self._update_buttons()

    def is_running(self) -> bool:
        return self._running

    def wait(self) -> None:
        """Blocks until the worker is done and its result shown (tests and screenshots)."""
        self.jobs.wait()
        QApplication.processEvents()

    def _on_done(self, result: QueryResult) -> None:
        self._running = False
        self.model.set_result(result)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.table.resizeColumnsToContents()
        for c in range(self.model.columnCount()):
            self.table.setColumnWidth(c, min(self.table.columnWidth(c), 420))
        if not result.returns_rows:
            self.status.setText(f"Done in {result.seconds * 1000:,.0f} ms (the statement returns no rows).")
        else:
            text = f"{result.rows:,} row{'s' if result.rows != 1 else ''} in {result.seconds * 1000:,.0f} ms."
            if result.cut:
                text = (f"The first {result.rows:,} rows are shown (in {result.seconds * 1000:,.0f} ms); "
                        "the result has more: add a LIMIT or aggregate.")  # fmt: skip
            self.status.setText(text)
        self._update_buttons()
        self.queryFinished.emit(result)

    def _on_failed(self, error: Exception) -> None:
        self._running = False
        from tpuscope.query.session import QueryError

        message = str(error) if isinstance(error, QueryError) else f"the query failed: {error}."
        self._show_error(message)
        self._update_buttons()
        self.queryFinished.emit(message)

    def _show_error(self, message: str) -> None:
        self.status.setStyleSheet("color: #b3261e")
        self.status.setText(message[:1].upper() + message[1:])

    def _on_trace(self, _trace: object) -> None:
        """A new profile: the running query is cancelled, the rows and pinned tracks dropped (the
        timeline drops its pinned tracks with the old trace)."""
        self.cancel()
        self.model.set_result(QueryResult(""))
        self.pinned = []
        self._update_buttons()

    def _update_buttons(self) -> None:
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(self._running)
        has_rows = self.model.result.rows > 0
        self.copy_button.setEnabled(has_rows)
        names = {c.lower() for c in self.model.result.columns}
        self.pin_button.setEnabled(has_rows and {"ts_ps", "dur_ps"} <= names)
        self.outline_button.setEnabled(has_rows and ("id" in names or {"track_id", "ts_ps"} <= names))
        self.unpin_button.setEnabled(bool(self.pinned))

    # ----- results -----------------------------------------------------------------------------

    def copy_csv(self) -> str:
        """Copies the selected rows (none selected: every fetched row) as CSV; returns the text."""
        selected = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        text = self.model.csv_text(selected or None)
        QApplication.clipboard().setText(text)
        self.status.setText(f"Copied {len(selected) or self.model.result.rows:,} rows as CSV.")
        return text

    def _event_positions(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(track number, index) of each row's event (id, else track_id with ts_ps), or None."""
        trace = self.hub.trace
        if trace is None:
            return None
        track_ids, ts, ids = (
            self.model.column("track_id"),
            self.model.column("ts_ps"),
            self.model.column("id"),
        )
        if track_ids is not None and ts is not None:  # where an event is, whatever `id` numbers
            dur = self.model.column("dur_ps")
            return events_at(
                trace, _integers(track_ids), _integers(ts), None if dur is None else _integers(dur)
            )
        if ids is not None:
            return event_positions(trace, _integers(ids))
        return None

    def outline_result(self) -> int:
        """Outlines the rows' events on the timeline (highlightRequested); returns how many."""
        found = self._event_positions()
        trace = self.hub.trace
        if found is None or trace is None:
            return 0
        numbers, indices = found
        tracks = trace.track_list()
        matches = []
        for k in order_statistics.sorted_distinct(numbers[numbers >= 0]).tolist():
            matches.append((tracks[k], order_statistics.sorted_distinct(indices[numbers == k])))
        self.highlightRequested.emit(matches)
        count = sum(len(i) for _, i in matches)
        self.status.setText(f"{count:,} events outlined on the timeline.")
        return count

    def pin_result(self) -> QueryTrack | None:
        """Pins the rows with a start and a duration as a track on the timeline (queryTracksChanged)."""
        ts, dur = self.model.column("ts_ps"), self.model.column("dur_ps")
        if ts is None or dur is None:
            return None
        keep = (ts != None) & (dur != None)  # noqa: E711 - elementwise over an object column
        if not keep.any():
            self._show_error("no row has both ts_ps and dur_ps, so there is nothing to pin.")
            return None
        names = self.model.column("name")
        found = self._event_positions()
        origin = (found[0][keep], found[1][keep]) if found is not None else (None, None)
        label = f"Query {len(self.pinned) + 1}"
        pinned = make_query_track(
            label, self.model.result.query, _integers(ts[keep]), _integers(dur[keep]),
            None if names is None else names[keep].astype(str), *origin,
        )  # fmt: skip
        self.pinned.append(pinned)
        self.queryTracksChanged.emit(list(self.pinned))
        self.status.setText(f"{len(pinned):,} rows pinned on the timeline as {label}.")
        self._update_buttons()
        return pinned

    def unpin_all(self) -> None:
        self.pinned = []
        self.queryTracksChanged.emit([])
        self._update_buttons()

    # ----- history and examples ----------------------------------------------------------------

    def history_queries(self) -> list[str]:
        value = self.settings.value(HISTORY_KEY, [])
        if isinstance(value, str):  # one entry reads back as a string
            value = [value]
        return [str(v) for v in value] if isinstance(value, (list, tuple)) else []

    def _remember(self, query: str) -> None:
        queries = [query] + [q for q in self.history_queries() if q != query]
        self.settings.setValue(HISTORY_KEY, queries[:MAX_HISTORY])
        self.settings.sync()
        self._refresh_history()

    def _refresh_history(self) -> None:
        self.history.clear()
        queries = self.history_queries()
        self.history.addItem(f"History ({len(queries)})\u2026")
        for query in queries:
            self.history.addItem(" ".join(query.split())[:80], query)

    def _history_chosen(self, position: int) -> None:
        query = self.history.itemData(position)
        if query:
            self.editor.setPlainText(query)
        self.history.setCurrentIndex(0)

    def _example_chosen(self, position: int) -> None:
        query = self.examples.itemData(position)
        if query:
            self.editor.setPlainText(query)
        self.examples.setCurrentIndex(0)

    def shutdown(self) -> None:
        self.cancel()
        self.jobs.wait()
        with self._session_lock:
            if self._session is not None:
                self._session.close()
                self._session = None
        super().shutdown()


def _integers(values: np.ndarray) -> np.ndarray:
    """An object column of ints (Decimals from sums, floats) as int64; nulls as -1."""
    values = np.asarray(values, dtype=object)
    return np.where(values == None, -1, values).astype(np.int64)  # noqa: E711 - elementwise


def _cell_text(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        if value != value or abs(value) >= 1e15 or (value and abs(value) < 1e-3):
            return f"{value:.6g}"
        return f"{value:,.3f}".rstrip("0").rstrip(".") if abs(value) < 1 else f"{value:,.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    text = str(value)
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "\u2026"
