"""The "Diagnostics" view: integration problems found in the profile, worst first.

Left, the findings with severity icons; right, the selected finding's explanation, numbers,
advice and evidence. A loaded report shows its first finding's details and nothing more: only
the user's selection (a click, the keyboard, or the Overview's finding links) asks the timeline
to highlight a finding's evidence events (`highlightRequested`), as the Ops view does; clicking
an evidence line, or double-clicking a finding, asks it to zoom there (`zoomRequested`). The
main window connects both; this view knows no timeline.

The report is the shared one (`AnalysisHub`, computed once in a worker thread for this view and
the Overview alike); a report of a trace no longer shown is dropped by the hub.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, Qt, QUrl, Signal
from PySide6.QtGui import QFontMetrics, QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QLabel,
    QListView,
    QListWidget,
    QListWidgetItem,
    QSplitter,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from tpuscope.analysis.diagnose import Finding, Severity
from tpuscope.analysis.diagnose.finding import sentence_case
from tpuscope.analysis.facts.evidence import evidence_events
from tpuscope.analysis.session import REPORT
from tpuscope.model import units
from tpuscope.model.trace import Trace
from tpuscope.ui.analysis_hub import AnalysisHub
from tpuscope.ui.views import FindingAt, View
from tpuscope.ui.widgets.code_spans import code_spans_html, without_code_marks
from tpuscope.ui.widgets.severity import severity_icon

if TYPE_CHECKING:  # the engine loads in the worker that runs the rules
    from tpuscope.analysis.diagnose import Report

_EVIDENCE_SCHEME = "evidence"  # detail-pane links "evidence:<n>" zoom to evidence item n
# Evidence lines listed in the detail pane (all of them are highlighted on selection).
MAX_EVIDENCE_LINES = 25


class DiagnosticsView(View):
    """Findings list + detail pane. Signals carry timeline payloads, never widgets."""

    reportReady = Signal(object)  # the Report shown (tests and the status bar use it)

    def __init__(self, hub: AnalysisHub | None = None, parent: QWidget | None = None):
        super().__init__(hub, parent)
        self.trace: Trace | None = None
        self.report: Report | None = None
        self._pending: FindingAt | None = None  # selected before the report arrived

        self.summary = QLabel("Open a profile to diagnose it.")
        self.summary.setWordWrap(True)
        self.findings = QListWidget()
        self.findings.setAlternatingRowColors(True)
        # A long title wraps under the list's width instead of hiding behind a sideways scroll bar.
        self.findings.setWordWrap(True)
        self.findings.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.findings.setResizeMode(QListView.ResizeMode.Adjust)
        # Details follow the current row; highlights follow the selection, and only a selection
        # made outside `_show` (the user's, or the Overview's on the user's click) sends them.
        self._selecting_first = False
        self._highlighted_row: int | None = None
        self.findings.currentRowChanged.connect(self._on_current_changed)
        self.findings.itemSelectionChanged.connect(self._on_selection_changed)
        self.findings.itemClicked.connect(self._on_clicked)
        self.findings.itemDoubleClicked.connect(lambda _item: self._zoom_to_finding())
        self.detail = _DetailBrowser()
        self.detail.setOpenLinks(False)
        # The tables are laid out again for a new width, once the resize is over (queued: rendering
        # inside the resize event nested one page into another).
        self.detail.widthChanged.connect(self._on_current_changed, Qt.ConnectionType.QueuedConnection)
        self.detail.anchorClicked.connect(self._on_link)

        # What each rule looked at, collapsed under the findings: "No problems found" with its numbers.
        self.checked_toggle = QToolButton()
        self.checked_toggle.setCheckable(True)
        self.checked_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.checked_toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.checked_toggle.setAutoRaise(True)
        self.checked_toggle.setText("What was checked")
        self.checked_toggle.toggled.connect(self._on_checked_toggled)
        self.checked_list = QListWidget()
        self.checked_list.setWordWrap(True)
        self.checked_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.checked_list.setResizeMode(QListView.ResizeMode.Adjust)
        self.checked_list.setAlternatingRowColors(True)
        self.checked_list.setVisible(False)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.findings, 3)
        left_layout.addWidget(self.checked_toggle)
        left_layout.addWidget(self.checked_list, 2)

        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(self.detail)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addWidget(splitter, 1)
        self.follow_trace(self._on_trace)
        self.subscribe_when_shown(REPORT, self._show, self._on_failed)

    # -- input -------------------------------------------------------------------------------
    def _on_trace(self, trace: Trace | None) -> None:
        """A new trace: an empty list until its report arrives."""
        self.trace = trace
        self.report = None
        self._pending = None
        self._highlighted_row = None
        self.findings.clear()
        self.detail.clear()
        self._fill_checked(None)
        self.summary.setText("Open a profile to diagnose it." if trace is None else "Diagnosing…")

    def select(self, target: object) -> None:
        """Selects the finding a `FindingAt` names (as the user's click would: its evidence is outlined);
        before the report has arrived, once it does."""
        if not isinstance(target, FindingAt):
            return
        if self.report is None:
            self._pending = target
        elif 0 <= target.position < self.findings.count():
            self.findings.setCurrentRow(target.position)

    # -- results -----------------------------------------------------------------------------
    def _on_failed(self, error: Exception) -> None:
        self.summary.setText(f"Diagnosis failed: {type(error).__name__}: {error}")

    def _show(self, report: Report) -> None:
        self.report = report
        self._highlighted_row = None
        self.findings.clear()
        style = self.style()
        for finding in report.findings:
            item = QListWidgetItem(severity_icon(style, finding.severity), _list_text(finding))
            item.setToolTip(without_code_marks(f"{finding.severity.label}: {finding.id} · {_basis(finding)}"))
            self.findings.addItem(item)
        self.summary.setText(_summary_text(report))
        self._fill_checked(report)
        if report.findings:
            self._selecting_first = True  # shows its details; the timeline stays as the user left it
            try:
                self.findings.setCurrentRow(0)
            finally:
                self._selecting_first = False
        elif not report.completeness.complete:  # no all-clear on a part of the profile
            self.detail.setHtml(
                f"<p><b>{html.escape(report.completeness.no_problems())}.</b></p>"
                f"<p>Incomplete profile: {html.escape(report.completeness.reason)}.</p>"
                f"<p>{len(report.checked)} rules ran on what could be read: <i>What was checked</i>, under "
                "the list, says what each one looked at.</p>"
            )
        else:
            self.detail.setHtml(
                f"<p>No integration problems found in this profile. {len(report.checked)} rules ran: "
                "<i>What was checked</i>, under the list, says what each one looked at.</p>"
            )
        if self._pending is not None:
            pending, self._pending = self._pending, None
            self.select(pending)
        self.reportReady.emit(report)

    def _fill_checked(self, report: Report | None) -> None:
        self.checked_list.clear()
        entries = report.checked if report is not None else []
        for entry in entries:
            summary = entry["summary"] or "(no summary)"
            item = QListWidgetItem(without_code_marks(f"{entry['rule']}: {summary}"))
            item.setToolTip(without_code_marks(summary))
            self.checked_list.addItem(item)
        self.checked_toggle.setText(
            f"What was checked ({len(entries)} rules)" if entries else "What was checked"
        )
        self.checked_toggle.setEnabled(bool(entries))

    def _on_checked_toggled(self, shown: bool) -> None:
        self.checked_toggle.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        self.checked_list.setVisible(shown)

    @property
    def current_finding(self) -> Finding | None:
        row = self.findings.currentRow()
        if self.report is None or not 0 <= row < len(self.report.findings):
            return None
        return self.report.findings[row]

    def _on_current_changed(self, _row: int = 0) -> None:
        finding = self.current_finding
        if finding is not None:
            scroll = self.detail.verticalScrollBar().value()
            self.detail.setHtml(finding_html(finding, self.detail.width_chars()))
            self.detail.verticalScrollBar().setValue(scroll)

    def _on_selection_changed(self) -> None:
        # Qt changes the selection before the current row: read the row from the selection.
        selected = self.findings.selectedItems()
        if not self._selecting_first and selected:
            self._highlight(self.findings.row(selected[0]))

    def _on_clicked(self, item: QListWidgetItem) -> None:
        """A click on the finding `_show` selected by itself: the selection did not change."""
        row = self.findings.row(item)
        if self._highlighted_row != row:
            self._highlight(row)

    def _highlight(self, row: int) -> None:
        if self.report is None or self.trace is None or not 0 <= row < len(self.report.findings):
            return
        self._highlighted_row = row
        evidence = self.report.findings[row].evidence
        self.highlightRequested.emit(evidence_events(self.trace, evidence))
        # The finding's first event (for an op: its code) in the Details dock.
        first = evidence_events(self.trace, [e for e in evidence if e.get("event_index") is not None][:1])
        if first:
            self.eventPicked.emit(first[0][0], int(first[0][1][0]))

    def _zoom_to_finding(self) -> None:
        finding = self.current_finding
        if finding is None or not finding.evidence:
            return
        focus = next((e for e in finding.evidence if e.get("focus")), None)
        if focus is not None:  # the finding names where to look first (a straggler's slowest step)
            self._jump_to(focus)
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
        self._jump_to(item)

    def _jump_to(self, item: dict) -> None:
        """Zooms the timeline to an evidence item; its event is outlined and its track scrolled to."""
        matches = evidence_events(self.trace, [item]) if self.trace is not None else []
        if matches:
            self.highlightRequested.emit(matches)
        self.zoomRequested.emit(int(item["start_ps"]), max(int(item["end_ps"]), int(item["start_ps"]) + 1))
        if matches:
            self.trackRequested.emit(matches[0][0])


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
    text = f"<b>{html.escape(report.framework.name)}</b> · {code_spans_html(steps)} · {tally}"
    if report.rule_errors:
        text += f" · {len(report.rule_errors)} rule(s) could not run"
    if not report.completeness.complete:
        text += f" · <b>incomplete profile</b>: {html.escape(report.completeness.part_read())}"
    return text


def _list_text(finding: Finding) -> str:
    """The list's line: what the finding costs first (what users triage by), then its title."""
    cost = finding.impact.short() if finding.impact is not None else ""
    title = without_code_marks(finding.title)  # a plain list item: the code without its backticks
    return f"{cost} · {title}" if cost else title


def _basis(finding: Finding) -> str:
    """What the finding's cost measures, or why it has none."""
    return finding.impact.basis if finding.impact is not None else (finding.impact_note or "not measured")


def _cost_html(finding: Finding) -> str:
    """What the finding costs and what that measures; a finding with no measured cost says why once
    (its note is both its cost words and its basis: printed as both, it read twice)."""
    cost = f"<b>{code_spans_html(sentence_case(finding.cost_words))}</b>"
    if finding.impact is None:
        return f"<p>{cost}</p>"
    return f"<p>{cost}: {code_spans_html(finding.impact.basis)}</p>"


class _DetailBrowser(QTextBrowser):
    """The detail pane; says when its width or palette changes, so that its page is made again."""

    widthChanged = Signal()

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self.widthChanged.emit()

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # light/dark: the tables' colours follow
            self.widthChanged.emit()

    def width_chars(self) -> int:
        """How many characters of the tables' small font fit across the pane (digits, the widest)."""
        font = self.document().defaultFont()
        font.setPointSizeF(font.pointSizeF() * SMALL_FONT_SCALE)
        metrics = QFontMetrics(font)
        char_px = max(metrics.averageCharWidth(), metrics.horizontalAdvance("0"), 1)
        margins = 2 * int(self.document().documentMargin()) + self.verticalScrollBar().sizeHint().width()
        return max(MIN_TABLE_CHARS, (self.viewport().width() - margins) // char_px)


def finding_html(finding: Finding, width_chars: int | None = None) -> str:
    """The detail pane: title, explanation, numbers, advice, evidence links (code spans as <code>).

    With `width_chars` (how many characters fit across the pane), each table's long cells are cut to
    one line that fits, the full text in their tooltip, instead of wrapping into rows hundreds of
    pixels tall at laptop widths (issue 37)."""
    esc = html.escape
    code = code_spans_html
    out = [
        f"<h3>{code(finding.title)}</h3>",
        f"<p><i>{esc(finding.severity.label)}</i> · <code>{esc(finding.id)}</code></p>",
        _cost_html(finding),
        f"<p>{code(finding.explanation)}</p>",
    ]
    scalars = {k: v for k, v in finding.metrics.items() if not _is_records(v)}
    records = {k: v for k, v in finding.metrics.items() if _is_records(v)}
    if scalars:
        out.append("<h4>Numbers</h4><table cellspacing='0' cellpadding='2'>")
        for key, value in scalars.items():
            label, text = _labelled(key, value)
            label = _heading(label)
            out.append(
                f"<tr><td style='color:{_mixed(_MUTED_SHARE)}; padding-right:12px'>{esc(label)}</td>"
                f"<td><b>{text}</b></td></tr>"
            )
        out.append("</table>")
    for key, rows in records.items():
        out.append(f"<h4>{esc(_heading(_label(key)[0]))} ({len(rows)})</h4>")
        out.append(records_table_html(rows, width_chars))
    if finding.advice:
        out.append("<h4>What to do</h4><ul>")
        out.extend(f"<li>{code(a)}</li>" for a in finding.advice)
        out.append("</ul>")
    if finding.evidence:
        out.append(f"<h4>Evidence ({len(finding.evidence)}; click to zoom)</h4><ul>")
        for k, item in enumerate(finding.evidence[:MAX_EVIDENCE_LINES]):
            where = " / ".join(str(item[p]) for p in ("host", "plane", "track") if item.get(p))
            at = f"{int(item['start_ps']) / 1e9:.3f} ms"
            link = f"<a href='{_EVIDENCE_SCHEME}:{k}'>{code(str(item['label']))}</a>"
            out.append(f"<li>{link} at {at} <small>({esc(where)})</small></li>")
        out.append("</ul>")
    return "".join(out)


# -- metric formatting -------------------------------------------------------------------------
# Metric keys carry their unit as a suffix (finding.py: `compile_ms`, `percent_of_profile`);
# the pane moves the unit into the label or column header and formats the number to match.
# The tables' colours are the palette's text mixed into its base by these shares (our heuristic, as
# the old fixed light colours were), so that they read on a light and on a dark palette alike.
_MUTED_SHARE = 0.65
_HEADER_SHARE = 0.12
_STRIPE_SHARE = 0.05
_GRID_SHARE = 0.25


def _mixed(share: float) -> str:
    """The application palette's text colour mixed into its base colour, `share` of the way."""
    palette = QGuiApplication.palette()
    base, text = palette.color(QPalette.ColorRole.Base), palette.color(QPalette.ColorRole.Text)
    pairs = ((base.red(), text.red()), (base.green(), text.green()), (base.blue(), text.blue()))
    return "#" + "".join(f"{round(b + (t - b) * share):02x}" for b, t in pairs)


# Rows shown per table and items per list cell: metrics hold at most a few dozen.
MAX_TABLE_ROWS = 40
MAX_LIST_ITEMS = 12
# A list of strings longer than this (characters, joined) is shown one item per line.
INLINE_LIST_CHARS = 70
# Table cells whose lines are at most this long never wrap (names, step labels, short shapes);
# longer ones wrap between words, but never inside a shape such as f32[5,1024,1024,256].
NOWRAP_CHARS = 32
_WORD_JOINER = "\u2060"
# Column headers are broken into lines of about this many characters (between words).
HEADER_LINE_CHARS = 12
_BRACKETED = re.compile(r"\[[^\[\]]*\]")
# Qt's rich text sets font-size:small at 1/1.2 of the default size (QTextHtmlParser: "small" is one
# step below "medium", and each step is a factor of 1.2, as in CSS 2's font-size keywords).
SMALL_FONT_SCALE = 1 / 1.2
# A table is never squeezed below this many characters in all (our heuristic: two readable columns).
MIN_TABLE_CHARS = 40
# Characters each column costs besides its text: cell padding (3 px a side) and the border.
COLUMN_PADDING_CHARS = 2
# A cut cell keeps at least this many characters, so that what it names is still recognizable.
MIN_CELL_CHARS = 8
# The first column, the row's name, keeps up to this many characters before the others are cut
# (our heuristic: most op and function names are shorter).
FIRST_COLUMN_CHARS = 40
_ELLIPSIS = "\u2026"


def _is_records(value) -> bool:
    """A list of dicts: one table row per item."""
    return isinstance(value, (list, tuple)) and len(value) > 0 and all(isinstance(v, dict) for v in value)


def _label(key: str) -> tuple[str, str]:
    """(words, unit) of a metric key: `compile_ms` -> ('compile', 'ms'), `collective_ms_per_step` ->
    ('collective per step', 'ms'), `median_op_us` -> ('median op', 'µs'), `percent_of_profile` ->
    ('percent of profile', '%')."""
    words = key.replace("_", " ").strip()
    tokens = key.split("_")
    if key == "ms":
        return "time", "ms"
    for token, unit in (("ms", "ms"), ("us", "µs")):
        if token in tokens and len(tokens) > 1:
            return " ".join(t for t in tokens if t != token), unit
    if "percent" in key:
        return words, "%"
    return words, ""


# Words of metric keys that are abbreviations, as people write them (issue 37: "gb per s over the wait"
# read as "GB/s over the wait").
_ABBREVIATIONS = {
    "gb": "GB", "gib": "GiB", "mb": "MB", "mib": "MiB", "kb": "KB", "kib": "KiB", "hbm": "HBM", "tpu": "TPU",
    "gpu": "GPU", "cpu": "CPU", "xla": "XLA", "id": "ID", "ids": "IDs", "flop": "FLOP", "flops": "FLOPS",
}  # fmt: skip
_PER_SECOND = re.compile(r"\b(\S+) per s\b")


def _heading(words: str) -> str:
    """A metric's words as a sentence-case label: `gb per s over the wait` -> `GB/s over the wait`."""
    words = " ".join(_ABBREVIATIONS.get(word, word) for word in words.split())
    return sentence_case(_PER_SECOND.sub(r"\1/s", words))


def _with_unit(text: str, unit: str) -> str:
    """A formatted number (escaped HTML) followed by its unit; a percent sign kept on its line."""
    if not unit:
        return text
    return f"{text}&nbsp;%" if unit == "%" else f"{text} {html.escape(unit)}"


def _labelled(key: str, value) -> tuple[str, str]:
    """The label and the (escaped, HTML) value text of one scalar metric."""
    words, unit = _label(key)
    text = _value_html(value, key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = _with_unit(text, unit)
    return words, text


def format_number(value: float | int, key: str = "") -> str:
    """A metric number as people read it: `281.188` ms, `96.5` %, `0.273`, `12,345`; ids unchanged.

    Shares and times are rounded as everywhere else (issue 33: one rounding per unit): a share with
    `units.PERCENT_SPEC`'s one decimal, as the findings' titles and the cards show it; a time with the
    three decimals of `units.format_duration` (finding.ms rounds to 1 µs), so a column lines up."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value) if key.endswith("id") or key.endswith("_num") else f"{value:,}"
    if value != value:  # NaN
        return "–"
    magnitude = abs(value)
    if "percent" in key:
        return f"{value:{units.PERCENT_SPEC}}"
    if _label(key)[1] in ("ms", "µs"):
        return f"{value:{units.COLUMN_SPEC}}"
    if magnitude >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def _value_html(value, key: str = "") -> str:
    esc = html.escape
    if isinstance(value, (int, float)):
        return esc(format_number(value, key))
    if isinstance(value, dict):  # a number per name: the unit is the dict's (`waiting_for_ms`)
        unit = _label(key)[1]
        return ", ".join(
            f"{esc(str(k))}: "
            + (_with_unit(esc(_plain_text(v, key)), unit) if _is_quantity(v) else esc(_plain_text(v, str(k))))
            for k, v in list(value.items())[:8]
        )
    if _is_records(value):
        return "<br>".join(
            esc(", ".join(f"{k}: {_plain_text(v, k)}" for k, v in row.items())) for row in value
        )
    if isinstance(value, (list, tuple)):
        items = [_plain_text(v, key) for v in value[:MAX_LIST_ITEMS]]
        more = f" … ({len(value)} in all)" if len(value) > MAX_LIST_ITEMS else ""
        if sum(len(i) for i in items) <= INLINE_LIST_CHARS:
            return esc(", ".join(items) + more)
        return "<br>".join(f"• {esc(i)}" for i in items) + esc(more)
    return esc(str(value))


def _is_quantity(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _plain_text(value, key: str = "") -> str:
    if isinstance(value, (int, float)):
        return format_number(value, key)
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain_text(v, key) for v in value[:MAX_LIST_ITEMS])
    return str(value)


def _longest_line(value, key: str) -> int:
    """Characters in the longest line a cell shows (list items of long lists get a line each)."""
    if isinstance(value, (list, tuple)) and not _is_records(value):
        items = [_plain_text(v, key) for v in value[:MAX_LIST_ITEMS]]
        if sum(len(i) for i in items) > INLINE_LIST_CHARS:
            return max(len(i) for i in items)
    return len(_plain_text(value, key))


def _header_lines(header: str) -> list[str]:
    """A column header broken between words into lines of about HEADER_LINE_CHARS (never inside one)."""
    lines: list[str] = []
    for word in header.split():
        if lines and len(lines[-1]) + 1 + len(word) <= HEADER_LINE_CHARS:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _keep_shapes_whole(text: str) -> str:
    """Forbids line breaks after the commas inside [...] (Qt would otherwise split shapes)."""
    return _BRACKETED.sub(lambda m: m.group(0).replace(",", "," + _WORD_JOINER), text)


def _column_caps(natural: list[int], width_chars: int) -> list[int]:
    """The most characters each column may show so that the table fits `width_chars`: the widest
    columns are cut to one common cap (water-filling), the narrow ones keep their whole text."""
    budget = width_chars - COLUMN_PADDING_CHARS * len(natural)
    if sum(natural) <= budget:
        return natural
    # The first column names the row (a function, an op): it is the last to be cut.
    first = min(natural[0], FIRST_COLUMN_CHARS, max(budget // 2, MIN_CELL_CHARS))
    rest = natural[1:]
    cap = max(rest, default=MIN_CELL_CHARS)
    while cap > MIN_CELL_CHARS and first + sum(min(n, cap) for n in rest) > budget:
        cap -= 1
    return [first, *(min(n, cap) for n in rest)]


def _one_line(value, key: str) -> str:
    """A cell's text on one line (list items joined with commas)."""
    return " ".join(_plain_text(value, key).split())


def _cut_cell_html(value, key: str, cap: int) -> str:
    """A cell longer than `cap` characters: its first cap-1 characters and an ellipsis, on one line,
    with the whole text as its tooltip (Qt shows a span's title as the tooltip)."""
    full = _one_line(value, key)
    shown = full[: max(cap - 1, 1)].rstrip() + _ELLIPSIS
    return (
        f"<span title='{html.escape(full, quote=True)}' style='white-space:nowrap'>"
        f"{html.escape(shown)}</span>"
    )


def records_table_html(rows: list[dict], width_chars: int | None = None) -> str:
    """A list of dicts as a small grid: one row per item, one column per key (in first-seen order).

    With `width_chars`, a column whose cells are longer than its share of the width is cut to one
    line per cell (full text in the tooltip), so that the table fits and each row is one line tall."""
    esc = html.escape
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    numeric = {
        c: all(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in rows if c in r)
        for c in columns
    }
    caps: list[int] | None = None
    if width_chars is not None:
        shown = rows[:MAX_TABLE_ROWS]
        natural = [
            max([max((len(w) for w in _heading(_label(c)[0]).split()), default=1)]
                + [len(_one_line(r.get(c, ""), c)) for r in shown])
            for c in columns
        ]  # fmt: skip
        caps = _column_caps(natural, width_chars)
    out = [
        f"<table cellspacing='0' cellpadding='3' border='1' "
        f"style='border-collapse:collapse; border-color:{_mixed(_GRID_SHARE)}; margin-bottom:6px; "
        "font-size:small'>",
        f"<tr style='background:{_mixed(_HEADER_SHARE)}'>",
    ]
    for column in columns:
        words, unit = _label(column)
        words = _heading(words)
        header = f"{words} ({unit})" if unit and numeric[column] else words
        align = "right" if numeric[column] else "left"
        lines = "<br>".join(esc(line) for line in _header_lines(header))
        out.append(f"<th align='{align}' valign='bottom' style='white-space:nowrap'>{lines}</th>")
    out.append("</tr>")
    stripe_color = _mixed(_STRIPE_SHARE)
    for k, row in enumerate(rows[:MAX_TABLE_ROWS]):
        stripe = f" style='background:{stripe_color}'" if k % 2 else ""
        out.append(f"<tr{stripe}>")
        for c, column in enumerate(columns):
            value = row.get(column, "")
            align = "right" if numeric[column] else "left"
            if caps is not None and not numeric[column]:  # one line each: cut to fit, or whole
                line = _one_line(value, column)
                cell = _cut_cell_html(value, column, caps[c]) if len(line) > caps[c] else html.escape(line)
                out.append(f"<td align='{align}' valign='top' style='white-space:nowrap'>{cell}</td>")
                continue
            text = _value_html(value, column)
            nowrap = " style='white-space:nowrap'" if _longest_line(value, column) <= NOWRAP_CHARS else ""
            out.append(f"<td align='{align}' valign='top'{nowrap}>{_keep_shapes_whole(text)}</td>")
        out.append("</tr>")
    out.append("</table>")
    if len(rows) > MAX_TABLE_ROWS:
        out.append(f"<p><small>… {len(rows) - MAX_TABLE_ROWS} more rows</small></p>")
    return "".join(out)
