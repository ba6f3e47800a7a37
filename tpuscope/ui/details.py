"""The details panel: everything known about the selected event, or a summary of a selected range.

For a device op it also shows the user's code behind it (`tpuscope.analysis.op_source`): the
framework op, the source line, the stack as Python prints a traceback, the op's HLO text and, for
a fusion, the instructions it fused. The programs' code is decoded in a worker thread (once per
trace, `PROGRAM_CODE`), so the event's times and stats show at once and its code a moment later.
"""

from __future__ import annotations

import html

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTextBrowser, QWidget

from tpuscope.analysis.area_pivot import AreaPivot
from tpuscope.analysis.op_source import OpDetails
from tpuscope.analysis.ops import op_details_of_event, short_op_name
from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.model.trace import Trace, Track
from tpuscope.model.units import SHORT_SPEC, format_duration
from tpuscope.ui.analysis_hub import AnalysisHub
from tpuscope.ui.jobs import LatestJobs
from tpuscope.ui.range_summary import PIVOT_LINK, SQL_LINK, range_pivot_html, range_pivot_sql
from tpuscope.ui.timeline.palette import short_name

DETAILS_MIN_WIDTH_PX = 300
FLOW_LABEL_CHARS = 80  # demangled kernel names run to kilobytes; the link shows their start
MAX_FLOW_LINKS = 20  # a launch has one kernel; an event with more flows lists the first ones
DETAILS_START_WIDTH_PX = 360  # room for stat names such as `raw_bytes_accessed` and 20-digit values
MAX_STAT_TEXT = 2000  # characters of one stat value shown (long HLO texts and source stacks)
MAX_FUSED_SHOWN = 200  # instructions of a fusion listed; a large fusion's rest is counted
GRAPH_LINK = "graph:"  # the "Show in graph" link of an op's code


def format_stat(name: str, value: object) -> str:
    """A stat value for people: bytes summarized, quantities grouped, *_ps also as a duration."""
    if isinstance(value, bytes):
        return f"<{len(value):,} bytes>"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        if name == "id" or name.endswith("_id"):
            return str(value)  # identifiers are not quantities: no digit grouping
        text = f"{value:,}"
        return f"{text}  ({format_duration(value, SHORT_SPEC)})" if name.endswith("_ps") else text
    if isinstance(value, float):
        return f"{value:.6g}"
    text = str(value)
    return text if len(text) <= MAX_STAT_TEXT else text[:MAX_STAT_TEXT] + "\u2026"


def code_html(details: OpDetails) -> str:
    """The code section of an op's details (module docstring)."""
    code = details.code
    rows = []
    if code.framework_op:
        rows.append(("Framework op", code.framework_op))
    if code.source:
        rows.append(("Source", code.source + (f"  in {code.function}" if code.function else "")))
    else:
        rows.append(("Source", "none recorded for this op"))
    if code.program_id is not None:
        rows.append(("Program", str(code.program_id)))
    parts = ["<p style='margin:8px 0 2px 0'><b>Code</b></p>", _table(rows)]
    if details.traceback:
        parts.append("<p style='margin:8px 0 2px 0'><b>Stack</b></p>")
        parts.append(f"<pre style='white-space:pre-wrap'>{html.escape(details.traceback)}</pre>")
    if code.hlo_text:
        parts.append("<p style='margin:8px 0 2px 0'><b>HLO</b></p>")
        parts.append(f"<pre style='white-space:pre-wrap'>{html.escape(format_stat('', code.hlo_text))}</pre>")
    if details.fused_texts:
        parts.append(
            f"<p style='margin:8px 0 2px 0'><b>Fused instructions ({len(details.fused_texts)})</b></p>"
        )
        fused = "\n".join(details.fused_texts[:MAX_FUSED_SHOWN])
        more = len(details.fused_texts) - MAX_FUSED_SHOWN
        fused += f"\n\u2026 and {more} more" if more > 0 else ""
        parts.append(f"<pre style='white-space:pre-wrap'>{html.escape(fused)}</pre>")
    return "".join(parts)


def _table(rows: list[tuple[str, str]]) -> str:
    cells = "".join(
        f"<tr><td nowrap style='color:#5b6473;padding-right:10px;vertical-align:top'>{html.escape(k)}</td>"
        f"<td>{html.escape(v)}</td></tr>"
        for k, v in rows
    )
    return f"<table cellspacing='0' cellpadding='1'>{cells}</table>"


class DetailsPanel(QTextBrowser):
    """Read-only rich text; `toPlainText()` gives what a user reads (tests use it).

    `flowTargetClicked(track, index)`: the user clicked the other end of a flow.
    """

    flowTargetClicked = Signal(object, int)
    sqlRequested = Signal(str)  # "as SQL" on a range's pivot: the query to run in the Query tab
    graphRequested = Signal(str, object)  # "Show in graph" on an op: (its name, program id)
    contentShown = Signal()  # an event or a range is shown (the dock opens for it)

    def __init__(self, parent: QWidget | None = None, hub: AnalysisHub | None = None):
        super().__init__(parent)
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._on_anchor)
        self._trace: Trace | None = None
        self._pivot: AreaPivot | None = None  # the range shown, for its other dimensions and SQL
        self.hub = hub  # the open trace's analyses: where an op's code comes from (None: no code shown)
        self._code_jobs = LatestJobs(self)
        self._event_parts: list[str] = []
        self.code: OpDetails | None = None  # the code of the op shown, once it arrived
        self.setMinimumWidth(DETAILS_MIN_WIDTH_PX)
        self.clear_details()

    def clear_details(self) -> None:
        """Nothing shown (a new profile: its event, range and code links go with it)."""
        self._code_jobs.supersede()
        self.code = None
        self._trace = None
        self._pivot = None
        self.setHtml(
            "<p style='color:#5b6473'>Click an event to see its details; "
            "Shift-drag on the timeline to summarize a time range.</p>"
        )

    def _on_anchor(self, url) -> None:
        text = url.toString()
        if self._pivot is not None and text.startswith(PIVOT_LINK):
            self.setHtml(range_pivot_html(self._pivot, text[len(PIVOT_LINK) :]))
            return
        if self._pivot is not None and text.startswith(SQL_LINK):
            self.sqlRequested.emit(range_pivot_sql(self._pivot, text[len(SQL_LINK) :]))
            return
        if text == GRAPH_LINK and self.code is not None:
            code = self.code.code
            self.graphRequested.emit(short_op_name(code.hlo_text), code.program_id)
            return
        if not text.startswith("flow:") or self._trace is None:
            return
        _, number, event = text.split(":")
        self.flowTargetClicked.emit(self._trace.track_list()[int(number)], int(event))

    def show_event(self, track: Track, index: int) -> None:
        self._trace = track.plane.trace
        self.code = None
        name = track.event_name(index)
        start = int(track.start_ps[index])
        duration = int(track.duration_ps[index])
        parts = [f"<h3 style='margin-bottom:4px'>{html.escape(short_name(name))}</h3>"]
        if short_name(name) != name:
            parts.append(
                "<p style='margin:2px 0'><b>HLO</b></p>"
                f"<pre style='white-space:pre-wrap'>{html.escape(name)}</pre>"
            )
        parts.append(
            _table(
                [
                    ("Start", f"{format_duration(start, SHORT_SPEC)} after trace start"),
                    ("Duration", format_duration(duration, SHORT_SPEC)),
                    ("End", format_duration(start + duration, SHORT_SPEC)),
                    ("Track", f"{track.plane.host}  {track.plane.name}  /  {track.display_name}"),
                    ("Depth", str(int(track.depth[index]))),
                ]
            )
        )
        own = track.event_stats(index)
        meta = track.metadata_stats(index)
        if own:
            parts.append("<p style='margin:8px 0 2px 0'><b>Event stats</b></p>")
            parts.append(_table([(k, format_stat(k, v)) for k, v in sorted(own.items())]))
        if meta:
            parts.append("<p style='margin:8px 0 2px 0'><b>Op metadata stats</b></p>")
            parts.append(_table([(k, format_stat(k, v)) for k, v in sorted(meta.items())]))
        parts.append(self._flow_links(track, index))
        self._event_parts = parts
        self.setHtml("".join(parts))
        self.contentShown.emit()
        self._ask_code(track, index)

    def _ask_code(self, track: Track, index: int) -> None:
        """Finds the op's code in a worker; shown when it arrives, unless another event was picked."""
        self._code_jobs.supersede()
        analysis = self.hub.analysis if self.hub is not None else None
        if analysis is None or analysis.trace is not track.plane.trace:
            return

        def work() -> OpDetails | None:
            return op_details_of_event(analysis.devices, track, index, analysis.get(PROGRAM_CODE))

        self._code_jobs.start(work, self._show_code, lambda _error: None)  # no code: the event shows as is

    def wait_for_code(self) -> None:
        """Blocks until the code asked for last has been computed (tests; deliver with processEvents)."""
        self._code_jobs.wait()

    def _show_code(self, details: OpDetails | None) -> None:
        if details is None:
            return
        self.code = details
        parts = list(self._event_parts)
        if details.code.hlo_text and len(parts) > 1 and "<b>HLO</b>" in parts[1]:
            del parts[1]  # the op's own text, shown in the code section instead
        times = 2 if len(parts) > 1 and "<b>HLO</b>" in parts[1] else 1  # the times table's part
        parts.insert(times + 1, code_html(details))  # under the times, above the raw stats
        if details.code.hlo_text and details.code.program_id is not None:  # an XLA op with its program
            link = f"<p style='margin:6px 0 0 0'><a href='{GRAPH_LINK}'>Show in graph</a></p>"
            parts.insert(times + 1, link)
        self.setHtml("".join(parts))

    def _flow_links(self, track: Track, index: int) -> str:
        """Links to the other end of each flow at this event (click: jump there)."""
        trace = track.plane.trace
        flows = trace.flows
        number = trace.track_number(track)
        rows = flows.touching(number, np.array([index]))[:MAX_FLOW_LINKS]
        if len(rows) == 0:
            return ""
        tracks = trace.track_list()
        items = []
        for row in rows.tolist():
            source, target = flows.ends(row)
            outgoing = source == (number, index)
            other_number, other_event = target if outgoing else source
            other = tracks[other_number]
            what = "to" if outgoing else "from"
            category = trace.strings[int(flows.category[row])]
            label = short_name(other.event_name(other_event))
            label = html.escape(
                label if len(label) <= FLOW_LABEL_CHARS else label[: FLOW_LABEL_CHARS - 1] + "\u2026"
            )
            where = html.escape(f"{other.plane.name} / {other.display_name}")
            link = f"<a href='flow:{other_number}:{other_event}'>{label}</a>"
            items.append(f"<li>{what} {link} on {where} ({category})</li>")
        return (
            "<p style='margin:8px 0 2px 0'><b>Flows</b></p><ul style='margin-top:0'>"
            + "".join(items)
            + "</ul>"
        )

    def show_range(self, pivot: AreaPivot, dimension: str = "name") -> None:
        """The range's pivot (count, total, self, average) by `dimension` over its expanded tracks."""
        self._pivot = pivot
        self.setHtml(range_pivot_html(pivot, dimension))
        self.contentShown.emit()


class DetailsDock(QDockWidget):
    """The Details dock: closed until the panel has something to show, then open (issue 23: an empty
    dock took a quarter of a laptop's width).

    Closing it hides it until the user selects something again: then it opens for what they picked
    (issue 37: a dock closed once stayed closed for good, and a selection seemed to do nothing).
    View > Details (Ctrl+Shift+D) opens and closes it too.
    """

    def __init__(self, panel: DetailsPanel, parent: QMainWindow):
        super().__init__("Details", parent)
        self.setObjectName("details")
        self.setWidget(panel)
        self._sized = False
        panel.contentShown.connect(self.reveal)
        self.hide()

    def reveal(self) -> None:
        """Opens the dock for what the panel now shows (the user selected it)."""
        if self.isVisible():
            return
        self.show()
        window = self.parent()
        if not self._sized and isinstance(window, QMainWindow) and not self.isFloating():
            self._sized = True
            window.resizeDocks([self], [DETAILS_START_WIDTH_PX], Qt.Orientation.Horizontal)
