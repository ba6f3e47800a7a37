"""The "Communication" view: does communication hide behind compute?

A summary line (how much of the steps' communication compute overlapped, how much of step time the
rest costs), one stacked bar per step (exposed communication below in red, overlapped above in
green, the mean over the hosts; a click on a step shows it on the timeline), and the collective ops
with their count, bytes, time, exposed and overlapped time, bandwidths and source line, most
exposed first (clicking one outlines its events on the timeline and shows its first occurrence).
Every number is the `CommsReport` `tpuscope comms` prints (`tpuscope.analysis.pod.comms_report`).
"""

from __future__ import annotations

import re

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSplitter, QTableWidget, QVBoxLayout, QWidget

from tpuscope.analysis.pod.comms import CollectiveRow
from tpuscope.analysis.pod.comms_report import COMMS, EXPOSED_INTERVALS, CommsReport
from tpuscope.model import order_statistics
from tpuscope.model.trace import Trace, Track
from tpuscope.model.units import format_bytes, format_duration, format_duration_column, format_percent_value
from tpuscope.ui.analysis_hub import AnalysisHub
from tpuscope.ui.timeline.query_tracks import QueryTrack, make_query_track
from tpuscope.ui.views import View
from tpuscope.ui.widgets.chart_hits import BarHits
from tpuscope.ui.widgets.charts import make_chart
from tpuscope.ui.widgets.tables import SortableItem, style_list_table

EXPOSED_COLOR = QColor(214, 39, 40)
OVERLAPPED_COLOR = QColor(44, 160, 44)
BAR_HALF_WIDTH = 0.4
LEGEND_HEADROOM = 1.3  # the y axis reaches this factor of the tallest bar, leaving the legend room
COLUMNS = ("Op", "Kind", "Count", "Bytes/op", "Time", "Exposed", "Overlapped", "algbw GB/s", "busbw GB/s",
           "Source")  # fmt: skip
NAME_COLUMN = 0
EXPOSED_COLUMN = 5
PS_PER_US = 1e6
NO_COLLECTIVES = "No collectives: no device (or host) spent time in a collective in this profile."


class CommsView(View):
    """Exposed vs overlapped communication per step, and the collective ops (module docstring)."""

    def __init__(self, hub: AnalysisHub | None = None, parent: QWidget | None = None) -> None:
        super().__init__(hub, parent)
        self.report: CommsReport | None = None
        self.trace: Trace | None = None
        self._build()
        self.follow_trace(self._on_trace)
        self.subscribe_when_shown(COMMS, self._show)

    def _build(self) -> None:
        self.summary = QLabel("No profile loaded.")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.chart = make_chart("Communication per step (mean over hosts): exposed and overlapped")
        self.chart.setLabel("left", "ms")
        self.chart.setLabel("bottom", "step")
        self.chart.getPlotItem().setMenuEnabled(False)
        self.chart.getAxis("left").enableAutoSIPrefix(False)
        self.chart.setMouseEnabled(x=False, y=False)
        self.legend = self.chart.addLegend(offset=(-10, 10))
        self.hits = BarHits(self.chart, self._step_picked, tooltip=self._step_tooltip)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        style_list_table(self.table)
        self.table.setSortingEnabled(True)
        self.table.itemSelectionChanged.connect(self._row_picked)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.chart)
        splitter.addWidget(self.table)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 1)
        self.pin_button = QPushButton("Show exposed time on the timeline")
        self.pin_button.setToolTip(
            "Pins one track per device on the timeline: where it was inside a collective and ran nothing else"
        )
        self.pin_button.clicked.connect(self.pin_exposed)
        self.pin_button.setEnabled(False)
        top = QHBoxLayout()
        top.addWidget(self.summary, 1)
        top.addWidget(self.pin_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(splitter, 1)

    def _on_trace(self, trace: Trace | None) -> None:
        self.trace = trace
        self.report = None
        self.chart.clear()
        self.legend.clear()
        self.hits.clear()
        self.table.setRowCount(0)
        self.chart.setVisible(True)
        self.pin_button.setEnabled(False)
        self.summary.setText("No profile loaded." if trace is None else "Measuring communication\u2026")

    # ----- showing the report ------------------------------------------------------------------------

    def _show(self, report: CommsReport | None) -> None:
        self.report = report
        if report is None or (not report.rows and report.communication_total_ps <= 0):
            self.summary.setText(
                "No collectives: no device (or host) spent time in a collective in this profile."
            )
            return
        self.summary.setText(self._summary_text(report))
        self.pin_button.setEnabled(report.exposed_total_ps > 0 or any(r.exposed_ps > 0 for r in report.rows))
        # No communication inside the steps (the ops ran before or after them): no chart of zeros.
        self.chart.setVisible(report.communication_total_ps > 0)
        if report.communication_total_ps > 0:
            self._draw_steps(report)
        self._fill_table(report.rows)

    @staticmethod
    def _summary_text(report: CommsReport) -> str:
        s = report.summary()
        if not s["steps"]:
            return "No steps: the collective ops below are over the whole profile."
        if not s["communication_us"]:
            return (
                f"No communication inside the {s['steps']} steps: the collective ops below ran outside "
                "them (their times are over the whole profile)."
            )
        overlap = s["overlap_percent"]
        exposed_share = s["exposed_percent_of_step_time"]
        hosts = "" if s["hosts"] == 1 else f" on {s['hosts']} hosts (summed)"
        text = (
            f"{format_duration(s['communication_us'] * PS_PER_US)} of communication in {s['steps']} steps"
            f"{hosts}: "
            f"{format_percent_value(overlap) if overlap is not None else '-'} overlapped with compute, "
            f"{format_duration(s['exposed_us'] * PS_PER_US)} exposed"
            f" ({format_percent_value(exposed_share) if exposed_share is not None else '-'} of step time)."
        )
        if s["waits_least"]:
            text += (
                f" {s['waits_least']} waits least in collectives (the others wait for it when it is late)."
            )
        return text

    def _draw_steps(self, report: CommsReport) -> None:
        rows = report.per_step()
        if not rows:
            return
        x = np.arange(len(rows), dtype=np.float64)
        exposed = np.array([r["exposed_us"] for r in rows]) / 1e3
        overlapped = np.array([r["overlapped_us"] for r in rows]) / 1e3
        width = 2 * BAR_HALF_WIDTH
        below = pg.BarGraphItem(x=x, height=exposed, width=width, brush=EXPOSED_COLOR, pen=pg.mkPen(None))
        above = pg.BarGraphItem(
            x=x, y0=exposed, height=overlapped, width=width, brush=OVERLAPPED_COLOR, pen=pg.mkPen(None)
        )
        self.chart.addItem(below)
        self.chart.addItem(above)
        self.legend.addItem(below, "exposed")
        self.legend.addItem(above, "overlapped")
        labels = [(float(k), str(r["step"])) for k, r in enumerate(rows)]
        shown = labels[:: max(1, len(labels) // 20)]  # about 20 labels, whatever the step count
        self.chart.getAxis("bottom").setTicks([shown, []])
        self.chart.setXRange(-0.6, len(rows) - 0.4, padding=0)
        # Headroom above the tallest bar for the legend (top right).
        self.chart.setYRange(0, max(float((exposed + overlapped).max()), 1e-6) * LEGEND_HEADROOM, padding=0)
        self.hits.set_bars(x, BAR_HALF_WIDTH)

    def _step_tooltip(self, position: int) -> str:
        if self.report is None:
            return ""
        row = self.report.per_step()[position]
        return (
            f"step {row['step']}: {row['communication_us'] / 1e3:,.3f} ms in collectives, "
            f"{row['exposed_us'] / 1e3:,.3f} ms exposed, {row['overlapped_us'] / 1e3:,.3f} ms overlapped "
            "(click: show it on the timeline)"
        )

    def _step_picked(self, position: int) -> None:
        if self.report is None or position >= len(self.report.step_start_ps):
            return
        self.zoomRequested.emit(
            int(self.report.step_start_ps[position]), int(self.report.step_end_ps[position])
        )

    def _fill_table(self, rows: list[CollectiveRow]) -> None:
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(rows))
        # Each time column in one unit (its median's), as every table shows durations.
        fields = ("time_ps", "exposed_ps", "overlapped_ps")
        times = [format_duration_column([getattr(r, f) for r in rows]) for f in fields]
        for k, row in enumerate(rows):
            r = row.to_json()
            cells = [
                SortableItem(r["name"]),
                SortableItem(r["kind"]),
                SortableItem(f"{r['count']:,}", r["count"]),
                SortableItem("-" if r["bytes_per_op"] is None else format_bytes(r["bytes_per_op"], ".1f"),
                             r["bytes_per_op"]),
                SortableItem(times[0][k], row.time_ps),
                SortableItem(times[1][k], row.exposed_ps),
                SortableItem(times[2][k], row.overlapped_ps),
                SortableItem(_gbps(r["algbw_gbps"]), r["algbw_gbps"]),
                SortableItem(_gbps(r["busbw_gbps"]), r["busbw_gbps"]),
                SortableItem(r["source"] or "-"),
            ]  # fmt: skip
            cells[NAME_COLUMN].setData(Qt.ItemDataRole.UserRole, k)
            cells[NAME_COLUMN].setToolTip(r["name"])
            for column, cell in enumerate(cells):
                if column not in (0, 1, 9):
                    cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(k, column, cell)
        self.table.setSortingEnabled(True)
        self.table.sortItems(EXPOSED_COLUMN, Qt.SortOrder.DescendingOrder)  # what costs the steps first
        self.table.resizeColumnsToContents()
        self.table.setColumnWidth(NAME_COLUMN, min(self.table.columnWidth(NAME_COLUMN), 320))

    # ----- to the timeline ------------------------------------------------------------------------------

    def _row_picked(self) -> None:
        items = self.table.selectedItems()
        if self.report is None or self.trace is None or not items:
            return
        cell = self.table.item(items[0].row(), NAME_COLUMN)
        if cell is None:
            return
        row = self.report.rows[int(cell.data(Qt.ItemDataRole.UserRole))]
        matches = events_of(self.trace, row.name)
        if not matches:
            return
        self.highlightRequested.emit(matches)
        track, idx = min(matches, key=lambda m: int(m[0].start_ps[m[1][0]]))
        first = int(idx[0])
        start = int(track.start_ps[first])
        self.zoomRequested.emit(start, start + max(int(track.duration_ps[first]), 1))
        self.eventPicked.emit(track, first)

    def pin_exposed(self) -> None:
        """Pins each device's exposed communication as a track on the timeline (queryTracksChanged)."""
        self.hub.request(EXPOSED_INTERVALS, self._pinned)

    def _pinned(self, per_device: list[tuple[str, np.ndarray, np.ndarray]]) -> None:
        self._pin(per_device)

    def _pin(self, per_device: list[tuple[str, np.ndarray, np.ndarray]]) -> list[QueryTrack]:
        what = "exposed communication"
        tracks = [
            make_query_track(
                f"Exposed: {label}", "tpuscope comms", starts, ends - starts, np.full(len(starts), what)
            )
            for label, starts, ends in per_device
            if len(starts)
        ]
        self.queryTracksChanged.emit(tracks)
        return tracks

    def select(self, target: object) -> None:
        """Selects the collective op named `target` (a string), if the table lists it."""
        if isinstance(target, str):
            for k in range(self.table.rowCount()):
                cell = self.table.item(k, NAME_COLUMN)
                if cell is not None and cell.text() == target:
                    self.table.selectRow(k)
                    return


def events_of(trace: Trace, name: str) -> list[tuple[Track, np.ndarray]]:
    """The events of the collective op shown as `name` (an HLO op printed whole on TPU, `%name = ...`,
    or a kernel with its signature), on every track, in start order per track."""
    pattern = rf"^%?{re.escape(name)}(\s=\s|\(|$)"
    ids = trace.strings.ids_matching(pattern, regex=True, ignore_case=False)
    if not len(ids):
        return []
    found = []
    for track in trace.tracks():
        if not len(track):
            continue
        hit = np.flatnonzero(order_statistics.isin(track.name_id, ids))
        if len(hit):
            found.append((track, hit))
    return found


def _gbps(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if value >= 10 else f"{value:.3g}"
