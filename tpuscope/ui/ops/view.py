"""The "Ops" view: where device time goes, as a sortable table, a top-N bar chart and a per-step chart.

The table model (`tpuscope.ui.ops.table_model`) sits on the numpy columns of an `OpTable`; the
charts (`tpuscope.ui.ops.charts`) and the occurrence stepper (`tpuscope.ui.ops.stepper`) are
widgets of their own; this module puts them together and wires them to the pickers.

The view knows nothing about the timeline: it asks for highlights and zooms through signals that
the main window connects (`highlightRequested`, `zoomRequested`, `occurrenceShown`). Its op tables and step
breakdowns are the shared ones (`AnalysisHub`): computed once per trace, device and grouping, in a
worker thread, and only once the view is first shown (a hidden tab costs nothing).
"""

from __future__ import annotations

from functools import partial

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from tpuscope.analysis.device_ops import Device
from tpuscope.analysis.ops import GROUPINGS, OpTable
from tpuscope.analysis.session import DEVICES, DeviceChoice, op_table_result, step_breakdown_result
from tpuscope.analysis.step_breakdown import StepBreakdown
from tpuscope.model.trace import Trace
from tpuscope.model.units import format_duration, format_percent
from tpuscope.ui.analysis_hub import AnalysisHub
from tpuscope.ui.ops.charts import StepBreakdownChart, TopOpsChart
from tpuscope.ui.ops.stepper import Events, OccurrenceStepper
from tpuscope.ui.ops.table_model import SELF_TIME_COLUMN, OpsTableModel
from tpuscope.ui.views import OpGraphAt, OpRow, View
from tpuscope.ui.widgets.code_spans import code_spans_html
from tpuscope.ui.widgets.elide import ElidingDelegate

# Column widths follow the rows: each column fits the widest of its first rows (Qt measures only
# these, never 100k). The names come first (issue 23: `broad...ion.1` beside roomy number
# columns): the op name keeps its text's width up to a cap, and when the table is wider than the
# view the program, then the category give way, down to a floor; what is still too wide scrolls
# sideways. Text that does not fit is elided at the right, where names differ least (their
# start says what they are); the tooltip has the whole text. Users resize columns freely afterwards.
MEASURED_ROWS = 200
TEXT_COLUMN_CAPS_PX = (420, 180, 260)  # Name, Category, Program
TEXT_COLUMN_FLOOR_PX = 90
TEXT_COLUMNS_GIVING_WAY = (2, 1)  # program, then category; the op name keeps its width
TABLE_SHARE = 55  # of the height under the controls, in percent: the table over the charts


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
        self._selected_table_row = -1  # OpTable row whose events are being stepped through
        self._build()

    # --- construction -------------------------------------------------------------------------
    def _build(self) -> None:
        self.device_combo = QComboBox()
        # Its items come with each profile: sized to them then, not to the empty list it first showed.
        self.device_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.grouping_combo = QComboBox()
        for by in GROUPINGS:
            self.grouping_combo.addItem(f"by {by}", by)
        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("Filter ops, categories, programs…")
        self.filter_edit.setClearButtonEnabled(True)
        self.summary_label = QLabel("No profile loaded.")
        self.summary_label.setWordWrap(True)  # a long summary must not hold the whole view wide
        self.summary_label.setTextFormat(Qt.TextFormat.RichText)

        controls = QHBoxLayout()
        controls.addWidget(QLabel("Device:"))
        controls.addWidget(self.device_combo)
        controls.addWidget(self.grouping_combo)
        controls.addWidget(self.filter_edit, 1)

        self.model = OpsTableModel(self)
        self.table_view = QTableView()
        self.table_view.setModel(self.model)
        self.table_view.setSortingEnabled(True)
        self.table_view.horizontalHeader().setSortIndicator(SELF_TIME_COLUMN, Qt.SortOrder.DescendingOrder)
        self.table_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table_view.setAlternatingRowColors(True)
        self.table_view.setWordWrap(False)
        self.table_view.setTextElideMode(Qt.TextElideMode.ElideRight)
        # The label columns keep what tells names apart (a kernel's template tail); tooltips are whole.
        self._eliding = ElidingDelegate(self.table_view)
        for column in range(self.model.TEXT_COLUMNS):
            self.table_view.setItemDelegateForColumn(column, self._eliding)
        vertical = self.table_view.verticalHeader()
        vertical.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # never measure 100k rows
        vertical.setDefaultSectionSize(self.fontMetrics().height() + 6)
        vertical.hide()
        header = self.table_view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        header.setResizeContentsPrecision(MEASURED_ROWS)

        self.stepper = OccurrenceStepper()

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.table_view, 1)
        top_layout.addWidget(self.stepper)

        self.bar_plot = TopOpsChart()
        self.step_plot = StepBreakdownChart()
        self.bar_plot.rowPicked.connect(self.select_table_row)
        self.step_plot.stepPicked.connect(self.zoom_to_step)

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
        self.table_view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table_view.customContextMenuRequested.connect(self._row_menu)
        self.stepper.stepped.connect(self.occurrenceShown)  # Previous/Next stay in this tab
        self.follow_trace(self._on_trace)

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
        self.bar_plot.reset()
        self.step_plot.reset()
        self._stale = trace is not None
        self.summary_label.setText("No profile loaded." if trace is None else "Computing the op breakdown…")
        if self._stale and self.isVisible():
            self._refresh()

    def showEvent(self, event: QShowEvent) -> None:
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

    def outline_ops(self, names: set[str]) -> None:
        """Marks the rows of the named ops (a source line's, picked in the Source tab)."""
        self.model.set_outlined(names)

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
        self.stepper.next()

    def previous_occurrence(self) -> None:
        self.stepper.previous()

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
        self.hub.request(step_breakdown_result(device), partial(self._show_breakdown, device))
        self._regroup()

    def _regroup(self) -> None:
        if self._devices is None:
            return
        by, device = self._awaited()
        self.hub.request(op_table_result(by, device), partial(self._show_table, (by, device)))

    def _show_breakdown(self, device: DeviceChoice, breakdown: StepBreakdown | None) -> None:
        if device != self._chosen_device():
            return  # the user picked another device meanwhile
        self._breakdown = breakdown
        self.step_plot.show_breakdown(breakdown)
        self._update_summary()

    def _show_table(self, key: tuple[str, DeviceChoice], table: OpTable | None) -> None:
        if key != self._awaited():
            return  # answers a pick the user has changed since
        self._shown = key
        self._table = table
        self.model.set_table(self._table)
        self.table_view.horizontalHeader().setSortIndicator(SELF_TIME_COLUMN, Qt.SortOrder.DescendingOrder)
        self._fit_columns()
        QTimer.singleShot(0, self, self._fit_columns)  # again once the view has its final size
        self._clear_occurrences()
        self.bar_plot.show_table(table)
        self._update_summary()
        if self._pending_row is not None:
            row, self._pending_row = self._pending_row, None
            self.select_table_row(row)
        self.tableReady.emit(table)

    def _fit_columns(self) -> None:
        """Sizes the columns to their rows, the op names' first (see TEXT_COLUMN_CAPS_PX)."""
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
            parts.append(f"duty cycle {format_percent(self._breakdown.duty_cycle)} of the profile")
            if len(self._breakdown):
                parts.append(f"{len(self._breakdown)} steps ({self._breakdown.steps.description})")
        if self._table.peaks is not None:
            p = self._table.peaks
            parts.append(f"roofline {p.teraflops_per_second:g} TFLOP/s, {p.hbm_gigabytes_per_second:g} GB/s")
        self.summary_label.setText(code_spans_html(" · ".join(parts)))  # `jit_f(...)` as code

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
        if self._table.by == "op" and events:  # one of the op's events (its code) in the Details dock
            self.eventPicked.emit(events[0][0], int(events[0][1][0]))

    def graph_target(self, table_row: int) -> OpGraphAt | None:
        """The Graph view's target for a row of the table by op (None for other groupings)."""
        table = self._table
        if table is None or table.by != "op" or not len(table.first_event):
            return None
        program_ids = table.events.program_id
        program = int(program_ids[int(table.first_event[table_row])]) if len(program_ids) else None
        return OpGraphAt(table.label(table.name[table_row]), program or None)

    def _row_menu(self, position) -> None:
        """Right-click on a row by op: "Show in graph" opens the Graph view around that op."""
        index = self.table_view.indexAt(position)
        target = self.graph_target(self.model.table_row(index.row())) if index.isValid() else None
        if target is None:
            return
        menu = QMenu(self.table_view)
        menu.addAction("Show in graph", lambda: self.openRequested.emit("graph", target))
        menu.exec(self.table_view.viewport().mapToGlobal(position))

    def _set_occurrences(self, events: Events) -> None:
        """The row's events, for Previous/Next; no op is being stepped through until one is chosen."""
        self.stepper.set_events(events)
        self._selected_table_row = -1

    def _clear_occurrences(self) -> None:
        self._set_occurrences([])
