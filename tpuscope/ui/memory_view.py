"""The Memory tab: where each program's memory goes at its peak, and each allocator's memory over time.

Top: a program picker and the heap along the program's order (the compiler's plan, not time),
padded and unpadded, with the peak marked. Middle: the buffers live at that peak, sortable;
selecting one outlines the events of the HLO op that defines it on the timeline. Bottom: memory
in use over time per allocator, peaks marked; double-click a curve's peak region to see that
moment on the timeline. The figures come from the trace's shared memory report (`MEMORY_REPORT`,
computed once per trace off the UI thread by the window's analysis hub when the tab is first
shown), the same the CLI and the memory rules use.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tpuscope.analysis.memory.links import defining_op_events
from tpuscope.analysis.memory.over_time import AllocatorMemory
from tpuscope.analysis.memory.programs import ProgramMemory
from tpuscope.analysis.memory.report import MEMORY_REPORT, MemoryReport
from tpuscope.model.trace import Trace
from tpuscope.model.units import bytes_column_unit, format_bytes, format_bytes_in
from tpuscope.ui.analysis_hub import AnalysisHub
from tpuscope.ui.views import View
from tpuscope.ui.widgets.chart_hits import ChartMouse
from tpuscope.ui.widgets.charts import make_chart
from tpuscope.ui.widgets.tables import SortableItem

BUFFER_COLUMNS = (
    "Buffer",
    "Size",
    "Unpadded",
    "Padding",
    "Shape",
    "Defined by",
    "Op",
    "Category",
    "Framework op",
)
HEAP_COLOUR = "#1a57d6"
UNPADDED_COLOUR = "#7a8699"
PEAK_COLOUR = "#d62728"
ALLOCATOR_COLOURS = ("#1a57d6", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
GIB = float(1 << 30)
MIB = float(1 << 20)


def byte_scale(largest: float) -> tuple[float, str]:
    """Divisor and unit name for a chart whose values reach `largest` bytes."""
    return (GIB, "GiB") if largest >= GIB else (MIB, "MiB")


class MemoryView(View):
    def __init__(self, hub: AnalysisHub | None = None, parent: QWidget | None = None):
        super().__init__(hub, parent)
        self._trace: Trace | None = None
        self._report: MemoryReport | None = None

        self.program_combo = QComboBox()
        self.program_combo.setMinimumContentsLength(40)
        self.summary_label = QLabel("")
        self.summary_label.setWordWrap(True)
        self.summary_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Program:"))
        controls.addWidget(self.program_combo, 1)

        self.heap_plot = self._plot("Heap along the program order (the compiler's plan)", "program point")
        self.buffers = QTableWidget(0, len(BUFFER_COLUMNS))
        self.buffers.setHorizontalHeaderLabels(BUFFER_COLUMNS)
        self.buffers.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.buffers.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.buffers.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.buffers.setSortingEnabled(True)
        self.buffers.verticalHeader().setVisible(False)
        self.buffers.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.buffers.horizontalHeader().setStretchLastSection(True)
        self.buffers.setToolTip("Buffers live at the peak. Select one to outline the op that defines it.")
        self.time_plot = self._plot("Memory in use over time, per allocator (what the runtime saw)", "time")
        self.time_plot.setToolTip("Double-click to show that moment on the timeline.")
        ChartMouse(self.time_plot).on_click(self._on_time_plot_double_clicked, double=True)
        self.allocators_label = QLabel("")
        self.allocators_label.setWordWrap(True)

        upper = QSplitter(Qt.Orientation.Horizontal)
        upper.addWidget(self.heap_plot)
        upper.addWidget(self.buffers)
        upper.setSizes([1, 1])
        lower = QWidget()
        lower_layout = QVBoxLayout(lower)
        lower_layout.setContentsMargins(0, 0, 0, 0)
        lower_layout.addWidget(self.time_plot, 1)
        lower_layout.addWidget(self.allocators_label)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(upper)
        splitter.addWidget(lower)
        splitter.setSizes([55, 45])

        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.summary_label)
        layout.addWidget(splitter, 1)

        self.program_combo.currentIndexChanged.connect(lambda _: self._show_program())
        self.buffers.itemSelectionChanged.connect(self._on_buffer_selected)
        # Connected before the subscription, so that a new trace clears the view before its report
        # (at once when another view had it computed already) fills it.
        self.follow_trace(self._on_trace)
        self.subscribe_when_shown(MEMORY_REPORT, self._fill, self._on_failed)

    @staticmethod
    def _plot(title: str, bottom: str) -> pg.PlotWidget:
        plot = make_chart(title)
        plot.setLabel("bottom", bottom)
        plot.showGrid(x=True, y=True, alpha=0.2)
        return plot

    # --- public API -----------------------------------------------------------------------------
    def _on_trace(self, trace: Trace | None) -> None:
        """Clears the view for the hub's new trace, whose report the hub delivers to `_fill`."""
        self._trace = trace
        self._fill(None)
        if trace is not None:
            self.summary_label.setText("Reading the programs' buffer assignments\u2026")

    @property
    def report(self) -> MemoryReport | None:
        """The report shown (None until the hub has delivered the trace's)."""
        return self._report

    def current_program(self) -> ProgramMemory | None:
        report = self.report
        index = self.program_combo.currentIndex()
        if report is None or not 0 <= index < len(report.programs):
            return None
        return report.programs[index]

    def select_program(self, name: str, memory_space: int = 0) -> bool:
        report = self.report
        if report is None:
            return False
        for index, program in enumerate(report.programs):
            if program.name == name and program.memory_space == memory_space:
                self.program_combo.setCurrentIndex(index)
                return True
        return False

    def select_buffer_row(self, row: int) -> None:
        self.buffers.selectRow(row)

    # --- filling ------------------------------------------------------------------------------
    def _on_failed(self, error: Exception) -> None:
        self.summary_label.setText(f"The memory analysis failed: {type(error).__name__}: {error}")

    def _fill(self, report: MemoryReport | None) -> None:
        self._report = report
        self.program_combo.blockSignals(True)
        self.program_combo.clear()
        report = self._report
        if report is not None:
            for program in report.programs:
                self.program_combo.addItem(
                    f"{program.name}  [{program.memory_space_name}]  "
                    f"peak {format_bytes(program.peak_heap_bytes)}"
                )
            # The biggest HBM program first: the one that decides whether the model fits.
            hbm = [k for k, p in enumerate(report.programs) if p.memory_space == 0]
            if hbm:
                self.program_combo.setCurrentIndex(max(hbm, key=lambda k: report.programs[k].peak_heap_bytes))
        self.program_combo.setEnabled(bool(report and report.programs))
        self.program_combo.blockSignals(False)
        self._show_program()
        self._show_allocators()

    def _show_program(self) -> None:
        self.heap_plot.clear()
        self.buffers.setSortingEnabled(False)
        self.buffers.setRowCount(0)
        program = self.current_program()
        report = self._report
        if program is None:
            if report is None or not report.has_data:
                self.summary_label.setText("This profile has no memory data.")
            else:
                self.summary_label.setText("No compiled program in this profile carries a buffer assignment.")
            return
        self.summary_label.setText(_program_summary(program))
        self._draw_heap(program)
        self._fill_buffers(program)

    def _draw_heap(self, program: ProgramMemory) -> None:
        heap = program.heap_bytes.astype(np.float64)
        if not len(heap):
            heap = np.array([program.peak_heap_bytes, program.peak_heap_bytes], np.float64)
            unpadded = np.array([program.peak_unpadded_heap_bytes] * 2, np.float64)
        else:
            unpadded = program.unpadded_heap_bytes.astype(np.float64)
        scale, unit = byte_scale(float(heap.max()) if len(heap) else 0.0)
        x = np.arange(len(heap) + 1, dtype=np.float64)
        plot = self.heap_plot
        plot.setLabel("left", f"heap ({unit})")
        plot.addLegend(offset=(10, 10))
        plot.plot(x, heap / scale, stepMode="center", pen=pg.mkPen(HEAP_COLOUR, width=2),
                  fillLevel=0, brush=(26, 87, 214, 50), name="padded")  # fmt: skip
        if np.any(unpadded != heap):
            plot.plot(x, unpadded / scale, stepMode="center", pen=pg.mkPen(UNPADDED_COLOUR, width=1.5,
                      style=Qt.PenStyle.DashLine), name="unpadded")  # fmt: skip
        # heap[i] is the heap before event i; the event at peak_position raised it to the peak.
        reached = np.flatnonzero(heap >= program.peak_heap_bytes)
        peak_x = (int(reached[0]) if len(reached) else program.peak_position) + 0.5
        plot.addItem(
            pg.InfiniteLine(
                pos=peak_x, angle=90, pen=pg.mkPen(PEAK_COLOUR, width=1, style=Qt.PenStyle.DotLine)
            )
        )
        plot.plot([peak_x], [program.peak_heap_bytes / scale], pen=None, symbol="o", symbolSize=9,
                  symbolBrush=PEAK_COLOUR, name=f"peak {format_bytes(program.peak_heap_bytes)}")  # fmt: skip
        if program.capacity_bytes and program.peak_heap_bytes > 0.5 * program.capacity_bytes:
            plot.addItem(pg.InfiniteLine(pos=program.capacity_bytes / scale, angle=0,
                                         pen=pg.mkPen(PEAK_COLOUR, width=1), label="capacity"))  # fmt: skip

    def _fill_buffers(self, program: ProgramMemory) -> None:
        buffers = program.buffers_largest_first()
        self.buffers.setRowCount(len(buffers))
        # Each size column in one unit for all its rows (issue 33): no 512.00 MiB under 20.00 GiB.
        size_unit = bytes_column_unit([b.bytes for b in buffers])
        unpadded_unit = bytes_column_unit([b.unpadded_bytes for b in buffers])
        for row, buffer in enumerate(buffers):
            waste = buffer.bytes - buffer.unpadded_bytes
            waste_share = 100.0 * waste / buffer.bytes if buffer.bytes else 0.0
            cells = [
                SortableItem(buffer.name, row),
                SortableItem(format_bytes_in(buffer.bytes, size_unit), buffer.bytes),
                SortableItem(format_bytes_in(buffer.unpadded_bytes, unpadded_unit), buffer.unpadded_bytes),
                SortableItem(f"{waste_share:.0f}%" if waste > 0 else "", waste_share),
                QTableWidgetItem(buffer.shape),
                QTableWidgetItem(buffer.defined_by),
                QTableWidgetItem(buffer.op_code),
                QTableWidgetItem(buffer.category),
                QTableWidgetItem(buffer.framework_op),
            ]
            cells[0].setData(Qt.ItemDataRole.UserRole, row)
            for column, cell in enumerate(cells):
                if column in (1, 2, 3):
                    cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.buffers.setItem(row, column, cell)
        self.buffers.setSortingEnabled(True)
        self.buffers.resizeColumnsToContents()

    def _show_allocators(self) -> None:
        plot = self.time_plot
        plot.clear()
        report = self._report
        allocators = report.allocators if report is not None else []
        if not allocators:
            self.allocators_label.setText("No allocator events in this profile (JAX on the CPU writes none).")
            return
        largest = max(float(a.in_use.max()) for a in allocators if len(a.in_use))
        scale, unit = byte_scale(largest)
        plot.setLabel("left", f"in use ({unit})")
        plot.setLabel("bottom", "time (ms)")
        plot.addLegend(offset=(10, 10))
        lines = []
        for k, allocator in enumerate(allocators):
            colour = ALLOCATOR_COLOURS[k % len(ALLOCATOR_COLOURS)]
            t = allocator.time_ps / 1e9
            plot.plot(np.append(t, t[-1]), allocator.in_use / scale, stepMode="center",
                      pen=pg.mkPen(colour, width=1.5), name=f"allocator {allocator.id}")  # fmt: skip
            plot.plot([allocator.peak_time_ps / 1e9], [allocator.peak_in_profile_bytes / scale], pen=None,
                      symbol="o", symbolSize=8, symbolBrush=colour)  # fmt: skip
            lines.append(_allocator_line(allocator))
        self.allocators_label.setText("<br>".join(lines))

    # --- interaction --------------------------------------------------------------------------
    def _on_buffer_selected(self) -> None:
        program = self.current_program()
        rows = self.buffers.selectionModel().selectedRows() if self.buffers.selectionModel() else []
        if program is None or not rows or self._trace is None:
            return
        item = self.buffers.item(rows[0].row(), 0)
        if item is None:
            return
        buffer = program.buffers_largest_first()[int(item.data(Qt.ItemDataRole.UserRole))]
        matches = defining_op_events(self._trace, buffer.defined_by, program.program_id)
        self.highlightRequested.emit(matches)

    def _on_time_plot_double_clicked(self, point: QPointF) -> None:
        t_ps = float(point.x()) * 1e9
        half = 0.02 * max(float(self._trace.duration_ps) if self._trace is not None else 1.0, 1.0)
        self.zoomRequested.emit(t_ps - half, t_ps + half)


def _program_summary(program: ProgramMemory) -> str:
    peak = program.peak_heap_bytes
    share = ""
    if program.capacity_bytes:
        share = f" ({100 * peak / program.capacity_bytes:.1f}% of {format_bytes(program.capacity_bytes)})"
    padding = program.padding_bytes
    text = (
        f"<b>{program.name}</b> [{program.memory_space_name}]: peak <b>{format_bytes(peak)}</b>{share}, "
        f"unpadded {format_bytes(program.peak_unpadded_heap_bytes)}"
    )
    if padding:
        text += f" (padding {format_bytes(padding)})"
    if program.peak_instruction:
        text += f", reached at <i>{program.peak_instruction}</i>"
    text += (
        f". Parameters {format_bytes(program.parameter_bytes)}, "
        f"outputs {format_bytes(program.output_bytes)}, temporaries {format_bytes(program.temporary_bytes)}, "
        f"total allocation {format_bytes(program.total_allocation_bytes)}."
    )
    return text + "".join(f"<br>Note: {n}" for n in program.notes)


def _allocator_line(allocator: AllocatorMemory) -> str:
    share = ""
    if allocator.capacity_bytes:
        share = f" ({100 * allocator.peak_bytes_in_use / allocator.capacity_bytes:.1f}% of "
        share += f"{format_bytes(allocator.capacity_bytes)})"
    step = f" in step {allocator.peak_step}" if allocator.peak_step is not None else ""
    fragmentation = ""
    if np.isfinite(allocator.fragmentation_at_peak):
        fragmentation = f", fragmentation {allocator.fragmentation_at_peak:.2f}"
    return (
        f"<b>allocator {allocator.id}</b>: lifetime peak {format_bytes(allocator.peak_bytes_in_use)}{share}; "
        f"in this profile {format_bytes(allocator.peak_in_profile_bytes)} at "
        f"{allocator.peak_time_ps / 1e9:.3f} ms{step}{fragmentation}"
    )
