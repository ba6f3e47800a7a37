"""The History view: every run of a logdir in order, its step time and what changed from the run before.

Top, a chart of each run's median step time with its 95% interval; a run slower than the one
before is marked red, a faster one green, one whose change the machine caused hollow (it is not the
code's), and a change of program is a dashed line with no verdict across it. Below, one row per
run: steps, median and interval, the change from the previous run with its cause, and the op that
changed most. Clicking a run in the chart (or double-clicking its row) opens the Compare view on it
and the run before it.

The runs are read by `tpuscope.app.history.read_history` in a worker thread (each run analysed once,
its summary kept), as `tpuscope history` reads them.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tpuscope.analysis.compare.cause import CAUSE_MACHINE
from tpuscope.analysis.compare.history import HistoryEntry
from tpuscope.analysis.compare.runs import VERDICT_FASTER, VERDICT_SLOWER
from tpuscope.app.history import History, read_history
from tpuscope.model.units import duration_column_unit, format_duration_in
from tpuscope.ui.jobs import LatestJobs
from tpuscope.ui.widgets.code_spans import without_code_marks
from tpuscope.ui.widgets.tables import SortableItem

if TYPE_CHECKING:
    from tpuscope.ui.load_controller import LoadController
    from tpuscope.ui.view_router import ViewRouter

HISTORY_KEY = "history"  # the History tab's name in the view router, added on first use
HISTORY_TITLE = "History"

COLUMNS = ("Run", "Steps", "Median step", "95% interval", "Change", "Cause", "Most changed op")
CHANGE_COLUMN = COLUMNS.index("Change")
SLOWER_COLOR = QColor("#c5221f")
FASTER_COLOR = QColor("#1e8e3e")
STEADY_COLOR = QColor(120, 130, 145)
BREAK_COLOR = QColor(150, 150, 150)
POINT_SIZE = 11
RUN_LABEL_CHARS = 19  # a capture-time run name, 2026_01_02_12_00_00, whole
CHART_MIN_HEIGHT = 220
SPLIT_SIZES = [600, 400]  # chart : table, in proportion, of the height below the summary
LEGEND = (
    f"<span style='color:{SLOWER_COLOR.name()}'>&#9679; slower</span> / "
    f"<span style='color:{FASTER_COLOR.name()}'>&#9679; faster</span> than the run before, "
    "&#9675; hollow: the machine's doing, not the code's; dashed line: the program changed."
)


def _item(text: str, value: float | None = None) -> QTableWidgetItem:
    item = SortableItem(text, value)
    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
    if value is not None:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


def _ms(value: float | None, unit: tuple[str, float]) -> str:
    """A time in milliseconds written in its column's `unit` (issue 33: one unit, one rounding)."""
    return "" if value is None else format_duration_in(value * 1e9, unit)


def _colour(entry: HistoryEntry) -> QColor:
    return {VERDICT_SLOWER: SLOWER_COLOR, VERDICT_FASTER: FASTER_COLOR}.get(entry.change or "", STEADY_COLOR)


def _by_machine(entry: HistoryEntry) -> bool:
    c = entry.comparison
    return c is not None and c.cause is not None and c.cause.kind == CAUSE_MACHINE


class HistoryView(QWidget):
    compareRequested = Signal(str, str)  # (BASE, NEW): what opens each run
    historyShown = Signal(object)  # History
    historyFailed = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.history: History | None = None
        self.plotted: list[int] = []  # the entry of each chart point
        self.jobs = LatestJobs(self)
        self.summary = QLabel("Choose File > Run History\u2026 to read every run of a logdir.", self)
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.legend = QLabel(LEGEND, self)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.chart = pg.PlotWidget(self, background="w")
        self.chart.setLabel("left", "median step", units="s")
        self.chart.setLabel("bottom", "run")
        self.chart.setMinimumHeight(CHART_MIN_HEIGHT)
        self.chart.showGrid(y=True, alpha=0.2)
        self.points = pg.ScatterPlotItem(size=POINT_SIZE, hoverable=True)
        self.points.sigClicked.connect(self._on_point_clicked)
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.cellDoubleClicked.connect(lambda row, _: self.compare_entry(row))
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.addWidget(self.chart)
        splitter.addWidget(self.table)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setSizes(SPLIT_SIZES)
        column = QVBoxLayout(self)
        column.setContentsMargins(8, 8, 8, 8)
        column.addWidget(self.summary)
        column.addWidget(self.legend)
        column.addWidget(splitter, 1)

    # ----- input -----------------------------------------------------------------------------

    def read_paths(self, paths: list[str]) -> None:
        """Reads the history of `paths` off the UI thread; a newer call supersedes this one."""
        self.summary.setText(html.escape(f"Reading the runs of {', '.join(paths)}\u2026"))
        self.jobs.start(lambda: read_history(paths), self._on_result, self._on_failed)

    def _on_result(self, result: object) -> None:
        assert isinstance(result, History)
        self.set_history(result)

    def _on_failed(self, error: Exception) -> None:
        message = str(error) or type(error).__name__
        self.summary.setText(html.escape(f"Cannot read the history: {message}"))
        self.historyFailed.emit(message)

    def shutdown(self) -> None:
        self.jobs.supersede()
        self.jobs.wait()

    def set_history(self, history: History) -> None:
        self.history = history
        self._show_summary(history)
        self._show_chart(history.entries)
        self._fill_table(history.entries)
        self.historyShown.emit(history)

    # ----- parts -----------------------------------------------------------------------------

    def _show_summary(self, history: History) -> None:
        entries = history.entries
        changed = [e for e in entries if e.change in (VERDICT_SLOWER, VERDICT_FASTER)]
        by_machine = sum(1 for e in changed if _by_machine(e))
        skipped = [e.run for e in entries if e.error]
        parts = [
            f"<b>{len(entries)} runs</b>, {len(changed)} changed from the run before "
            f"({by_machine} by the machine); {len(history.analysed)} analysed, the rest from the cache."
        ]
        if skipped:
            parts.append(f"Skipped (could not be read): {html.escape(', '.join(skipped))}.")
        parts.append("Click a run to compare it with the run before it.")
        self.summary.setText(" ".join(parts))

    def _show_chart(self, entries: list[HistoryEntry]) -> None:
        self.chart.clear()
        self.points = pg.ScatterPlotItem(size=POINT_SIZE, hoverable=True)
        self.points.sigClicked.connect(self._on_point_clicked)
        self.plotted = []
        x, y, low, high, spots = [], [], [], [], []
        for k, entry in enumerate(entries):
            if entry.program_changed:
                line = pg.InfiniteLine(
                    k - 0.5, angle=90, pen=pg.mkPen(BREAK_COLOR, style=Qt.PenStyle.DashLine)
                )
                line.setToolTip(entry.program_changed)
                self.chart.addItem(line)
            s = entry.summary
            median = None if s is None else s.median_ms()
            interval = None if s is None else s.median_interval_ms()
            if median is None or interval is None:
                continue
            x.append(k)
            y.append(median / 1e3)
            low.append((median - interval[0]) / 1e3)
            high.append((interval[1] - median) / 1e3)
            colour = _colour(entry)
            hollow = _by_machine(entry)
            spots.append(
                {
                    "pos": (k, median / 1e3),
                    "brush": pg.mkBrush(QColor(255, 255, 255) if hollow else colour),
                    "pen": pg.mkPen(colour, width=2),
                    "symbol": "o",
                    "data": k,
                }
            )
            self.plotted.append(k)
            cause = None if entry.comparison is None else entry.comparison.cause
            if cause is not None:
                label = pg.TextItem(cause.kind, color=colour, anchor=(0.5, 1.3))
                label.setPos(k, median / 1e3)
                self.chart.addItem(label)
        if x:
            bars = pg.ErrorBarItem(
                x=np.array(x, float), y=np.array(y), top=np.array(high), bottom=np.array(low), beam=0.15,
                pen=pg.mkPen(STEADY_COLOR),
            )  # fmt: skip
            self.chart.addItem(bars)
            self.chart.plot(x, y, pen=pg.mkPen(STEADY_COLOR, width=1))
            self.points.addPoints(spots)
            self.chart.addItem(self.points)
        ticks = [(k, e.run[-RUN_LABEL_CHARS:]) for k, e in enumerate(entries)]
        self.chart.getAxis("bottom").setTicks([ticks])
        self.chart.setXRange(-0.5, max(len(entries) - 0.5, 0.5), padding=0.02)

    def _fill_table(self, entries: list[HistoryEntry]) -> None:
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(entries))
        medians = [e.summary.median_ms() for e in entries if e.summary is not None]
        unit = duration_column_unit([m * 1e9 for m in medians if m is not None])  # median and interval
        for r, e in enumerate(entries):
            s = e.summary
            median = None if s is None else s.median_ms()
            interval = None if s is None else s.median_interval_ms()
            c = e.comparison
            if e.error:
                change, cause = f"skipped: {e.error}", ""
            elif e.program_changed:
                change, cause = f"no verdict: {e.program_changed}", ""
            elif e.note:
                change, cause = e.note, ""
            elif c is None:
                change, cause = "", ""
            else:
                percent = "" if c.deciding is None else f" {c.deciding.change_percent:+.0f}%"
                change = c.verdict.replace("_", " ") + percent
                cause = "" if c.cause is None else c.cause.kind
            top = "" if c is None or c.cause is None else next((o.name for o in c.ops.rows if o.delta_ps), "")
            cells = [
                _item(e.run),
                _item("" if s is None else str(s.steps), None if s is None else float(s.steps)),
                _item(_ms(median, unit), median),
                _item("" if interval is None else f"{_ms(interval[0], unit)} .. {_ms(interval[1], unit)}"),
                _item(change),
                _item(cause),
                _item(top),
            ]
            cells[CHANGE_COLUMN].setForeground(_colour(e))
            if c is not None and c.cause is not None:
                for cell in cells:
                    cell.setToolTip(without_code_marks(c.cause.summary))
            for col, cell in enumerate(cells):
                self.table.setItem(r, col, cell)
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().setSectionResizeMode(len(COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)

    # ----- actions ---------------------------------------------------------------------------

    def _on_point_clicked(self, _item, points, _event=None) -> None:
        if len(points):
            self.compare_entry(int(points[0].data()))

    def compare_entry(self, index: int) -> bool:
        """Selects run `index` and asks for the Compare view on it and the run it was compared with."""
        history = self.history
        if history is None or not 0 <= index < len(history.entries):
            return False
        self.table.selectRow(index)
        entry = history.entries[index]
        if entry.previous is None:
            return False
        base, new = history.where(entry.previous), history.where(entry.run)
        if base is None or new is None:
            return False
        self.compareRequested.emit(base, new)
        return True


def show_history(
    router: ViewRouter, loads: LoadController, paths: list[str], compare: Callable[[str, str], None]
) -> HistoryView:
    """Shows the History tab (added to the window's tabs on first use) and reads every run of `paths`
    in the background; clicking a run there calls `compare(BASE, NEW)` with the run before it. Only the
    router's and the load controller's public API is used."""
    view = router.made_views.get(HISTORY_KEY)
    if not isinstance(view, HistoryView):
        view = HistoryView()  # the router's tabs take it
        view.historyFailed.connect(lambda message: loads.show_error("Cannot read the history", message))
        view.compareRequested.connect(compare)
        router.add_view(HISTORY_KEY, view, HISTORY_TITLE)
    router.bring_to_front(view)
    view.read_paths([str(p) for p in paths])
    return view
