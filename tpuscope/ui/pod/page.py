"""The pod page: a run of many hosts before any host's events are loaded.

It shows what the host-by-host summaries say (`pod_open.PodResult`): the pod's findings (the late
host, collective-bound steps) and each host's own, the host x step heat map and the sortable
per-host rows (`pod_heatmap.PodPanel`), and a host picker. Opening a host (double-click a row or a
finding, click a cell, or pick it and press Open) is asked for with `hostRequested(host, item)`,
where `item` is the evidence item to show on that host's timeline in the host's own time (None:
just the host); the page itself never loads a trace.

The page is shown from the light pass (summaries: the rows, the heat map and the pod's own
findings, such as the late host); each host's own findings fill in as its full diagnosis comes in
(`refresh`), with a line saying how far that is and a Stop button (`stopRequested`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from tpuscope.model.hosts import natural_key
from tpuscope.model.units import format_duration
from tpuscope.ui.pod.heatmap import ROW_HEIGHT, PodPanel
from tpuscope.ui.pod.open_run import PodResult

HEATMAP_TARGET_PX = 640  # the heat map's height for many hosts: rows shrink to fit it...
MIN_ROW_HEIGHT = 8  # ...down to this many pixels per host, then the page scrolls
TABLE_ROWS_SHOWN = 12
FINDINGS_SHOWN = 5  # the findings list's height in rows (it scrolls beyond)
_MARK = {"critical": "\u2716", "warning": "\u26a0", "info": "\u2139"}
FINDING_ROLE = Qt.ItemDataRole.UserRole + 2


class PodPage(QWidget):
    """See the module docstring."""

    hostRequested = Signal(str, object)  # (host label, evidence item in the host's time or None)
    stopRequested = Signal()  # the user stops the background diagnosis

    def __init__(self, result: PodResult, parent: QWidget | None = None):
        super().__init__(parent)
        self.result = result
        hosts = result.hosts
        row_height = max(MIN_ROW_HEIGHT, min(ROW_HEIGHT, HEATMAP_TARGET_PX // max(len(hosts), 1)))
        self.title = QLabel()
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.caption = QLabel()
        self.caption.setWordWrap(True)

        self.picker = QComboBox()
        self.picker.addItems(sorted(hosts, key=natural_key))
        self.picker.setMinimumContentsLength(16)
        self.open_button = QPushButton("Open host")
        self.open_button.setToolTip("load this host's events: its timeline, ops and diagnosis")
        self.open_button.clicked.connect(lambda: self.open_host(self.picker.currentText()))
        self.open_label = QLabel("No host is open.")
        picker_row = QHBoxLayout()
        picker_row.addWidget(QLabel("Host"))
        picker_row.addWidget(self.picker)
        picker_row.addWidget(self.open_button)
        picker_row.addSpacing(12)
        picker_row.addWidget(self.open_label, 1)

        self.diagnosis_label = QLabel()
        self.diagnosis_label.setWordWrap(True)
        self.stop_button = QPushButton("Stop diagnosis")
        self.stop_button.setToolTip("stop diagnosing the hosts: the summaries and the hosts done so far stay")
        self.stop_button.clicked.connect(self.stopRequested.emit)
        self.stop_button.hide()
        diagnosis_row = QHBoxLayout()
        diagnosis_row.addWidget(self.diagnosis_label, 1)
        diagnosis_row.addWidget(self.stop_button)

        self.findings_heading = _heading("Findings (double-click one to open its host there)")
        self.findings = QListWidget()
        self.findings.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.findings.setWordWrap(True)
        self.findings.itemDoubleClicked.connect(self._on_finding)
        self._fill_findings()

        self.panel = PodPanel(row_height=row_height, table_rows_shown=TABLE_ROWS_SHOWN)
        self.panel.stepRequested.connect(self._on_step)
        self.panel.table.itemDoubleClicked.connect(self._on_row)
        self.panel.set_pod(result.run.pod)

        content = QWidget()
        column = QVBoxLayout(content)
        column.setContentsMargins(16, 12, 16, 12)
        column.setSpacing(8)
        column.addWidget(self.title)
        column.addWidget(self.caption)
        column.addLayout(picker_row)
        column.addWidget(self.findings_heading)
        column.addLayout(diagnosis_row)
        column.addWidget(self.findings)
        column.addWidget(_heading("Hosts \u00d7 steps (double-click a row to open that host)"))
        column.addWidget(self.panel)
        column.addStretch(1)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(content)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)
        self._fill_header()

    # ----- filling -------------------------------------------------------------------------------

    def refresh(self) -> None:
        """The findings and header again, from the result's pod as it now stands."""
        self._fill_findings()
        self._fill_header()

    def show_diagnosis(self, state: str, where: str = "", error: str | None = None) -> None:
        """How far each host's full diagnosis is: "running" (on `where`), "done" or "stopped"."""
        result = self.result
        total = len(result.run.hosts)
        diagnosed = min(result.diagnosed_hosts, total)
        self.stop_button.setVisible(state == "running")
        if state == "done":
            text = f"Every host diagnosed ({total} of {total})."
        elif state == "stopped":
            reason = f" ({error.rstrip('.')})" if error else ""
            text = (
                f"Diagnosis stopped{reason}: {diagnosed} of {total} hosts diagnosed; the findings are "
                "the pod's and those hosts' own."
            )
        else:
            text = (
                f"Diagnosing each host in the background on {where}: {diagnosed} of {total} done. The "
                "findings below are the pod's and the diagnosed hosts' own; more come in."
            )
        self.diagnosis_label.setText(text)

    def _fill_header(self) -> None:
        run, result = self.result.run, self.result
        name = str(result.path).rstrip("/").rsplit("/", 1)[-1]
        self.title.setText(f"<b>Pod</b> {name}: {len(run.hosts)} hosts")
        pod = run.pod
        steps = f"{pod.step_count} steps aligned by {pod.alignment}" if pod.step_count else "no steps"
        rows = pod.rows()
        mean_step = sum(r.step_ps for r in rows) / len(rows) if rows else 0.0
        left_out = f"; {len(result.unreadable)} host file(s) could not be read" if result.unreadable else ""
        self.caption.setText(
            f"{steps}, mean step {format_duration(mean_step)}; {run.event_count:,} events summarized "
            f"host by host ({run.framework.name}){left_out}. No host's events are in memory: open a "
            "host to see its timeline, ops and diagnosis (one host at a time)."
        )

    def _fill_findings(self) -> None:
        self.findings.clear()
        # The pod's own findings (comparing hosts) first, then each host's, worst first.
        findings = sorted(self.result.run.findings(), key=lambda f: "host" in f)
        if not findings:
            total = len(self.result.run.hosts)
            diagnosed = min(self.result.diagnosed_hosts, total)
            # A host left out or cut short: no all-clear on the part of the pod that was read.
            complete = replace(self.result.run, unreadable=list(self.result.unreadable)).completeness()
            item = QListWidgetItem(
                f"No problems found so far: none between the hosts, none on the {diagnosed} of "
                f"{total} hosts diagnosed yet."
                if diagnosed < total
                else "No problems found on any host."
                if complete.complete
                else f"No problems found on the {total} hosts read ({complete.summary}: the rest not judged)."
            )
            item.setToolTip("" if complete.complete else f"Incomplete run: {complete.reason}.")
            self.findings.addItem(item)
        for finding in findings:
            item = QListWidgetItem(f"{_MARK.get(finding['severity'], '')}  {finding['title']}")
            item.setToolTip(finding.get("explanation", ""))
            item.setData(FINDING_ROLE, finding)
            self.findings.addItem(item)
        rows = min(max(len(findings), 1), FINDINGS_SHOWN)
        self.findings.setFixedHeight(rows * (self.fontMetrics().height() + 10) + 6)

    def set_open_host(self, host: str | None) -> None:
        """Says which host's events the other tabs show now."""
        shown = f"Open: {host} (the other tabs show this host)" if host else "No host is open."
        self.open_label.setText(shown)
        if host:
            self.picker.setCurrentText(host)

    # ----- opening hosts -------------------------------------------------------------------------

    def open_host(self, host: str, run_item: dict[str, Any] | None = None) -> None:
        """Asks for `host`, and for `run_item` (evidence in the run's time) on its timeline."""
        if not host or self.result.host(host) is None:
            return
        item = None
        if run_item is not None:
            offset = self.result.offset_ps(host)
            item = dict(run_item)
            for key in ("start_ps", "end_ps"):
                if item.get(key) is not None:
                    item[key] = int(item[key]) - offset
        self.hostRequested.emit(host, item)

    def _on_step(self, item: dict) -> None:
        self.open_host(str(item.get("host", "")), item)

    def _on_row(self, table_item) -> None:
        host_item = self.panel.table.item(table_item.row(), 0)
        if host_item is not None:
            self.open_host(host_item.text())

    def _on_finding(self, item: QListWidgetItem) -> None:
        finding = item.data(FINDING_ROLE)
        if not finding:
            return
        evidence = [e for e in finding.get("evidence", []) if e.get("host")]
        focus = next((e for e in evidence if e.get("focus")), evidence[0] if evidence else None)
        named = finding.get("metrics", {}).get("on_hosts") or [""]  # a finding grouped across hosts
        host = finding.get("host") or (focus or {}).get("host") or str(named[0])
        if focus is None:
            self.open_host(host)
        elif finding.get("host"):
            # A host's own finding: its evidence is in that host's time already.
            self.hostRequested.emit(host, dict(focus, host=host))
        else:
            self.open_host(host, focus)


def _heading(text: str) -> QLabel:
    label = QLabel(f"<b>{text}</b>")
    label.setTextFormat(Qt.TextFormat.RichText)
    return label
