"""The "Ops" view: where device time goes, as a sortable table, a top-N bar chart and a per-step chart.

The table model sits directly on the numpy columns of an `OpTable`: sorting and filtering only
rebuild one permutation array (argsort / boolean mask), so 100k rows sort at numpy speed, and
`data()` formats one cell on demand. A QSortFilterProxyModel would call back into Python for
every comparison (commaai/openpilot PR #26150: >10 ms to sort 500 rows through the proxy, 0.1 ms
in the model).

The view knows nothing about the timeline: it asks for highlights and zooms through signals that
the main window connects (`highlightRequested`, `zoomRequested`). Its op tables and step
breakdowns are the shared ones (`AnalysisHub`): computed once per trace, device and grouping, in a
worker thread, and only once the view is first shown (a hidden tab costs nothing).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
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

from tpuscope.analysis.device_ops import Device
from tpuscope.analysis.ops import GROUPINGS, OpTable
from tpuscope.analysis.roofline import BOUND_NAMES
from tpuscope.analysis.session import DEVICES, DeviceChoice, op_table_result, step_breakdown_result
from tpuscope.analysis.step_breakdown import StepBreakdown
from tpuscope.model.trace import Trace
from tpuscope.model.units import format_duration
from tpuscope.ui.analysis_hub import AnalysisHub
from tpuscope.ui.views import OpRow, View

BAR_LABEL_CHARS = 36  # longer bar labels are cut: the full name is in the table
TOP_N_BARS = 15  # bars in the top-N chart: enough to see the long tail start, few enough to read
STEP_TITLE = "Per step: device busy (blue) vs idle (grey)"  # the title is the legend: no box over the bars
STEP_AXIS_LABEL = "step (double-click a bar to zoom the timeline to it)"
BUSY_COLOR = QColor(66, 133, 244)
IDLE_COLOR = QColor(200, 200, 200)
# Margin around one op when stepping through occurrences: a tenth of the op on each side.
ZOOM_MARGIN_FRACTION = 0.1

# Column widths follow the rows: each column fits the widest of its first rows (Qt measures only
# these, never 100k), text columns are capped so the numbers keep their room, and when the table is
# still wider than the view the text columns give way first, down to a floor. Long names and
# programs are elided in the middle, where `jit_f(1219...3885)` and kernel names differ least; the
# tooltip has the whole text. Users resize columns freely afterwards.
MEASURED_ROWS = 200
TEXT_COLUMN_CAPS_PX = (260, 150, 220)  # Name, Category, Program
TEXT_COLUMN_FLOOR_PX = 90
TEXT_COLUMNS_GIVING_WAY = (2, 1, 0)  # program, then category, then the op name, which matters most
# Rates past a million (GB/s of a nanosecond-long async copy-start) carry no information past their
# third digit and would push the other columns out of view: they are shown as 3.15e+09.
COMPACT_NUMBER_FROM = 1e6
TABLE_SHARE = 55  # of the height under the controls, in percent: the table over the charts

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

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._table: OpTable | None = None
        self._rows = np.empty(0, dtype=np.int64)  # visible table rows, in display order
        self._keys: list[np.ndarray] = []
        self._filter = ""
        self._sort_column = 6  # self time, largest first: the table's natural order
        self._sort_order = Qt.SortOrder.DescendingOrder

    # --- data -------------------------------------------------------------------------------
    def set_table(self, table: OpTable | None) -> None:
        self.beginResetModel()
        self._table = table
        self._keys = self._sort_keys(table) if table is not None else []
        self._rows = self._visible_rows()
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
        if role == Qt.ItemDataRole.UserRole:
            return self.table_row(index.row())
        return None

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
        if column in (4, 5, 6):
            return format_duration((t.total_ps, t.avg_ps, t.self_ps)[column - 4][row])
        if column == 7:
            return f"{t.percent[row]:.2f}"
        if column == 8:
            return f"{t.cumulative_percent[row]:.2f}"
        if column == 9:
            return _format_number(t.flop_rate[row] / 1e9)
        if column == 10:
            return _format_number(t.bytes_rate[row] / 1e9)
        if column == 11:
            return _format_number(t.intensity[row], 3)
        return BOUND_NAMES[int(t.bound[row])]


class OpsView(View):
    """Op breakdown of a trace: device and grouping pickers, filterable table, two charts."""

    tableReady = Signal(object)  # the OpTable now shown (None: the chosen devices ran no ops)

    def __init__(self, hub: AnalysisHub | None = None, parent: QWidget | None = None) -> None:
        super().__init__(hub, parent)
        self._trace: Trace | None = None
        self._devices: list[Device] | None = None  # None until the shared device list arrives
        self._table: OpTable | None = None
        self._breakdown: StepBreakdown | None = None
        self._stale = False  # a trace was set but its breakdown not asked for yet
        self._pending_row: int | None = None  # an op table row to select once its table arrives
        self._shown: tuple[str, DeviceChoice] | None = None  # (grouping, device) of the table shown
        self._bar_rows = np.empty(0, dtype=np.int64)  # table rows drawn as bars, top first
        self._occurrence_starts = np.empty(0, dtype=np.int64)
        self._occurrence_ends = np.empty(0, dtype=np.int64)
        self._cursor = -1
        self._selected_table_row = -1  # OpTable row whose events are being stepped through
        self._build()

    # --- construction -------------------------------------------------------------------------
    def _build(self) -> None:
        self.device_combo = QComboBox()
        self.grouping_combo = QComboBox()
        for by in GROUPINGS:
            self.grouping_combo.addItem(f"by {by}", by)
        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("Filter ops, categories, programs…")
        self.filter_edit.setClearButtonEnabled(True)
        self.summary_label = QLabel("No profile loaded.")
        self.summary_label.setWordWrap(True)  # a long summary must not hold the whole view wide

        controls = QHBoxLayout()
        controls.addWidget(QLabel("Device:"))
        controls.addWidget(self.device_combo)
        controls.addWidget(self.grouping_combo)
        controls.addWidget(self.filter_edit, 1)

        self.model = OpsTableModel(self)
        self.table_view = QTableView()
        self.table_view.setModel(self.model)
        self.table_view.setSortingEnabled(True)
        self.table_view.horizontalHeader().setSortIndicator(6, Qt.SortOrder.DescendingOrder)
        self.table_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table_view.setAlternatingRowColors(True)
        self.table_view.setWordWrap(False)
        self.table_view.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        vertical = self.table_view.verticalHeader()
        vertical.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # never measure 100k rows
        vertical.setDefaultSectionSize(self.fontMetrics().height() + 6)
        vertical.hide()
        header = self.table_view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        header.setResizeContentsPrecision(MEASURED_ROWS)

        self.previous_button = QPushButton("◀ Previous")
        self.next_button = QPushButton("Next ▶")
        self.occurrence_label = QLabel("")
        stepping = QHBoxLayout()
        stepping.addWidget(QLabel("Occurrences:"))
        stepping.addWidget(self.previous_button)
        stepping.addWidget(self.next_button)
        stepping.addWidget(self.occurrence_label, 1)

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.table_view, 1)
        top_layout.addLayout(stepping)

        self.bar_plot = pg.PlotWidget(background="w")
        self.bar_plot.setTitle(f"Top {TOP_N_BARS} by self time", color="k")
        self.bar_plot.setLabel("bottom", "self time", units="s")
        self.bar_plot.setMouseEnabled(x=False, y=False)
        self.bar_plot.hideButtons()
        self.step_plot = pg.PlotWidget(background="w")
        self.step_plot.setTitle(STEP_TITLE, color="k")
        self.step_plot.setLabel("left", "time", units="s")
        self.step_plot.setLabel("bottom", STEP_AXIS_LABEL)
        self.step_plot.setToolTip("Double-click a step's bar to show that step on the timeline.")
        self.bar_plot.setToolTip("Click a bar to select its op in the table.")
        self.step_plot.setMouseEnabled(x=True, y=False)
        self.step_plot.hideButtons()
        self.step_plot.scene().sigMouseClicked.connect(self._on_step_plot_clicked)
        self.bar_plot.scene().sigMouseClicked.connect(self._on_bar_plot_clicked)

        for plot in (self.bar_plot, self.step_plot):
            for side in ("left", "bottom"):
                plot.getAxis(side).setTextPen("k")
                plot.getAxis(side).setPen("k")

        # The table takes the full width (its numbers are the point of the view); the two charts
        # sit side by side under it.
        charts = QSplitter(Qt.Orientation.Horizontal)
        charts.addWidget(self.bar_plot)
        charts.addWidget(self.step_plot)
        charts.setSizes([1, 1])
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(top)
        splitter.addWidget(charts)
        splitter.setStretchFactor(0, TABLE_SHARE)
        splitter.setStretchFactor(1, 100 - TABLE_SHARE)
        splitter.setSizes([TABLE_SHARE * 10, (100 - TABLE_SHARE) * 10])

        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.summary_label)
        layout.addWidget(splitter, 1)

        self.device_combo.currentIndexChanged.connect(lambda _: self._recompute())
        self.grouping_combo.currentIndexChanged.connect(lambda _: self._regroup())
        self.filter_edit.textChanged.connect(self.model.set_filter)
        # Selection, not the current index: Qt moves the current index by itself when the table gets
        # focus, and that must not send the timeline anywhere.
        self.table_view.selectionModel().selectionChanged.connect(self._on_selection_changed)
        self.model.modelReset.connect(self._clear_occurrences)
        self.table_view.doubleClicked.connect(lambda _: self.next_occurrence())
        self.previous_button.clicked.connect(self.previous_occurrence)
        self.next_button.clicked.connect(self.next_occurrence)
        self._update_stepping()
        self.hub.traceChanged.connect(self._on_trace)

    # --- input ----------------------------------------------------------------------------------
    def _on_trace(self, trace: Trace | None) -> None:
        """A new trace (None clears the view); its breakdown is asked for when the view is shown."""
        self._trace = trace
        self._devices = None
        self._table = self._breakdown = None
        self._pending_row = None
        self._shown = None
        self.device_combo.blockSignals(True)
        self.device_combo.clear()
        self.device_combo.setEnabled(False)
        self.device_combo.blockSignals(False)
        self.model.set_table(None)
        self.bar_plot.clear()
        self.step_plot.clear()
        self._stale = trace is not None
        self.summary_label.setText("No profile loaded." if trace is None else "Computing the op breakdown…")
        if self._stale and self.isVisible():
            self._refresh()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt override)
        if self._stale:
            self._refresh()
        super().showEvent(event)

    def _refresh(self) -> None:
        self._stale = False
        self.hub.request(DEVICES, self._on_devices)

    def _on_devices(self, devices: list[Device]) -> None:
        self._devices = devices
        self.device_combo.blockSignals(True)
        self.device_combo.clear()
        if len(devices) > 1:
            self.device_combo.addItem(f"All {len(devices)} devices", "all")
        for position, device in enumerate(devices):
            self.device_combo.addItem(device.label, position)
        self.device_combo.setEnabled(bool(devices))
        self.device_combo.blockSignals(False)
        self._recompute()

    @property
    def table(self) -> OpTable | None:
        """The op table shown (None until it arrives, or when the chosen devices ran no ops)."""
        return self._table

    @property
    def breakdown(self) -> StepBreakdown | None:
        return self._breakdown

    def select(self, target: object) -> None:
        """Shows an `OpRow`: the op table by op over all devices, with that row selected."""
        if isinstance(target, OpRow):
            self.set_device("all")
            self.set_grouping("op")
            self.select_table_row(target.row)

    def set_device(self, which: str | int) -> None:
        """Selects "all" or a device position, as the device picker does."""
        found = self.device_combo.findData(which)
        if found >= 0:
            self.device_combo.setCurrentIndex(found)

    def set_grouping(self, by: str) -> None:
        self.grouping_combo.setCurrentIndex(GROUPINGS.index(by))

    def select_table_row(self, table_row: int) -> None:
        """Selects the row of the OpTable (not the view position), e.g. from a chart click; while the
        table is still being computed, once it arrives."""
        if self._shown != self._awaited():
            self._pending_row = table_row
            return
        view_row = self.model.view_row_of(table_row)
        if view_row is not None:
            self.table_view.selectRow(view_row)

    def next_occurrence(self) -> None:
        self._step_occurrence(+1)

    def previous_occurrence(self) -> None:
        self._step_occurrence(-1)

    def zoom_to_step(self, position: int) -> None:
        """Asks the timeline to show step `position` (0-based, in the step chart's order)."""
        if self._breakdown is None or not 0 <= position < len(self._breakdown):
            return
        self.zoomRequested.emit(
            int(self._breakdown.start_ps[position]), int(self._breakdown.end_ps[position])
        )

    # --- recomputation --------------------------------------------------------------------------
    def _chosen_device(self) -> DeviceChoice:
        which = self.device_combo.currentData()
        return "all" if which is None else which

    def _awaited(self) -> tuple[str, DeviceChoice]:
        """The (grouping, device) whose table the pickers ask for now."""
        return self.grouping_combo.currentData(), self._chosen_device()

    def _recompute(self) -> None:
        """Asks for the chosen devices' step breakdown and op table (the pickers changed)."""
        if self._devices is None:
            return  # not shown yet, or the device list is on its way: it calls back
        device = self._chosen_device()
        self.hub.request(step_breakdown_result(device), lambda b, d=device: self._show_breakdown(d, b))
        self._regroup()

    def _regroup(self) -> None:
        if self._devices is None:
            return
        by, device = self._awaited()
        self.hub.request(op_table_result(by, device), lambda t, k=(by, device): self._show_table(k, t))

    def _show_breakdown(self, device: DeviceChoice, breakdown: StepBreakdown | None) -> None:
        if device != self._chosen_device():
            return  # the user picked another device meanwhile
        self._breakdown = breakdown
        self._draw_steps()
        self._update_summary()

    def _show_table(self, key: tuple[str, DeviceChoice], table: OpTable | None) -> None:
        if key != self._awaited():
            return  # answers a pick the user has changed since
        self._shown = key
        self._table = table
        self.model.set_table(self._table)
        self.table_view.horizontalHeader().setSortIndicator(6, Qt.SortOrder.DescendingOrder)
        self._fit_columns()
        QTimer.singleShot(0, self, self._fit_columns)  # again once the view has its final size
        self._clear_occurrences()
        self._draw_bars()
        self._update_summary()
        if self._pending_row is not None:
            row, self._pending_row = self._pending_row, None
            self.select_table_row(row)
        self.tableReady.emit(table)

    def _fit_columns(self) -> None:
        """Sizes the columns to their rows, giving the numbers their full width first."""
        if self.model.rowCount() == 0:
            return
        header = self.table_view.horizontalHeader()
        header.setStretchLastSection(False)  # measure the last column too, not the space left over
        self.table_view.resizeColumnsToContents()
        text = range(OpsTableModel.TEXT_COLUMNS)
        widths = [min(header.sectionSize(c), cap) for c, cap in zip(text, TEXT_COLUMN_CAPS_PX, strict=True)]
        numbers = sum(header.sectionSize(c) for c in range(len(text), self.model.columnCount()))
        excess = sum(widths) + numbers - self.table_view.viewport().width()
        for column in TEXT_COLUMNS_GIVING_WAY:
            if excess <= 0:
                break
            give = min(excess, max(widths[column] - TEXT_COLUMN_FLOOR_PX, 0))
            widths[column] -= give
            excess -= give
        for column, width in zip(text, widths, strict=True):
            header.resizeSection(column, width)
        header.setStretchLastSection(True)

    def _update_summary(self) -> None:
        if self._trace is None:
            self.summary_label.setText("No profile loaded.")
            return
        if self._shown is None:
            self.summary_label.setText("Computing the op breakdown…")
            return
        if self._table is None:
            self.summary_label.setText(
                "This profile holds no device ops (no TPU XLA Ops, GPU kernels or XLA:CPU thunks)."
            )
            return
        parts = [f"{len(self._table):,} rows", f"{int(self._table.occurrences.sum()):,} op events"]
        n = max(len(self._table.devices), 1)
        parts.append(f"busy {format_duration(self._table.busy_ps / n)} per device")
        if self._breakdown is not None:
            parts.append(f"duty cycle {self._breakdown.duty_cycle * 100:.1f}%")
            if len(self._breakdown):
                parts.append(f"{len(self._breakdown)} steps ({self._breakdown.steps.description})")
        if self._table.peaks is not None:
            p = self._table.peaks
            parts.append(f"roofline {p.teraflops_per_second:g} TFLOP/s, {p.hbm_gigabytes_per_second:g} GB/s")
        self.summary_label.setText(" · ".join(parts))

    # --- charts ---------------------------------------------------------------------------------
    def _draw_bars(self) -> None:
        self.bar_plot.clear()
        self._bar_rows = np.empty(0, dtype=np.int64)
        table = self._table
        if table is None or len(table) == 0:
            return
        rows = np.arange(min(TOP_N_BARS, len(table)))  # the table is in self-time order
        self._bar_rows = rows
        y = np.arange(len(rows))[::-1].astype(float)  # largest on top
        bars = pg.BarGraphItem(x0=0, y=y, height=0.7, width=table.self_ps[rows] / 1e12, brush=BUSY_COLOR)
        self.bar_plot.addItem(bars)
        names = [table.label(i) for i in table.name[rows]]
        if len(set(names)) < len(names):  # the same op name in several programs: say which
            names = [
                f"{n} · {table.label(p)}" if p else n for n, p in zip(names, table.program[rows], strict=True)
            ]
        cut = BAR_LABEL_CHARS
        ticks = [
            (float(yy), n if len(n) <= cut else n[: cut - 1] + "…") for yy, n in zip(y, names, strict=True)
        ]
        self.bar_plot.getAxis("left").setTicks([ticks])
        self.bar_plot.setYRange(-0.6, len(rows) - 0.4, padding=0)
        self.bar_plot.setXRange(0, float(table.self_ps[0]) / 1e12 * 1.05, padding=0)

    def _draw_steps(self) -> None:
        self.step_plot.clear()
        b = self._breakdown
        if b is None or len(b) == 0:
            self.step_plot.setTitle("Per step: no steps found in this profile", color="k")
            self.step_plot.setLabel("bottom", "step")
            return
        self.step_plot.setTitle(STEP_TITLE, color="k")
        self.step_plot.setLabel("bottom", STEP_AXIS_LABEL)
        x = np.arange(len(b), dtype=float)
        busy, idle = b.busy_ps / 1e12, b.idle_ps / 1e12
        self.step_plot.addItem(pg.BarGraphItem(x=x, height=busy, width=0.8, brush=BUSY_COLOR, name="busy"))
        self.step_plot.addItem(
            pg.BarGraphItem(x=x, y0=busy, height=idle, width=0.8, brush=IDLE_COLOR, name="idle")
        )
        self.step_plot.setXRange(-0.6, len(b) - 0.4, padding=0)
        self.step_plot.setYRange(0, float((busy + idle).max()) * 1.05 or 1.0, padding=0)

    def _on_step_plot_clicked(self, event) -> None:
        if not event.double() or self._breakdown is None:
            return
        point = self.step_plot.getPlotItem().vb.mapSceneToView(event.scenePos())
        position = int(round(point.x()))
        if 0 <= position < len(self._breakdown) and abs(point.x() - position) <= 0.4:
            self.zoom_to_step(position)
            event.accept()

    def _on_bar_plot_clicked(self, event) -> None:
        if self._table is None or len(self._bar_rows) == 0:
            return
        point = self.bar_plot.getPlotItem().vb.mapSceneToView(event.scenePos())
        bar = len(self._bar_rows) - 1 - int(round(point.y()))
        if 0 <= bar < len(self._bar_rows):
            self.select_table_row(int(self._bar_rows[bar]))

    # --- selection and stepping through occurrences --------------------------------------------
    def _on_selection_changed(self, *_args) -> None:
        selected = self.table_view.selectionModel().selectedRows()
        if not selected or self._table is None:
            self._clear_occurrences()
            return
        table_row = self.model.table_row(selected[0].row())
        if table_row == self._selected_table_row:
            return  # the same op, moved by sorting
        events = self._table.events_of_row(table_row)
        self._set_occurrences(events)
        self._selected_table_row = table_row
        self.highlightRequested.emit(events)

    def _set_occurrences(self, events) -> None:
        """Orders the row's events by start across tracks, for Previous/Next."""
        if events:
            starts = np.concatenate([t.start_ps[i] for t, i in events])
            ends = np.concatenate([t.end_ps[i] for t, i in events])
        else:
            starts = ends = np.empty(0, dtype=np.int64)
        order = np.argsort(starts, kind="stable")
        self._occurrence_starts, self._occurrence_ends = starts[order], ends[order]
        self._cursor = -1
        self._selected_table_row = -1
        self._update_stepping()

    def _clear_occurrences(self) -> None:
        self._set_occurrences([])

    def _step_occurrence(self, delta: int) -> None:
        count = len(self._occurrence_starts)
        if count == 0:
            return
        self._cursor = (
            (self._cursor + delta) % count if self._cursor >= 0 else (0 if delta > 0 else count - 1)
        )
        t0, t1 = int(self._occurrence_starts[self._cursor]), int(self._occurrence_ends[self._cursor])
        margin = max(int((t1 - t0) * ZOOM_MARGIN_FRACTION), 1000)
        self._update_stepping()
        self.zoomRequested.emit(t0 - margin, t1 + margin)

    def _update_stepping(self) -> None:
        count = len(self._occurrence_starts)
        self.previous_button.setEnabled(count > 0)
        self.next_button.setEnabled(count > 0)
        if count == 0:
            self.occurrence_label.setText("select a row to step through its events")
        elif self._cursor < 0:
            self.occurrence_label.setText(f"{count:,} events")
        else:
            self.occurrence_label.setText(f"{self._cursor + 1:,} of {count:,}")
