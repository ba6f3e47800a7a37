"""The "Diagnostics" view: integration problems found in the profile, worst first.

Left, the findings with severity icons; right, the selected finding's explanation, numbers,
advice and evidence. Selecting a finding asks the timeline to highlight its evidence events
(`highlightRequested`); clicking an evidence line, or double-clicking a finding, asks it to
zoom there (`zoomRequested`). The main window connects both; this view knows no timeline.

The rules run in a QThread: on large profiles they take long enough to freeze the window.
A newer `set_trace` supersedes an older run (its result is dropped when it arrives).
"""

from __future__ import annotations

import html

from PySide6.QtCore import QThread, QUrl, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QLabel,
    QListWidget,
    QListWidgetItem,
    QSplitter,
    QStyle,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from tpuscope.analysis.diagnose import Finding, Report, Severity, diagnose
from tpuscope.analysis.diagnose.finding import evidence_events
from tpuscope.model.trace import Trace

_ICONS = {
    Severity.CRITICAL: QStyle.StandardPixmap.SP_MessageBoxCritical,
    Severity.WARNING: QStyle.StandardPixmap.SP_MessageBoxWarning,
    Severity.INFO: QStyle.StandardPixmap.SP_MessageBoxInformation,
}
_EVIDENCE_SCHEME = "evidence"  # detail-pane links "evidence:<n>" zoom to evidence item n
# Evidence lines listed in the detail pane (all of them are highlighted on selection).
MAX_EVIDENCE_LINES = 25


class DiagnoseWorker(QThread):
    """Runs every diagnosis rule off the UI thread; `finished_report(generation, report)` when done."""

    finished_report = Signal(int, object)
    failed = Signal(int, str)

    def __init__(self, generation: int, trace: Trace, parent=None):
        super().__init__(parent)
        self.generation = generation
        self.trace = trace

    def run(self) -> None:
        try:
            report = diagnose(self.trace)
        except Exception as error:  # noqa: BLE001 - shown in the view instead of a traceback
            self.failed.emit(self.generation, f"Diagnosis failed: {type(error).__name__}: {error}")
            return
        self.finished_report.emit(self.generation, report)


class DiagnosticsView(QWidget):
    """Findings list + detail pane. Signals carry timeline payloads, never widgets."""

    highlightRequested = Signal(object)  # list[(Track, np.ndarray indices)]
    zoomRequested = Signal(object, object)  # t0_ps, t1_ps
    reportReady = Signal(object)  # the Report shown (tests and the status bar use it)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.trace: Trace | None = None
        self.report: Report | None = None
        self._generation = 0
        self._workers: set[DiagnoseWorker] = set()

        self.summary = QLabel("Open a profile to diagnose it.")
        self.summary.setWordWrap(True)
        self.findings = QListWidget()
        self.findings.setAlternatingRowColors(True)
        self.findings.currentRowChanged.connect(self._on_selected)
        self.findings.itemDoubleClicked.connect(lambda _item: self._zoom_to_finding())
        self.detail = QTextBrowser()
        self.detail.setOpenLinks(False)
        self.detail.anchorClicked.connect(self._on_link)

        splitter = QSplitter()
        splitter.addWidget(self.findings)
        splitter.addWidget(self.detail)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addWidget(splitter, 1)

    # -- input -------------------------------------------------------------------------------
    def set_trace(self, trace: Trace | None) -> None:
        """Diagnoses `trace` in the background; the list fills when the rules are done."""
        self._generation += 1
        self.trace = trace
        self.report = None
        self.findings.clear()
        self.detail.clear()
        if trace is None:
            self.summary.setText("Open a profile to diagnose it.")
            return
        self.summary.setText("Diagnosing…")
        worker = DiagnoseWorker(self._generation, trace, self)
        worker.finished_report.connect(self._on_report)
        worker.failed.connect(self._on_failed)
        worker.finished.connect(lambda w=worker: self._forget(w))
        self._workers.add(worker)
        worker.start()

    def set_report(self, trace: Trace, report: Report) -> None:
        """Shows an already computed report (no background run)."""
        self._generation += 1
        self.trace = trace
        self._show(report)

    def shutdown(self) -> None:
        """Waits for running diagnoses (call before the window closes)."""
        for worker in list(self._workers):
            worker.wait()

    # -- results -----------------------------------------------------------------------------
    def _forget(self, worker: DiagnoseWorker) -> None:
        self._workers.discard(worker)
        worker.deleteLater()

    def _on_report(self, generation: int, report: Report) -> None:
        if generation == self._generation:
            self._show(report)

    def _on_failed(self, generation: int, message: str) -> None:
        if generation == self._generation:
            self.summary.setText(message)

    def _show(self, report: Report) -> None:
        self.report = report
        self.findings.clear()
        style = self.style()
        for finding in report.findings:
            item = QListWidgetItem(QIcon(style.standardIcon(_ICONS[finding.severity])), finding.title)
            item.setToolTip(f"{finding.severity.label}: {finding.id}")
            self.findings.addItem(item)
        self.summary.setText(_summary_text(report))
        if report.findings:
            self.findings.setCurrentRow(0)
        else:
            self.detail.setHtml("<p>No integration problems found in this profile.</p>")
        self.reportReady.emit(report)

    @property
    def current_finding(self) -> Finding | None:
        row = self.findings.currentRow()
        if self.report is None or not 0 <= row < len(self.report.findings):
            return None
        return self.report.findings[row]

    def _on_selected(self, _row: int) -> None:
        finding = self.current_finding
        if finding is None:
            return
        self.detail.setHtml(finding_html(finding))
        if self.trace is not None:
            self.highlightRequested.emit(evidence_events(self.trace, finding.evidence))

    def _zoom_to_finding(self) -> None:
        finding = self.current_finding
        if finding is None or not finding.evidence:
            return
        t0 = min(int(e["start_ps"]) for e in finding.evidence)
        t1 = max(int(e["end_ps"]) for e in finding.evidence)
        self.zoomRequested.emit(t0, max(t1, t0 + 1))

    def _on_link(self, url: QUrl) -> None:
        finding = self.current_finding
        if finding is None or url.scheme() != _EVIDENCE_SCHEME:
            return
        try:
            item = finding.evidence[int(url.path())]
        except (ValueError, IndexError):
            return
        if self.trace is not None and item.get("event_index") is not None:
            self.highlightRequested.emit(evidence_events(self.trace, [item]))
        self.zoomRequested.emit(int(item["start_ps"]), max(int(item["end_ps"]), int(item["start_ps"]) + 1))


def _summary_text(report: Report) -> str:
    counts = {s: sum(f.severity == s for f in report.findings) for s in Severity}
    parts = [
        f"{counts[s]} {s.label}" for s in (Severity.CRITICAL, Severity.WARNING, Severity.INFO) if counts[s]
    ]
    steps = (
        f"{len(report.steps)} steps from {report.steps.description}"
        if len(report.steps)
        else "no steps found"
    )
    tally = ", ".join(parts) or "no findings"
    text = f"<b>{html.escape(report.framework.name)}</b> · {html.escape(steps)} · {tally}"
    if report.rule_errors:
        text += f" · {len(report.rule_errors)} rule(s) could not run"
    return text


def finding_html(finding: Finding) -> str:
    """The detail pane: title, explanation, numbers, advice, evidence links."""
    esc = html.escape
    out = [
        f"<h3>{esc(finding.title)}</h3>",
        f"<p><i>{esc(finding.severity.label)}</i> · <code>{esc(finding.id)}</code></p>",
        f"<p>{esc(finding.explanation)}</p>",
    ]
    if finding.metrics:
        out.append("<h4>Numbers</h4><table cellspacing='0' cellpadding='2'>")
        for key, value in finding.metrics.items():
            out.append(
                f"<tr><td>{esc(key.replace('_', ' '))}</td><td><b>{esc(_metric_text(value))}</b></td></tr>"
            )
        out.append("</table>")
    if finding.advice:
        out.append("<h4>What to do</h4><ul>")
        out.extend(f"<li>{esc(a)}</li>" for a in finding.advice)
        out.append("</ul>")
    if finding.evidence:
        out.append(f"<h4>Evidence ({len(finding.evidence)}; click to zoom)</h4><ul>")
        for k, item in enumerate(finding.evidence[:MAX_EVIDENCE_LINES]):
            where = " / ".join(str(item[p]) for p in ("host", "plane", "track") if item.get(p))
            at = f"{int(item['start_ps']) / 1e9:.3f} ms"
            link = f"<a href='{_EVIDENCE_SCHEME}:{k}'>{esc(item['label'])}</a>"
            out.append(f"<li>{link} at {at} <small>({esc(where)})</small></li>")
        out.append("</ul>")
    return "".join(out)


def _metric_text(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_metric_text(v)}" for k, v in list(value.items())[:8])
    if isinstance(value, (list, tuple)):
        shown = ", ".join(_metric_text(v) for v in value[:12])
        return shown + (f" … ({len(value)})" if len(value) > 12 else "")
    return str(value)
