"""The pod panel of the Overview: a host x step heat map and sortable per-host rows.

Each cell of the heat map is one host in one (aligned) step, coloured by the chosen part of its
step time (time in collectives by default: the late host shows as the pale row among dark ones);
clicking a cell asks the timeline for that host's step (`stepRequested` with an evidence item, as
findings carry them). The table below has one row per host: step time, input wait, collective
wait, device compute, host work and its busiest op, sortable by any column.

The panel draws from `tpuscope.analysis.pod.PodAnalysis` only; it knows no other view.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QMouseEvent, QPainter, QPalette
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from tpuscope.analysis.pod.analysis import PodAnalysis
from tpuscope.model import units
from tpuscope.model.hosts import natural_key
from tpuscope.ui.widgets.chart_hits import BarSlots
from tpuscope.ui.widgets.tables import SortableItem, height_for_rows, style_list_table

# What the heat map can colour by: (key of PodAnalysis.matrix, words).
METRICS = (
    ("collective", "time in collectives"),
    ("step", "step time"),
    ("input", "waiting for input"),
    ("host", "host work and other idle"),
    ("compute", "device compute"),
)
# Table columns: (header, key of HostRow values or "busiest", tooltip).
COLUMNS = (
    ("Host", "name", "the host (one profile file of the run)"),
    ("Step time", "step", "mean step time over the aligned steps"),
    ("Input wait", "input", "devices idle while the host prepared the step, per step"),
    (
        "Collective wait",
        "collective",
        "time inside collectives per step: the others wait here for a late host",
    ),
    ("Compute", "compute", "device compute outside collectives per step"),
    ("Host work", "host", "devices idle while the host did other work, per step"),
    ("Busiest op", "busiest", "the non-collective op with the most device time on the host"),
)
LOW_COLOR = QColor(247, 251, 255)  # an empty cell: nearly white
HIGH_COLOR = QColor(8, 69, 148)  # the largest value: deep blue
CELL_MIN_WIDTH = 6  # px; below this the steps are drawn as thin columns without gaps
ROW_HEIGHT = 22
LABEL_GAP = 8
MAX_TABLE_ROWS_SHOWN = 8  # the table grows to this many rows, then scrolls


class HeatMap(QWidget):
    """Hosts down, steps across; a click on a cell emits `cellClicked(host_row, step_column)`."""

    cellClicked = Signal(int, int)

    def __init__(self, parent: QWidget | None = None, row_height: int = ROW_HEIGHT) -> None:
        super().__init__(parent)
        self.row_height = row_height
        self.hosts: list[str] = []
        self.steps: list[int] = []
        self.values = np.zeros((0, 0))
        self.what = ""
        self.setMouseTracking(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_values(self, hosts: list[str], steps: list[int], values: np.ndarray, what: str) -> None:
        self.hosts, self.steps, self.values, self.what = list(hosts), list(steps), np.asarray(values), what
        self.setFixedHeight(self._top() + self.row_height * max(len(self.hosts), 1) + 4)
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(600, self._top() + self.row_height * max(len(self.hosts), 1) + 4)

    def _top(self) -> int:
        return self.fontMetrics().height() + 6

    def _label_width(self) -> int:
        metrics = self.fontMetrics()
        return max((metrics.horizontalAdvance(h) for h in self.hosts), default=0) + LABEL_GAP

    def _cell_width(self) -> float:
        return (self.width() - self._label_width() - 2) / max(len(self.steps), 1)

    def cell_rect(self, row: int, column: int) -> QRect:
        width = self._cell_width()
        x0 = self._label_width() + column * width
        gap = 1 if width >= CELL_MIN_WIDTH else 0
        row_gap = 2 if self.row_height >= 12 else 1
        height = self.row_height - row_gap
        return QRect(int(x0), self._top() + row * self.row_height, max(int(width) - gap, 1), height)

    def cell_at(self, pos: QPoint) -> tuple[int, int] | None:
        """The (host row, step column) of the cell under `pos`, gaps between cells included; None
        off the grid."""
        rows = BarSlots.uniform(self._top(), self.row_height, len(self.hosts))
        columns = BarSlots.uniform(self._label_width(), self._cell_width(), len(self.steps))
        row, column = rows.bar_at(pos.y()), columns.bar_at(pos.x())
        if row is None or column is None:
            return None
        return row, column

    def color_of(self, value: float) -> QColor:
        top = float(self.values.max()) if self.values.size else 0.0
        t = 0.0 if top <= 0 else min(max(value / top, 0.0), 1.0)
        return QColor(
            round(LOW_COLOR.red() + t * (HIGH_COLOR.red() - LOW_COLOR.red())),
            round(LOW_COLOR.green() + t * (HIGH_COLOR.green() - LOW_COLOR.green())),
            round(LOW_COLOR.blue() + t * (HIGH_COLOR.blue() - LOW_COLOR.blue())),
        )

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        text = self.palette().color(QPalette.ColorRole.Text)
        painter.setPen(text)
        metrics = self.fontMetrics()
        label_width = self._label_width()
        # Rows lower than the text: every few hosts labelled, as many as fit without overlapping.
        every_row = max(1, int(np.ceil(metrics.height() / self.row_height)))
        for row in range(0, len(self.hosts), every_row):
            host = self.hosts[row]
            y = self._top() + row * self.row_height
            painter.drawText(
                QRect(
                    0,
                    y - (every_row - 1) * self.row_height // 2,
                    label_width - LABEL_GAP,
                    every_row * self.row_height,
                ),
                Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                host,
            )
        # Step numbers on top: as many as fit without overlapping.
        width = self._cell_width()
        every = max(1, int(np.ceil((metrics.horizontalAdvance("0000") + 4) / max(width, 1))))
        for column in range(0, len(self.steps), every):
            rect = self.cell_rect(0, column)
            painter.drawText(
                QRect(rect.x(), 0, max(rect.width(), 40), self._top() - 2),
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom,
                str(self.steps[column]),
            )
        painter.setPen(Qt.PenStyle.NoPen)
        for row in range(len(self.hosts)):
            for column in range(len(self.steps)):
                painter.fillRect(self.cell_rect(row, column), self.color_of(float(self.values[row, column])))
        painter.end()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        cell = self.cell_at(event.position().toPoint())
        if cell is None:
            QToolTip.hideText()
            return
        row, column = cell
        value = units.format_duration(float(self.values[row, column]))
        where = f"{self.hosts[row]}, step {self.steps[column]}"
        tip = f"{where}: {value} {self.what}\nclick to see it on the timeline"
        QToolTip.showText(event.globalPosition().toPoint(), tip, self)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        cell = self.cell_at(event.position().toPoint())
        if cell is not None and event.button() == Qt.MouseButton.LeftButton:
            self.cellClicked.emit(*cell)


class PodPanel(QWidget):
    """The heat map with its metric chooser, and the per-host table."""

    stepRequested = Signal(
        object
    )  # an evidence item {label, start_ps, end_ps, host, plane?, track?, event_index?}

    def __init__(
        self,
        parent: QWidget | None = None,
        row_height: int = ROW_HEIGHT,
        table_rows_shown: int = MAX_TABLE_ROWS_SHOWN,
    ) -> None:
        super().__init__(parent)
        self.pod: PodAnalysis | None = None
        self.table_rows_shown = table_rows_shown
        self.metric_choice = QComboBox()
        for key, words in METRICS:
            self.metric_choice.addItem(words, key)
        self.metric_choice.currentIndexChanged.connect(lambda _i: self._draw())
        self.caption = QLabel("")
        self.caption.setWordWrap(True)
        self.heatmap = HeatMap(row_height=row_height)
        self.heatmap.cellClicked.connect(self._on_cell)
        self.table = QTableWidget(0, len(COLUMNS))
        for k, (title, _, tip) in enumerate(COLUMNS):
            column_title = QTableWidgetItem(title)
            column_title.setToolTip(tip)
            self.table.setHorizontalHeaderItem(k, column_title)
        style_list_table(self.table)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(len(COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)
        self.table.setSortingEnabled(True)

        chooser = QHBoxLayout()
        chooser.addWidget(QLabel("Colour by"))
        chooser.addWidget(self.metric_choice)
        chooser.addSpacing(10)
        chooser.addWidget(self.caption, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addLayout(chooser)
        layout.addWidget(self.heatmap)
        layout.addWidget(self.table)

    def set_pod(self, pod: PodAnalysis | None) -> None:
        """Shows `pod`; the panel hides itself when there are fewer than two hosts with steps."""
        self.pod = pod
        shown = pod is not None and len(pod.hosts) >= 2 and pod.step_count > 0
        self.setVisible(shown)
        if not shown:
            return
        self._draw()
        self._fill_table()

    def set_metric(self, key: str) -> None:
        self.metric_choice.setCurrentIndex(max(self.metric_choice.findData(key), 0))

    def _draw(self) -> None:
        pod = self.pod
        if pod is None or pod.step_count == 0:
            return
        key = self.metric_choice.currentData()
        words = dict(METRICS)[key]
        values = pod.matrix(key)
        self.heatmap.set_values(pod.hosts, [int(n) for n in pod.step_number], values, words)
        darkest = units.format_duration(float(values.max()) if values.size else 0.0, units.SHORT_SPEC)
        self.caption.setText(
            f"{len(pod.hosts)} hosts × {pod.step_count} steps aligned by {pod.alignment}; white = 0, "
            f"darkest = {darkest} {words}; click a cell to see that host's step on the timeline"
        )

    def _fill_table(self) -> None:
        pod = self.pod
        assert pod is not None
        self.table.setSortingEnabled(False)
        rows = pod.rows()
        self.table.setRowCount(len(rows))

        def duration(row, key: str) -> float:
            return float(row.step_ps if key == "step" else row.parts_ps[key])

        # One unit per column (issue 33): no host's time in ms beside another's in us.
        column_units = {
            key: units.duration_column_unit([duration(row, key) for row in rows])
            for _, key, _ in COLUMNS
            if key not in ("name", "busiest")
        }
        host_order = {host: k for k, host in enumerate(sorted((row.host for row in rows), key=natural_key))}
        for r, row in enumerate(rows):
            for c, (_, key, _) in enumerate(COLUMNS):
                if key == "name":  # sorts in natural order: host2 before host10
                    item = SortableItem(row.host, float(host_order[row.host]))
                elif key == "busiest":
                    item = SortableItem(row.busiest_op or "–")
                    item.setToolTip(row.busiest_op)
                else:
                    value = duration(row, key)
                    item = SortableItem(units.format_duration_in(value, column_units[key]), value)
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)
        self.table.setSortingEnabled(True)
        self.table.sortItems(0, Qt.SortOrder.AscendingOrder)
        shown = min(len(rows), self.table_rows_shown)
        self.table.setFixedHeight(height_for_rows(self.table, shown))

    def step_item(self, host_row: int, step_column: int) -> dict | None:
        """The evidence item of host `host_row`'s aligned step `step_column` (what a click asks for)."""
        pod = self.pod
        if pod is None or not 0 <= host_row < len(pod.hosts) or not 0 <= step_column < pod.step_count:
            return None
        summary = pod.host_summaries[host_row]
        position = int(pod.positions[host_row, step_column])
        label = f"{summary.host}, step {int(pod.step_number[step_column])}"
        return summary.step_evidence(position, label)

    def _on_cell(self, host_row: int, step_column: int) -> None:
        item = self.step_item(host_row, step_column)
        if item is not None:
            self.stepRequested.emit(item)
