"""The details panel: everything known about the selected event, or a summary of a selected range.

For a device op it also shows the user's code behind it (`tpuscope.analysis.op_source`): the
framework op, the source line, the stack as Python prints a traceback, the op's HLO text and, for
a fusion, the instructions it fused. The programs' code is decoded in a worker thread (once per
trace, `PROGRAM_CODE`), so the event's times and stats show at once and its code a moment later.
"""

from __future__ import annotations

import html

import numpy as np
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QContextMenuEvent, QFont, QFontMetricsF, QGuiApplication, QHelpEvent, QTextOption
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTextBrowser, QToolTip, QWidget

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
from tpuscope.ui.widgets.elide import elided

DETAILS_MIN_WIDTH_PX = 300
FLOW_LABEL_CHARS = 80  # demangled kernel names run to kilobytes; the link shows their start
MAX_FLOW_LINKS = 20  # a launch has one kernel; an event with more flows lists the first ones
DETAILS_START_WIDTH_PX = 360  # room for stat names such as `raw_bytes_accessed` and 20-digit values
MAX_STAT_TEXT = 2000  # characters of one stat value shown (long HLO texts and source stacks)
MAX_FUSED_SHOWN = 200  # instructions of a fusion listed; a large fusion's rest is counted
GRAPH_LINK = "graph:"  # the "Show in graph" link of an op's code
ALL_STATS_LINK = "allstats:"  # the "All stats" toggle: raw keys and ids shown or hidden
COPY_NAME_LINK = "copyname:"  # puts the event's full name on the clipboard
# Stat keys that mean nothing to a user (issue 37, "Human wording"), hidden unless "All stats" is
# ticked. Our heuristic from the profiles we read: XPlane's one-letter internal keys (`_a` async,
# `_c`/`_ct` context id and type, `_p`/`_pt` producer id and type, `_r` root: the flow machinery,
# https://github.com/openxla/xla/blob/main/xla/tsl/profiler/utils/xplane_schema.h), the raw flow id
# (the Flows section shows where it leads) and the profiler's own symbol table index.
RAW_STAT_KEYS = frozenset({"flow", "symbol_id"})
RAW_STAT_PREFIX = "_"  # every XPlane stat whose name starts so is an internal key (above)
TITLE_MAX_LINES = 2  # a 300-character kernel name as the title takes at most this many lines
TITLE_MARGIN_PX = 24  # the text browser's document margins and frame around the title's room
TITLE_WRAP_SLACK = (
    0.8  # of two lines' room: wrapping at word ends leaves part of a line empty (our heuristic)
)


def is_raw_stat(name: str, value: object) -> bool:
    """Whether a stat is hidden unless "All stats" is ticked: an internal key or id (RAW_STAT_KEYS),
    a serialized blob (shown only as its size: `memory_access_breakdown <10 bytes>`), or an empty or
    zero-valued breakdown."""
    if name.startswith(RAW_STAT_PREFIX) or name in RAW_STAT_KEYS or isinstance(value, bytes):
        return True
    return "breakdown" in name and not value


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
        self.all_stats = False  # "All stats" ticked: raw keys and ids shown (this session)
        self.event_name = ""  # the full name of the event shown ("Copy name")
        self._shown: tuple[Track, int] | None = None
        self.setMinimumWidth(DETAILS_MIN_WIDTH_PX)
        self.clear_details()

    def clear_details(self) -> None:
        """Nothing shown (a new profile: its event, range and code links go with it)."""
        self._code_jobs.supersede()
        self.code = None
        self._trace = None
        self._pivot = None
        self._shown = None
        self.event_name = ""
        self.setHtml(
            "<p style='color:#5b6473'>Click an event to see its details; "
            "Shift-drag on the timeline to summarize a time range.</p>"
        )

    def _on_anchor(self, url) -> None:
        text = url.toString()
        if self._pivot is not None and text.startswith(PIVOT_LINK):
            self._set_range_html(range_pivot_html(self._pivot, text[len(PIVOT_LINK) :]))
            return
        if self._pivot is not None and text.startswith(SQL_LINK):
            self.sqlRequested.emit(range_pivot_sql(self._pivot, text[len(SQL_LINK) :]))
            return
        if text == ALL_STATS_LINK:
            self.set_all_stats(not self.all_stats)
            return
        if text == COPY_NAME_LINK:
            self.copy_name()
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
        self.event_name = name
        parts = [self._title_html(short_name(name))]
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
        parts.append(self._all_stats_toggle(track, index))  # above the stats it filters
        own = self._shown_stats(track.event_stats(index))
        meta = self._shown_stats(track.metadata_stats(index))
        if own:
            parts.append("<p style='margin:8px 0 2px 0'><b>Event stats</b></p>")
            parts.append(_table([(k, format_stat(k, v)) for k, v in sorted(own.items())]))
        if meta:
            parts.append("<p style='margin:8px 0 2px 0'><b>Op metadata stats</b></p>")
            parts.append(_table([(k, format_stat(k, v)) for k, v in sorted(meta.items())]))
        parts.append(self._flow_links(track, index))
        self._event_parts = parts
        self._shown = (track, index)
        self.setHtml("".join(parts))
        self.contentShown.emit()
        self._ask_code(track, index)

    def setHtml(self, text: str) -> None:  # noqa: N802 (Qt's name)
        """An event's page: a word too long for the width may break anywhere (a long stat value)."""
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        super().setHtml(text)

    def _set_range_html(self, text: str) -> None:
        """A range's page: its name cells break only between words, never inside one (issue 37);
        `range_pivot_html` shortens the long names so they fit."""
        super().setHtml(text)
        self.setWordWrapMode(QTextOption.WrapMode.WordWrap)

    def _title_html(self, title: str) -> str:
        """The bold title, shortened so it wraps to at most TITLE_MAX_LINES at the dock's width when
        shown (a name's distinguishing tail kept, `elided`); the full name is its tooltip and "Copy
        name"."""
        font = QFont(self.font())
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.17)  # Qt's <h3> scale (QTextHtmlParser)
        room = max(self.viewport().width(), DETAILS_MIN_WIDTH_PX) - TITLE_MARGIN_PX
        shown = elided(QFontMetricsF(font), title, room * TITLE_MAX_LINES * TITLE_WRAP_SLACK)
        tip = html.escape(title, quote=True)
        copy = f"<a href='{COPY_NAME_LINK}' style='font-size:small'>Copy name</a>"
        return (
            f"<h3 style='margin-bottom:0px'><span title=\"{tip}\">{html.escape(shown)}</span></h3>"
            f"<p style='margin:0 0 4px 0'>{copy}</p>"
        )

    def _shown_stats(self, stats: dict[str, object]) -> dict[str, object]:
        if self.all_stats:
            return stats
        return {k: v for k, v in stats.items() if not is_raw_stat(k, v)}

    def _all_stats_toggle(self, track: Track, index: int) -> str:
        stats = {**track.event_stats(index), **track.metadata_stats(index)}
        hidden = sum(is_raw_stat(k, v) for k, v in stats.items())
        if not hidden:
            return ""
        box = "\u2611" if self.all_stats else "\u2610"
        what = "raw keys and ids shown" if self.all_stats else f"{hidden} raw keys and ids hidden"
        return (
            f"<p style='margin:6px 0 0 0'><a href='{ALL_STATS_LINK}'>{box} All stats</a>"
            f" <span style='color:#5b6473'>({what})</span></p>"
        )

    def set_all_stats(self, on: bool) -> None:
        """Shows or hides the raw stat keys and ids (`is_raw_stat`) of the event shown, and of the next
        ones this session."""
        self.all_stats = on
        if self._shown is not None:
            track, index = self._shown
            self.show_event(track, index)

    def copy_name(self) -> None:
        """Puts the full name of the event shown on the clipboard."""
        if self.event_name:
            QGuiApplication.clipboard().setText(self.event_name)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:  # noqa: N802 (Qt's name)
        menu = self.createStandardContextMenu(event.pos())
        if self.event_name:
            menu.addSeparator()
            menu.addAction("Copy name", self.copy_name)
        menu.exec(event.globalPos())

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        """Shows the tooltip of rich text under the mouse (the title's full name)."""
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            tip = self.cursorForPosition(event.pos()).charFormat().toolTip()
            if tip:
                QToolTip.showText(event.globalPos(), tip, self)
            else:
                QToolTip.hideText()
            return True
        return super().viewportEvent(event)

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
        self._shown = None
        self.event_name = ""
        self._set_range_html(range_pivot_html(pivot, dimension))
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
