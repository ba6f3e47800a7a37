"""The Compare view: two runs side by side, what changed and where.

Top, the verdict paragraph and cards of both runs with their deltas; then the two per-step charts
overlaid and the finding changes; then the op table of both runs matched op by op (filterable,
sortable by any column, largest |delta| first); at the bottom the two timelines one above the other,
each scrolled to a chosen step (the median step of each by default) at the same time scale, so the
same step reads side by side. Selecting an op row outlines its events in both timelines.

The numbers come from `tpuscope.analysis.compare.runs`; loading both profiles and comparing them runs in
a worker thread (`compare_paths`), and a newer request drops an older one's result.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tpuscope.analysis.compare.ops import OpDelta
from tpuscope.analysis.compare.runs import SPLIT_LABELS, SPLIT_PARTS, Comparison, analyze_run, compare_runs
from tpuscope.model.records import record
from tpuscope.model.trace import Track
from tpuscope.model.units import COLUMN_SPEC, duration_column_unit, format_duration, format_duration_in
from tpuscope.ui.jobs import LatestJobs
from tpuscope.ui.loader import LoadResult, prepare
from tpuscope.ui.timeline.view import PICKED_LAYER, TimelineView
from tpuscope.ui.view_router import short_name
from tpuscope.ui.widgets.code_spans import code_spans_html, without_code_marks
from tpuscope.ui.widgets.colors import BUSY_COLOR
from tpuscope.ui.widgets.tables import SortableItem

if TYPE_CHECKING:
    from tpuscope.ui.load_controller import LoadController
    from tpuscope.ui.view_router import ViewRouter

COMPARE_KEY = "compare"  # the Compare tab's name in the view router, added on first use
COMPARE_TITLE = "Compare"  # it shows two traces, not the hub's
BASE_COLOR = QColor(120, 130, 145)
NEW_COLOR = BUSY_COLOR
FASTER_COLOR = "#1e8e3e"
SLOWER_COLOR = "#c5221f"
TOOLTIP_MEMBERS = 8  # a family row's ops named in its tooltip, per run
# The parts' smallest heights (px), which add up in the Compare tab's splitter and so set the window's
# smallest height: together they stay well under a 720-pixel screen (issue 37: at 150 + 150 + 2 x 160
# Compare grew the window to 881 px on a 768-pixel laptop). Each part scrolls below its share.
TOP_MIN_HEIGHT = 80  # the verdict paragraph and a cards row; the rest scrolls
CHART_MIN_HEIGHT = 90  # the per-step chart still shows its axes and a few steps
TIMELINE_MIN_HEIGHT = 60  # a timeline still shows its ruler and a track or two; it scrolls
# The parts' shares of the tab's height, top to bottom: verdict and cards, chart and findings, op
# table, the two timelines (our heuristic: the timelines need the most rows, the verdict the fewest).
PART_SHARES = (2, 3, 4, 7)
OP_COLUMNS = ("Op", "Program", "Category", "Match", "BASE / step", "NEW / step", "Delta", "Share")
# The two timelines show this multiple of the longer of the two chosen steps, from just before it.
ALIGN_WINDOW_FACTOR = 1.15
ALIGN_LEAD_FRACTION = 0.05
DELTA_COLUMN = OP_COLUMNS.index("Delta")
SIGNED_COLUMN_SPEC = "+" + COLUMN_SPEC  # a change reads +1.500 ms or -0.250 ms


@record
class CompareResult:
    """What the view shows: both loaded profiles (for their timelines) and their comparison."""

    base: LoadResult
    new: LoadResult
    comparison: Comparison


def compare_paths(base_path, new_path, base_loaded: LoadResult | None = None) -> CompareResult:
    """Loads both profiles (BASE unless given loaded) and compares them (what the worker thread
    runs; usable synchronously)."""
    base = base_loaded if base_loaded is not None else prepare(base_path)
    new = prepare(new_path)
    # Each profile's shared analyses: BASE's are the other views' once it becomes the open profile.
    runs = [analyze_run(loaded.analysis) for loaded in (base, new)]
    comparison = compare_runs(runs[0], runs[1])
    return CompareResult(base, new, comparison)


def _item(text: str, value: float | None = None) -> QTableWidgetItem:
    item = SortableItem(text, value)
    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
    if value is not None and not isinstance(value, str):
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


def _ms(ps: float) -> str:
    return format_duration(float(ps))


def _signed(ps: float) -> str:
    return ("+" if ps >= 0 else "-") + format_duration(abs(float(ps)))


def _members_tooltip(row: OpDelta) -> str:
    lines = []
    for side, members in (("BASE", row.base_members), ("NEW", row.new_members)):
        if members:
            listed = ", ".join(members[:TOOLTIP_MEMBERS]) + (
                ", \u2026" if len(members) > TOOLTIP_MEMBERS else ""
            )
            lines.append(f"{side}: {len(members)} {row.name} op(s): {listed}")
    return "\n".join(lines)


class CompareView(QWidget):
    comparisonShown = Signal(object)  # Comparison
    compareFailed = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.result: CompareResult | None = None
        self.rows: list[OpDelta] = []
        self.jobs = LatestJobs(self)

        self.summary = QLabel("Choose File > Compare with\u2026 to compare this profile with another.", self)
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.cards = QGridLayout()
        self.cards.setHorizontalSpacing(18)
        cards_box = QWidget(self)
        cards_box.setLayout(self.cards)

        self.chart = pg.PlotWidget(self, background="w")
        self.chart.setLabel("bottom", "step")
        self.chart.setLabel("left", "step time", units="s")
        self.chart.addLegend(offset=(-10, 5))  # top right, clear of the first steps
        self.chart.setMinimumHeight(CHART_MIN_HEIGHT)
        self.findings = QListWidget(self)
        self.findings.setMinimumWidth(320)

        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText("Filter ops by name, program, category or match")
        self.filter.textChanged.connect(self._apply_filter)
        self.table = QTableWidget(0, len(OP_COLUMNS), self)
        self.table.setHorizontalHeaderLabels(list(OP_COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._on_op_selected)

        self.base_step = QSpinBox(self)
        self.new_step = QSpinBox(self)
        for box in (self.base_step, self.new_step):
            box.valueChanged.connect(self.align_timelines)
        self.base_label = QLabel("BASE", self)
        self.new_label = QLabel("NEW", self)
        self.base_timeline = TimelineView(self)
        self.new_timeline = TimelineView(self)
        for timeline in (self.base_timeline, self.new_timeline):
            timeline.setMinimumHeight(TIMELINE_MIN_HEIGHT)

        top = QWidget(self)
        top_column = QVBoxLayout(top)
        top_column.setContentsMargins(8, 8, 8, 0)
        top_column.addWidget(self.summary)
        top_column.addWidget(cards_box)
        middle = QSplitter(Qt.Orientation.Horizontal, self)
        middle.addWidget(self.chart)
        middle.addWidget(self.findings)
        middle.setStretchFactor(0, 3)
        middle.setStretchFactor(1, 2)
        ops = QWidget(self)
        ops_column = QVBoxLayout(ops)
        ops_column.setContentsMargins(0, 0, 0, 0)
        ops_column.addWidget(self.filter)
        ops_column.addWidget(self.table)
        timelines = QWidget(self)
        timeline_column = QVBoxLayout(timelines)
        timeline_column.setContentsMargins(0, 0, 0, 0)
        align_row = QHBoxLayout()
        align_row.addWidget(QLabel("Align the timelines on BASE step", self))
        align_row.addWidget(self.base_step)
        align_row.addWidget(QLabel("and NEW step", self))
        align_row.addWidget(self.new_step)
        align_row.addStretch(1)
        timeline_column.addLayout(align_row)
        # BASE above NEW in a splitter of their own: the user gives either the height it needs.
        self.timeline_splitter = QSplitter(Qt.Orientation.Vertical, timelines)
        for label, timeline in ((self.base_label, self.base_timeline), (self.new_label, self.new_timeline)):
            pane = QWidget(timelines)
            pane_column = QVBoxLayout(pane)
            pane_column.setContentsMargins(0, 0, 0, 0)
            pane_column.setSpacing(2)
            pane_column.addWidget(label)
            pane_column.addWidget(timeline, 1)
            self.timeline_splitter.addWidget(pane)
            self.timeline_splitter.setCollapsible(self.timeline_splitter.count() - 1, False)
        timeline_column.addWidget(self.timeline_splitter, 1)

        # The verdict and cards scroll when they outgrow their share (a comparison across formats and
        # configurations says more before its numbers), rather than being cut off by the splitter.
        top_scroll = QScrollArea(self)
        top_scroll.setWidget(top)
        top_scroll.setWidgetResizable(True)
        top_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        top_scroll.setMinimumHeight(TOP_MIN_HEIGHT)
        self.splitter = splitter = QSplitter(Qt.Orientation.Vertical, self)
        for part in (top_scroll, middle, ops, timelines):
            splitter.addWidget(part)
        for index, share in enumerate(PART_SHARES):
            splitter.setStretchFactor(index, share)
        self._shared_out = False  # whether the parts were given their shares of the first height
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(splitter)

    def showEvent(self, event) -> None:
        """The first time it is shown, each part gets its share of the height (PART_SHARES): from
        their size hints the chart and findings took half of a laptop's height and the timelines
        showed only their rulers."""
        super().showEvent(event)
        height = self.splitter.height()
        if not self._shared_out and height > 0:
            self._shared_out = True
            self.splitter.setSizes([height * share // sum(PART_SHARES) for share in PART_SHARES])

    # ----- input -----------------------------------------------------------------------------

    def compare_paths(self, base_path, new_path, base_loaded: LoadResult | None = None) -> None:
        """Loads and compares both profiles off the UI thread; a newer call supersedes this one.

        `base_loaded`: BASE as the main window already has it open (it is not loaded again)."""
        self.summary.setText(html.escape(f"Comparing {base_path} with {new_path}\u2026"))
        self.jobs.start(
            lambda: compare_paths(base_path, new_path, base_loaded), self._on_result, self._on_failed
        )

    def _on_result(self, result: object) -> None:
        assert isinstance(result, CompareResult)
        self.set_result(result)

    def _on_failed(self, error: Exception) -> None:
        message = str(error) or type(error).__name__
        self.summary.setText(html.escape(f"Cannot compare: {message}"))
        self.compareFailed.emit(message)

    def set_result(self, result: CompareResult) -> None:
        self.result = result
        c = result.comparison
        self._show_summary(c)
        self._show_cards(c)
        self._show_chart(c)
        self._show_findings(c)
        self._fill_table(c)
        for timeline, loaded in ((self.base_timeline, result.base), (self.new_timeline, result.new)):
            timeline.set_trace(loaded.trace, loaded.lod, loaded.analysis.steps, loaded.colours)
        self.base_label.setText(f"BASE  {', '.join(c.base.overview.sources)}")
        self.new_label.setText(f"NEW  {', '.join(c.new.overview.sources)}")
        for box, run in ((self.base_step, c.base), (self.new_step, c.new)):
            box.blockSignals(True)
            box.setRange(0, max(run.steps - 1, 0))
            box.setValue(max(run.median_step(), 0))
            box.setEnabled(run.steps > 0)
            box.blockSignals(False)
        self.align_timelines()
        self.comparisonShown.emit(c)

    # ----- parts -----------------------------------------------------------------------------

    def _show_summary(self, c: Comparison) -> None:
        colour = {"faster": FASTER_COLOR, "slower": SLOWER_COLOR}.get(c.verdict, "#3c4043")
        verdict = html.escape(c.verdict.replace("_", " "))
        self.summary.setText(
            f"<p style='margin:0'><b style='color:{colour};font-size:120%'>{verdict}</b>&nbsp;&nbsp;"
            f"{code_spans_html(c.summary)}</p>"  # its ops and programs named as code
        )

    def _show_cards(self, c: Comparison) -> None:
        while self.cards.count():
            taken = self.cards.takeAt(0)
            widget = taken.widget() if taken is not None else None
            if widget is not None:
                widget.deleteLater()
        rows = [("", "BASE", "NEW", "change")]
        t = c.typical
        if t is not None:
            rows.append(
                ("median step (no compilation)", _ms(t.base_value_ps), _ms(t.new_value_ps),
                 f"{t.change_percent:+.1f}% (95% CI {t.ci_low_percent:+.0f}%..{t.ci_high_percent:+.0f}%)")
            )  # fmt: skip
        w = c.with_compilation
        if w is not None:
            rows.append(
                ("mean step with compilation", _ms(w.base_value_ps), _ms(w.new_value_ps),
                 f"{w.change_percent:+.1f}% (95% CI {w.ci_low_percent:+.0f}%..{w.ci_high_percent:+.0f}%)")
            )  # fmt: skip
        rows.append(("steps (compiled)", f"{c.base.steps} ({int(c.base.compiled.sum())})",
                     f"{c.new.steps} ({int(c.new.compiled.sum())})", ""))  # fmt: skip
        bd, nd = c.base.overview.duty_cycle, c.new.overview.duty_cycle
        if bd is not None and nd is not None:
            rows.append(("duty cycle", f"{bd * 100:.1f}%", f"{nd * 100:.1f}%", f"{(nd - bd) * 100:+.1f} pt"))
        if c.split is not None:
            for part in SPLIT_PARTS:
                delta = c.split.delta_ps(part)
                rows.append((f"{SPLIT_LABELS[part]} / step", _ms(c.split.base_ps[part]),
                             _ms(c.split.new_ps[part]), _signed(delta)))  # fmt: skip
        for p in c.parity:
            if not p.same:
                rows.append((f"{p.aspect} (differs)", p.base, p.new, ""))
        for r, values in enumerate(rows):
            for col, text in enumerate(values):
                label = QLabel(html.escape(text) if r else f"<b>{html.escape(text)}</b>", self)
                label.setTextFormat(Qt.TextFormat.RichText)
                if col:
                    label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.cards.addWidget(label, r, col)

    def _show_chart(self, c: Comparison) -> None:
        self.chart.clear()
        for run, name, colour in ((c.base, "BASE", BASE_COLOR), (c.new, "NEW", NEW_COLOR)):
            if not run.steps:
                continue
            seconds = run.durations_ps / 1e12
            x = np.arange(run.steps)
            self.chart.plot(x, seconds, pen=pg.mkPen(colour, width=2), symbol="o", symbolSize=5,
                            symbolBrush=colour, symbolPen=colour, name=name)  # fmt: skip

    def _show_findings(self, c: Comparison) -> None:
        self.findings.clear()
        f = c.findings
        lines = [f"new  [{x.severity.label}]  {x.title}" for x in f.new]
        lines += [f"resolved  [{x.severity.label}]  {x.title}" for x in f.resolved]
        lines += [f"changed  [{b.severity.label} \u2192 {n.severity.label}]  {n.title}" for b, n in f.changed]
        self.findings.addItems([without_code_marks(line) for line in lines] or ["No finding changed."])

    def _fill_table(self, c: Comparison) -> None:
        self.rows = list(c.ops.rows)
        self.table.setSortingEnabled(False)
        self.table.clearSelection()
        self.table.setRowCount(len(self.rows))
        # Each time column in one unit for all its rows (issue 33), the delta's signed.
        base_unit = duration_column_unit([row.base_self_ps for row in self.rows])
        new_unit = duration_column_unit([row.new_self_ps for row in self.rows])
        delta_unit = duration_column_unit([row.delta_ps for row in self.rows])
        for r, row in enumerate(self.rows):
            share = c.ops.share_of_change(row)
            cells = [
                _item(row.name),
                _item(row.program),
                _item(row.category),
                _item(row.match),
                _item(format_duration_in(row.base_self_ps, base_unit), row.base_self_ps),
                _item(format_duration_in(row.new_self_ps, new_unit), row.new_self_ps),
                _item(format_duration_in(row.delta_ps, delta_unit, SIGNED_COLUMN_SPEC), abs(row.delta_ps)),
                _item(f"{share * 100:.0f}%", share),
            ]
            cells[0].setData(Qt.ItemDataRole.UserRole, r)  # position in self.rows, whatever the sort
            if row.base_members or row.new_members:  # a family row: which ops it holds in each run
                cells[0].setToolTip(_members_tooltip(row))
            for col, cell in enumerate(cells):
                self.table.setItem(r, col, cell)
        self.table.setSortingEnabled(True)
        self.table.sortItems(DELTA_COLUMN, Qt.SortOrder.DescendingOrder)
        self.table.resizeColumnsToContents()
        self._apply_filter(self.filter.text())

    def _apply_filter(self, text: str) -> None:
        needle = text.strip().lower()
        for r in range(self.table.rowCount()):
            cells = [self.table.item(r, col) for col in range(4)]
            haystack = " ".join(cell.text().lower() for cell in cells if cell is not None)
            self.table.setRowHidden(r, bool(needle) and needle not in haystack)

    # ----- selection and alignment -----------------------------------------------------------

    def selected_op(self) -> OpDelta | None:
        items = self.table.selectedItems()
        if not items:
            return None
        first = self.table.item(items[0].row(), 0)
        return None if first is None else self.rows[int(first.data(Qt.ItemDataRole.UserRole))]

    def select_op(self, name: str) -> bool:
        """Selects the first visible row of the op named `name` (tests and links use it)."""
        for r in range(self.table.rowCount()):
            item = self.table.item(r, 0)
            if item is not None and item.text() == name and not self.table.isRowHidden(r):
                self.table.selectRow(r)
                return True
        return False

    def _on_op_selected(self) -> None:
        row = self.selected_op()
        if row is None or self.result is None:
            return
        c = self.result.comparison
        for timeline, run, rows in (
            (self.base_timeline, c.base, row.base_rows),
            (self.new_timeline, c.new, row.new_rows),
        ):
            ops = run.overview.ops
            events: list[tuple[Track, np.ndarray]] = []
            if ops is not None:
                for table_row in rows:
                    events.extend(ops.events_of_row(table_row))
            timeline.set_highlight(events, PICKED_LAYER)

    def align_timelines(self) -> None:
        """Scrolls both timelines to their chosen step, same start offset and same time scale."""
        if self.result is None:
            return
        c = self.result.comparison
        chosen: list[tuple[float, float] | None] = []
        for run, box in ((c.base, self.base_step), (c.new, self.new_step)):
            series = run.overview.series
            if not run.steps:
                chosen.append(None)
                continue
            k = min(box.value(), run.steps - 1)
            chosen.append((float(series.start_ps[k]), float(series.end_ps[k] - series.start_ps[k])))
        known = [x for x in chosen if x is not None]
        if not known:
            return
        width = max(d for _, d in known) * ALIGN_WINDOW_FACTOR
        for timeline, step in zip((self.base_timeline, self.new_timeline), chosen, strict=True):
            if step is None:
                timeline.zoom_to_fit()
                continue
            start = step[0] - ALIGN_LEAD_FRACTION * width
            timeline.set_window(start, start + width)

    def shutdown(self) -> None:
        self.jobs.supersede()
        self.jobs.wait()


def show_comparison(
    router: ViewRouter, loads: LoadController, base: str | Path, new: str | Path
) -> CompareView:
    """Shows the Compare tab (added to the window's tabs on first use) and compares BASE with NEW in
    the background; once shown, BASE becomes the profile of the other views too when none is open
    (it is loaded already), else the comparison opens beside the open profile (`_show_base_if_none_open`).
    Only the router's and the load controller's public API is used."""
    view = router.made_views.get(COMPARE_KEY)
    if not isinstance(view, CompareView):
        made = view = CompareView()  # the router's tabs take it
        view.compareFailed.connect(lambda message: loads.show_error("Cannot compare", message))
        view.comparisonShown.connect(lambda _: _show_base_if_none_open(router, loads, made))
        router.add_view(COMPARE_KEY, view, COMPARE_TITLE)
    router.bring_to_front(view)
    view.compare_paths(str(base), str(new), _shown_if_same(router, base))
    return view


def _shown_if_same(router: ViewRouter, path: str | Path) -> LoadResult | None:
    """The profile the window shows, as its loader made it, when `path` is it (its analyses too: what
    the views computed is not computed again for the comparison)."""
    shown = router.path
    if shown is None or not _same_path(path, shown):
        return None
    return router.shown_result()


def _show_base_if_none_open(router: ViewRouter, loads: LoadController, view: CompareView) -> None:
    """With no profile open, BASE becomes the other views' profile (it is loaded already) and the
    Compare and History pages stay. With one open, the open profile stays in the other views and the
    comparison sits beside it, as the status line says: clicking a run in History must not replace
    the profile the user opened without asking (issue 33), and Compare shows both runs' timelines itself."""
    assert view.result is not None
    base, new = view.result.base, view.result.new
    if router.path is None:
        router.show_result(base, keep_pages=True)
        loads.add_recent(base.path)
    elif not _same_path(router.path, base.path):
        router.say(
            f"Comparing {short_name(base.path)} with {short_name(new.path)} in the Compare tab; "
            f"{short_name(router.path)} stays open in the other tabs."
        )
    router.bring_to_front(view)


def _same_path(a: str | Path, b: str | Path) -> bool:
    return str(a) == str(b) or Path(str(a)).resolve() == Path(str(b)).resolve()
