"""The "Overview" page: what a profile says at a glance, each part a door into the view with more.

Top, headline cards (devices, hosts, framework, span, steps, step time, duty cycle); middle, each
step's time split into device busy / waiting for input / waiting for compilation / other idle;
bottom, the top ops by self time and the worst findings. Clicking a card, an op or a finding asks
for its view (`openRequested("ops" | "diagnostics" | "timeline", target)`); an op or finding also
asks the timeline to outline its events (`highlightRequested`), and a double-clicked step to zoom
there (`zoomRequested`). The main window connects the signals; this view knows no other view.

The step chart is `tpuscope.ui.overview_chart`; on a run of several hosts a picker beside it shows
the pod (the mean over its hosts, the default) or one host, with that choice's headline split from
the metrics under it (`_draw_pod`). The cards, panels and list delegates come from
the shared kit (`tpuscope.ui.widgets`), the pod panel from `tpuscope.ui.pod.heatmap`.

The page fills in as the shared analyses finish (`AnalysisHub`): the trace's own facts at once,
then steps and framework, then the whole `tpuscope.analysis.overview.Overview`, which waits for
the diagnose report and the op table that the other views use too.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QScrollArea,
    QStackedWidget,
    QStyle,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tpuscope.analysis.diagnose import Finding, Severity
from tpuscope.analysis.diagnose.finding import sentence_case
from tpuscope.analysis.facts.evidence import evidence_events
from tpuscope.analysis.framework import Framework
from tpuscope.analysis.metrics import (
    FRACTION,
    PERCENT,
    POD,
    PROFILE,
    STEPS,
    Metrics,
    MetricValue,
    format_metric,
)
from tpuscope.analysis.metrics.definitions import BY_NAME as METRICS_BY_NAME
from tpuscope.analysis.metrics.definitions import METRICS
from tpuscope.analysis.overview import (
    NO_STEPS_TEXT,
    PARTS,
    STEP_SOURCE_LABELS,
    Overview,
    StepSeries,
    part_label,
)
from tpuscope.analysis.pod.step_split import PodStepSplit, pod_step_split
from tpuscope.analysis.pod.summary import PART_LABELS as POD_PART_LABELS
from tpuscope.analysis.session import FRAMEWORK, OVERVIEW, OVERVIEW_FIGURES
from tpuscope.analysis.session import STEPS as STEPS_RESULT
from tpuscope.analysis.steps import Steps
from tpuscope.model.hosts import natural_key
from tpuscope.model.trace import Trace
from tpuscope.model.units import duration_column_unit, format_duration_in
from tpuscope.ui.analysis_hub import AnalysisHub
from tpuscope.ui.overview_chart import PART_COLORS, POD_PART_COLORS, StepPartsChart
from tpuscope.ui.pod.heatmap import PodPanel
from tpuscope.ui.views import FindingAt, OpRow, View
from tpuscope.ui.widgets.card import Card, card_style_sheet, format_headline_duration
from tpuscope.ui.widgets.code_spans import code_spans_html, without_code_marks
from tpuscope.ui.widgets.delegates import (
    EXPLANATION_ROLE,
    MARKED_TITLE_ROLE,
    PERCENT_ROLE,
    ExplainedItemDelegate,
    PercentBarDelegate,
)
from tpuscope.ui.widgets.flow import FlowLayout
from tpuscope.ui.widgets.labels import heading, message_label, mute, muted_label
from tpuscope.ui.widgets.page import ScrollPage, titled_panel
from tpuscope.ui.widgets.severity import severity_icon
from tpuscope.ui.widgets.tables import height_for_rows, style_list_table

TOP_OPS_ROWS = 10  # ops listed; the Ops view has all of them
TOP_FINDINGS_ROWS = 8  # findings listed; the Diagnostics view has all of them
# A card asks at most this much room on its row (a pod's hosts card and a long window sentence wrap):
# the eight cards of a TPU profile (async wait included) then fit one row of a 1366-pixel laptop screen.
CARD_WIDTH_CAP_PX = 170
OP_COLUMN_CAP_PX = 320  # the op names' column fits them up to this (a GPU kernel's name runs on)


class OverviewView(View):
    """Headline cards, per-step chart, top ops and top findings of one trace."""

    overviewReady = Signal(object)  # the Overview shown (tests and the status bar use it)

    def __init__(self, hub: AnalysisHub | None = None, parent: QWidget | None = None):
        super().__init__(hub, parent)
        self.trace: Trace | None = None
        self.overview: Overview | None = None
        self._build()
        self._show_message("Open a profile to see its overview.")
        self.follow_trace(self._on_trace)
        # Asked for once the Overview is on screen (it is the first tab after a load): a window showing
        # another tab (`screenshot --view timeline`) does not wait for the rules over every event.
        self.subscribe_when_shown(STEPS_RESULT, self._fill_steps_card)
        self.subscribe_when_shown(FRAMEWORK, self._fill_framework_card)
        # The figures first, the findings when the rules have run (they take longer than the rest).
        self.subscribe_when_shown(OVERVIEW_FIGURES, self._show, self._on_failed)
        self.subscribe_when_shown(OVERVIEW, self._show, self._on_failed)
        # The headline numbers (step time, duty cycle, async wait) are the metrics' (issue 33): one
        # value per quantity, the one every other output shows, each labelled with its window.
        self.subscribe_when_shown(METRICS, self._fill_metric_cards, self._on_failed)

    # -- construction --------------------------------------------------------------------------
    def _build(self) -> None:
        self.title = QLabel("")
        title_font = self.title.font()
        title_font.setPointSizeF(title_font.pointSizeF() + 4)
        title_font.setBold(True)
        self.title.setFont(title_font)
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.title.setWordWrap(True)  # a run of many hosts names them all
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.RichText)  # its step description names code: `jit_f`
        mute(self.status)

        self.cards: dict[str, Card] = {}
        card_row = FlowLayout(spacing_px=10, cap_px=CARD_WIDTH_CAP_PX)  # wraps to the rows the width needs
        specs = (
            ("devices", "Devices", "ops"),
            ("hosts", "Hosts", "timeline"),
            ("framework", "Framework", "diagnostics"),
            ("span", "Profile span", "timeline"),
            ("steps", "Steps", "timeline"),
            ("step_time", "Step time (mean)", "timeline"),
            ("duty_cycle", "Device duty cycle", "ops"),
            ("async_wait", "Async wait", "diagnostics"),  # shown when the devices ran async -done ops
        )
        for key, caption, target in specs:
            card = Card(caption, target, self)
            card.clicked.connect(lambda key: self.openRequested.emit(key, None))
            self.cards[key] = card
            card_row.addWidget(card)

        self.step_plot = StepPartsChart()
        self.step_plot.stepPicked.connect(self.zoom_to_step)
        self.legend = QLabel("")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)  # on a narrow window it wraps instead of widening the page
        self.no_steps = message_label()
        self.chart_stack = QStackedWidget()
        self.chart_stack.addWidget(self.step_plot)
        self.chart_stack.addWidget(self.no_steps)
        self.chart_stack.setMinimumHeight(220)
        chart_header = QHBoxLayout()
        self.chart_title = heading("Where step time goes")
        chart_header.addWidget(self.chart_title)
        # A run of several hosts: the pod (mean of its hosts) or one host (`_fill_host_picker`).
        self.host_picker = QComboBox()
        self.host_picker.setToolTip(
            "Whose steps the chart shows: the pod (the mean over its hosts) or one host"
        )
        self.host_picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.host_picker.currentIndexChanged.connect(self._on_host_picked)
        self.host_picker.hide()
        chart_header.addWidget(self.host_picker)
        chart_header.addSpacing(12)
        chart_header.addWidget(self.legend, 3)
        self.chart_hint = muted_label("double-click a step to see it on the timeline")
        self.chart_hint.setWordWrap(True)
        self.chart_hint.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        chart_header.addWidget(self.chart_hint, 2)
        # Under the header on a pod: the headline split of what the chart shows (the metrics' numbers).
        self.chart_caption = muted_label()
        self.chart_caption.setWordWrap(True)
        self.chart_caption.hide()
        self.chart_split: dict[str, float | None] = {}  # the caption's split, percent (tests read it)
        self.pod_split: PodStepSplit | None = None  # what the chart shows of a pod, None otherwise

        self.ops_table = QTableWidget(0, 4)
        self.ops_table.setHorizontalHeaderLabels(["Op", "Program", "Self time", "Share of self time"])
        style_list_table(self.ops_table)
        self.ops_table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.ops_table.setWordWrap(False)
        self.ops_table.setTextElideMode(Qt.TextElideMode.ElideRight)  # a name's start says what it is
        self.ops_table.setCursor(Qt.CursorShape.PointingHandCursor)
        self.ops_table.setItemDelegateForColumn(3, PercentBarDelegate(self.ops_table))
        header = self.ops_table.horizontalHeader()
        # The op name first (its text's width, up to a cap, set as the rows arrive); the program
        # takes what is left and elides first (issue 23).
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Fixed)
        header.resizeSection(0, 190)
        header.resizeSection(3, 150)
        self.ops_table.cellClicked.connect(lambda row, _column: self._on_op_clicked(row))
        self.ops_empty = message_label()
        self.ops_stack = QStackedWidget()
        self.ops_stack.addWidget(self.ops_table)
        self.ops_stack.addWidget(self.ops_empty)
        self.ops_caption = muted_label()

        self.findings_list = QListWidget()
        self.findings_list.setWordWrap(True)
        self.findings_list.setItemDelegate(ExplainedItemDelegate(self.findings_list))
        self.findings_list.setUniformItemSizes(False)
        self.findings_list.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.findings_list.setCursor(Qt.CursorShape.PointingHandCursor)
        self.findings_list.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.findings_list.itemClicked.connect(self._on_finding_clicked)
        self.findings_caption = muted_label()

        # Both lists are as tall as TOP_OPS_ROWS table rows; the chart takes the rest of the page.
        rows_px = height_for_rows(self.ops_table, TOP_OPS_ROWS)
        for widget in (self.ops_stack, self.findings_list):
            widget.setFixedHeight(rows_px)
        ops_panel = titled_panel("Top ops by self time", self.ops_caption, self.ops_stack)
        findings_panel = titled_panel("Findings", self.findings_caption, self.findings_list)
        bottom = QHBoxLayout()
        bottom.setSpacing(14)
        bottom.addWidget(ops_panel, 3)
        bottom.addWidget(findings_panel, 2)

        self.pod_caption = muted_label("per host and step; the table sorts by any column")
        self.pod_panel = PodPanel()
        self.pod_panel.stepRequested.connect(self._on_pod_step)
        self.pod_section = titled_panel("Hosts × steps", self.pod_caption, self.pod_panel)
        self.pod_section.hide()

        page = ScrollPage(floor_px=720)  # below this the chart and lists get too short: scroll
        page.setObjectName("overviewPage")
        page_column = QVBoxLayout(page)
        page_column.setContentsMargins(16, 12, 16, 12)
        page_column.setSpacing(10)
        page_column.addWidget(self.title)
        page_column.addWidget(self.status)
        page_column.addLayout(card_row)
        page_column.addSpacing(4)
        page_column.addLayout(chart_header)
        page_column.addWidget(self.chart_caption)
        page_column.addWidget(self.chart_stack, 1)
        page_column.addSpacing(4)
        page_column.addWidget(self.pod_section)
        page_column.addLayout(bottom)
        self.page = page
        page.setStyleSheet(card_style_sheet(self.palette()))

        scroll = QScrollArea()
        scroll.setWidget(page)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        # Everything wraps to the width (cards, captions, legend); what still cannot scrolls.
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)
        self._set_legend(True)

    # -- input -----------------------------------------------------------------------------------
    def _on_trace(self, trace: Trace | None) -> None:
        """A new trace: its own facts at once, the rest as the analyses finish."""
        self.trace = trace
        self.overview = None
        self._clear_host_picker()  # the last run's hosts are not this one's
        if trace is None:
            self._show_message("Open a profile to see its overview.")
            return
        self._show_message("Computing the overview…", title=_profile_name(trace))
        self._fill_trace_cards(trace)

    # -- results ---------------------------------------------------------------------------------
    def _on_failed(self, error: Exception) -> None:
        self.status.setText(html.escape(f"The overview failed: {type(error).__name__}: {error}"))

    def _show_message(self, message: str, title: str = "") -> None:
        """An empty page saying `message` (before loading, while computing)."""
        self.title.setText(title or "Overview")
        self.status.setText(html.escape(message))
        for card in self.cards.values():
            card.set("–")
        self.cards["async_wait"].hide()
        self.step_plot.reset()
        self._clear_host_picker()
        self.no_steps.setText("")
        self.chart_stack.setCurrentWidget(self.no_steps)
        self.ops_table.setRowCount(0)
        self.ops_caption.setText("")
        self.ops_empty.setText("")
        self.ops_stack.setCurrentWidget(self.ops_empty)
        self.findings_list.clear()
        self.findings_caption.setText("")
        self.pod_section.hide()

    def _show(self, overview: Overview) -> None:
        """Shows the figures (`overview.report` None: findings still being diagnosed) or all of it."""
        if overview.report is None and self.overview is not None and self.overview.report is not None:
            return  # the whole overview is on screen already
        self.overview = overview
        self.title.setText(_profile_name(self.trace) if self.trace is not None else "Overview")
        self.status.setText(code_spans_html(_status_text(overview)))
        self._fill_cards(overview)
        self._fill_steps_card(overview.steps)
        self._fill_framework_card(overview.framework)
        self._draw_steps(overview)
        self._fill_ops(overview)
        self._fill_pod(overview)
        if overview.report is None:
            self.findings_list.clear()
            self.findings_caption.setText("diagnosing…")
            return
        self._fill_findings(overview)
        self.overviewReady.emit(overview)

    # -- cards -----------------------------------------------------------------------------------
    def _fill_cards(self, o: Overview) -> None:
        d = o.devices
        if d.kind:
            ran = f"{d.active} of {d.count} ran ops" if d.active < d.count else "all ran ops"
            detail = f"{d.kind} · {ran}" if d.count > 1 else _single_device_detail(d.kind)
            self.cards["devices"].set(d.label, detail, "Click to open the op breakdown")
        else:
            none = (
                "no device activity recorded (host-only profile)"
                if o.completeness.complete
                else "no device activity in the part read (the profile is incomplete)"
            )
            self.cards["devices"].set("None", none, "Click to open the op breakdown")
        # Where there is a number, the metrics fill the card (`_fill_metric_cards`); here, why there is none.
        if o.step_time is None:
            self.cards["step_time"].set("–", "no steps")
        if o.duty_cycle is None:
            missing = "recorded" if o.completeness.complete else "in the part read"
            self.cards["duty_cycle"].set("–", f"no device activity {missing}")

    def _fill_metric_cards(self, metrics: Metrics) -> None:
        """Step time, duty cycle and async wait as the metrics give them: each value through the one
        formatter of its unit, labelled with the window it covers, its definition in the tooltip."""
        mean, median, p95 = (metrics.get(n) for n in ("step_time_mean", "step_time_median", "step_time_p95"))
        if mean is not None and mean.value is not None:
            self.cards["step_time"].set(
                _metric_text(mean),
                f"{_window(mean)}\nmedian {_metric_text(median)}\np95 {_metric_text(p95)}",
                _definitions((mean, median, p95), "Click for the timeline."),
            )
        duty, in_steps = metrics.get("duty_cycle"), metrics.get("step_duty_cycle")
        if duty is not None and duty.value is not None:
            within = "" if in_steps is None or in_steps.value is None else f"\n{_shown(in_steps)}"
            self.cards["duty_cycle"].set(
                _metric_text(duty),
                f"{_window(duty)}{within}",
                _definitions((duty, in_steps), "Click for the ops."),
            )
        wait, wait_in_steps = metrics.get("async_wait_share"), metrics.get("async_wait_step_share")
        card = self.cards["async_wait"]
        card.setVisible(wait is not None and bool(wait.value))  # none on a profile without async ops
        if wait is not None and wait.value:
            within = (
                "" if wait_in_steps is None or wait_in_steps.value is None else f"\n{_shown(wait_in_steps)}"
            )
            card.set(
                _metric_text(wait),
                f"{_window(wait)}{within}",
                _definitions((wait, wait_in_steps), "Click for the diagnostics."),
            )

    def _fill_trace_cards(self, trace: Trace) -> None:
        """What the trace says by itself, shown before any analysis is done."""
        hosts = list(trace.hosts)
        self.cards["hosts"].set(str(len(hosts)), ", ".join(hosts), "Click to open the timeline")
        self.cards["span"].set(
            format_headline_duration(trace.duration_ps),
            f"{trace.event_count:,} events",
            "Click to open the timeline",
        )

    def _fill_steps_card(self, steps: Steps) -> None:
        if len(steps):
            source = STEP_SOURCE_LABELS.get(steps.source, steps.source)
            self.cards["steps"].set(
                f"{len(steps):,}",
                f"from {source}",
                without_code_marks(f"Steps from {steps.description}. Click for the timeline."),
            )
        else:
            self.cards["steps"].set("None", "no steps found", NO_STEPS_TEXT)

    def _fill_framework_card(self, framework: Framework) -> None:
        evidence = framework.evidence
        self.cards["framework"].set(
            framework.name,
            evidence.split(" (", 1)[0],  # the clue without its examples: the tooltip has them
            f"Detected from {evidence}. Click to open the diagnostics.",
        )

    # -- per-step chart --------------------------------------------------------------------------
    def _set_legend(self, has_devices: bool, parts: tuple[str, ...] = PARTS) -> None:
        swatch = "<span style='color:{};font-size:large'>■</span>&nbsp;{}"
        if not has_devices:
            parts = tuple(p for p in parts if p != "busy")  # nothing can be busy
        # An entry never breaks inside ("waiting for / compilation"); a narrow page wraps between them.
        labels = [html.escape(part_label(p, has_devices)).replace(" ", "&nbsp;") for p in parts]
        items = [swatch.format(PART_COLORS[p].name(), label) for p, label in zip(parts, labels, strict=True)]
        self.legend.setText("&nbsp;&nbsp; ".join(items))

    def _chart_series(self) -> StepSeries | None:
        """What the chart shows: the steps, or equal slices of the profile when there are none."""
        o = self.overview
        if o is None:
            return None
        return o.series if len(o.series) else o.slices

    def _draw_steps(self, o: Overview) -> None:
        self.step_plot.reset()
        if _charted_pod(o):
            self._fill_host_picker(o)
            self._draw_pod()
            return
        self._clear_host_picker()
        has_devices = o.duty_cycle is not None
        self._set_legend(has_devices)
        series = self._chart_series()
        if series is None or len(series) == 0:
            self.chart_title.setText("Where step time goes")
            self.no_steps.setText(f"No steps found: {NO_STEPS_TEXT}.")
            self.chart_stack.setCurrentWidget(self.no_steps)
            self.chart_hint.setVisible(False)
            return
        self.chart_stack.setCurrentWidget(self.step_plot)
        self.chart_hint.setVisible(True)
        stepped = series is o.series
        if stepped:
            self.chart_title.setText("Where step time goes")
            self.chart_hint.setText("double-click a step to see it on the timeline")
        else:
            self.chart_title.setText("Device activity over the profile")
            self.chart_hint.setText(
                f"no steps found: the profile in {len(series)} equal slices · double-click one to zoom there"
            )
            self._set_legend(has_devices, tuple(p for p in PARTS if p != "input"))  # input waits need steps
        self.step_plot.show_series(series, stepped, has_devices)

    # -- the pod's or one host's steps -------------------------------------------------------------
    def _clear_host_picker(self) -> None:
        self.host_picker.blockSignals(True)
        self.host_picker.clear()
        self.host_picker.blockSignals(False)
        self.host_picker.hide()
        self.chart_caption.hide()
        self.chart_caption.setText("")
        self.chart_split = {}
        self.pod_split = None

    def _fill_host_picker(self, o: Overview) -> None:
        """The pod first (the default), then each host with steps in natural order (worker2 before
        worker10); kept as it is when the same hosts are shown again (the figures, then the findings)."""
        assert o.pod is not None
        hosts = sorted(o.pod.hosts, key=natural_key)
        wanted: list[str | None] = [None, *hosts]
        have = [self.host_picker.itemData(i) for i in range(self.host_picker.count())]
        if have == wanted:
            return
        self.host_picker.blockSignals(True)
        self.host_picker.clear()
        self.host_picker.addItem(f"Pod (mean of {len(hosts)} hosts)", None)
        for host in hosts:
            self.host_picker.addItem(host, host)
        self.host_picker.setCurrentIndex(0)
        self.host_picker.blockSignals(False)
        self.host_picker.show()

    def picked_host(self) -> str | None:
        """The host the chart shows, None for the pod."""
        return self.host_picker.currentData()

    def pick_host(self, host: str | None) -> None:
        """Shows `host`'s steps in the chart (None: the pod's)."""
        index = self.host_picker.findData(host) if host is not None else 0
        if index >= 0:
            self.host_picker.setCurrentIndex(index)

    def _on_host_picked(self, _index: int) -> None:
        if self.overview is not None and _charted_pod(self.overview):
            self._draw_pod()

    def _draw_pod(self) -> None:
        """The picked host's aligned steps, or the pod's mean, with its headline split as the caption."""
        o = self.overview
        assert o is not None and o.pod is not None and o.pod_metrics is not None
        host = self.picked_host()
        split = pod_step_split(o.pod, host)
        self.pod_split = split
        self.chart_title.setText(f"Where step time goes: {split.label}")
        self.chart_hint.setText("double-click a step to see it on the timeline")
        self.chart_hint.setVisible(True)
        self._set_pod_legend(split.parts_present())
        self.chart_stack.setCurrentWidget(self.step_plot)
        self.step_plot.show_pod(split)
        rows = {r.name: r for r in o.pod_metrics if (r.scope == POD if host is None else r.host == host)}
        self.chart_split = {part: rows[name].value for part, name in HEADLINE_SPLIT.items()}
        self.chart_caption.setText(_pod_caption(rows))
        self.chart_caption.setToolTip(
            _definitions(tuple(rows.get(n) for n in CAPTION_METRICS), POD_CAPTION_NOTE)
        )
        self.chart_caption.show()

    def _set_pod_legend(self, parts: tuple[str, ...]) -> None:
        swatch = "<span style='color:{};font-size:large'>■</span>&nbsp;{}"
        labels = [html.escape(POD_PART_LABELS[p]).replace(" ", "&nbsp;") for p in parts]
        items = [
            swatch.format(POD_PART_COLORS[p].name(), label) for p, label in zip(parts, labels, strict=True)
        ]
        self.legend.setText("&nbsp;&nbsp; ".join(items))

    def step_position_at(self, x: float) -> int | None:
        """The bar (position in the charted steps or slices) at chart coordinate `x`, or None."""
        return self.step_plot.bar_at(x)

    def zoom_to_step(self, position: int) -> None:
        """Asks the timeline to show charted step (or slice) `position` (0-based)."""
        split = self.pod_split
        if split is not None:  # a host's step, or the pod's: from its first host's start to its last's end
            if 0 <= position < len(split):
                self.zoomRequested.emit(int(split.start_ps[position]), int(split.end_ps[position]))
            return
        series = self._chart_series()
        if series is None or not 0 <= position < len(series):
            return
        self.zoomRequested.emit(int(series.start_ps[position]), int(series.end_ps[position]))

    # -- top ops ---------------------------------------------------------------------------------
    def _fill_ops(self, o: Overview) -> None:
        table = o.ops
        self.ops_table.setRowCount(0)
        if table is None:
            self.ops_caption.setText("")
            where = "this profile" if o.completeness.complete else "the part of this profile read"
            self.ops_empty.setText(
                f"No device ops in {where}\n(no TPU XLA Ops, GPU kernels or XLA:CPU thunks)."
            )
            self.ops_stack.setCurrentWidget(self.ops_empty)
            return
        self.ops_stack.setCurrentWidget(self.ops_table)
        rows = min(TOP_OPS_ROWS, len(table))
        shown = float(table.percent[:rows].sum())
        self.ops_caption.setText(
            (
                f"top {rows} of {len(table):,} ops: {shown:.1f}% of op self time"
                if rows < len(table)
                else f"all {rows} ops"
            )
            + " · click one to open the op breakdown"
        )
        self.ops_table.setRowCount(rows)
        right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        percent = table.percent
        self_unit = duration_column_unit(table.self_ps[:rows])  # one unit for the column (issue 33)
        for row in range(rows):
            name = table.label(table.name[row])
            program = table.label(table.program[row]) if table.program[row] else ""
            cells = [
                QTableWidgetItem(name),
                QTableWidgetItem(program),
                QTableWidgetItem(format_duration_in(table.self_ps[row], self_unit)),
                QTableWidgetItem(f"{percent[row]:.1f}%"),
            ]
            cells[0].setToolTip(name)
            cells[1].setToolTip(program)
            cells[2].setTextAlignment(right)
            cells[3].setData(PERCENT_ROLE, float(percent[row]))
            cells[3].setTextAlignment(right)
            for column, cell in enumerate(cells):
                cell.setData(Qt.ItemDataRole.UserRole, row)
                self.ops_table.setItem(row, column, cell)
        self.ops_table.resizeColumnToContents(0)
        header = self.ops_table.horizontalHeader()
        header.resizeSection(0, min(header.sectionSize(0), OP_COLUMN_CAP_PX))

    def _on_op_clicked(self, row: int) -> None:
        o = self.overview
        if o is None or o.ops is None or not 0 <= row < len(o.ops):
            return
        self.openRequested.emit("ops", OpRow(row))
        self.highlightRequested.emit(o.ops.events_of_row(row))

    # -- findings --------------------------------------------------------------------------------
    def _fill_findings(self, o: Overview) -> None:
        self.findings_list.clear()
        style = self.style()
        findings = o.findings
        if not findings and not o.completeness.complete:  # no all-clear on a part of the profile
            item = QListWidgetItem(
                QIcon(style.standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)),
                f"No problems found in {o.completeness.part_read()}.",
            )
            item.setToolTip(f"Incomplete profile: {o.completeness.reason}.")
            item.setFlags(Qt.ItemFlag.NoItemFlags | Qt.ItemFlag.ItemIsEnabled)
            self.findings_list.addItem(item)
            self.findings_caption.setText("the profile could not be read whole: the rules saw a part of it")
            return
        if not findings:
            item = QListWidgetItem(
                QIcon(style.standardIcon(QStyle.StandardPixmap.SP_DialogApplyButton)),
                "No integration problems found.",
            )
            item.setFlags(Qt.ItemFlag.NoItemFlags | Qt.ItemFlag.ItemIsEnabled)
            self.findings_list.addItem(item)
            self.findings_caption.setText("the diagnose rules found nothing to report")
            return
        counts = {s: sum(f.severity == s for f in findings) for s in Severity}
        tally = ", ".join(
            f"{counts[s]} {s.label}"
            for s in (Severity.CRITICAL, Severity.WARNING, Severity.INFO)
            if counts[s]
        )
        self.findings_caption.setText(f"{tally} · click one to open the diagnostics")
        for position, finding in enumerate(findings[:TOP_FINDINGS_ROWS]):
            # The item's text is plain; the delegate paints the code spans (MARKED_TITLE_ROLE).
            item = QListWidgetItem(severity_icon(style, finding.severity), without_code_marks(finding.title))
            item.setData(MARKED_TITLE_ROLE, finding.title)
            item.setToolTip(_finding_tooltip(finding))
            item.setData(Qt.ItemDataRole.UserRole, position)
            explanation = f"{sentence_case(finding.cost_words)}. {finding.explanation}"
            item.setData(EXPLANATION_ROLE, explanation)  # painted with its code spans as code
            self.findings_list.addItem(item)
        if len(findings) > TOP_FINDINGS_ROWS:
            more = QListWidgetItem(f"… {len(findings) - TOP_FINDINGS_ROWS} more in Diagnostics")
            more.setData(Qt.ItemDataRole.UserRole, -1)
            self.findings_list.addItem(more)

    def _on_finding_clicked(self, item: QListWidgetItem) -> None:
        o = self.overview
        position = item.data(Qt.ItemDataRole.UserRole)
        if o is None or position is None:
            return
        if 0 <= position < len(o.findings) and self.trace is not None:
            self.openRequested.emit("diagnostics", FindingAt(position))
            self.highlightRequested.emit(evidence_events(self.trace, o.findings[position].evidence))
        else:
            self.openRequested.emit("diagnostics", None)

    # -- pod -----------------------------------------------------------------------------------------
    def _fill_pod(self, o: Overview) -> None:
        self.pod_panel.set_pod(o.pod)
        self.pod_section.setVisible(o.pod is not None and len(o.pod.hosts) >= 2 and o.pod.step_count > 0)

    def _on_pod_step(self, item: dict) -> None:
        """A heat-map cell: that host's step on the timeline, its step event outlined."""
        if self.trace is None:
            return
        matches = evidence_events(self.trace, [item])
        if matches:
            self.highlightRequested.emit(matches)
            self.trackRequested.emit(matches[0][0])
        self.zoomRequested.emit(int(item["start_ps"]), max(int(item["end_ps"]), int(item["start_ps"]) + 1))


# -- helpers -------------------------------------------------------------------------------------
# What each scope of a metric covers, as a card's detail line says it (issue 33: a number is labelled
# with its window, so 80.3% of the profile and 100.0% of step time are not read as one quantity).
WINDOW_WORDS = {PROFILE: "of the profile", STEPS: "over the steps", POD: "of the pod"}
SHARE_WINDOW_WORDS = {PROFILE: "of the profile", STEPS: "of step time", POD: "of the pod"}
SHARE_UNITS = (FRACTION, PERCENT)


# The headline split's parts (`overview --json` `step_time_split_percent`) and their metrics.
HEADLINE_SPLIT = {
    "busy": "busy_share",
    "input": "input_share",
    "compile": "compile_share",
    "idle": "idle_share",
}
CAPTION_METRICS = ("step_time_mean", *HEADLINE_SPLIT.values(), "collective_share")
POD_CAPTION_NOTE = "The bars: each aligned step's parts (the pod's: the mean over its hosts, step by step)."


def _charted_pod(o: Overview) -> bool:
    """Whether the step chart shows a pod (several hosts with aligned steps) with its picker."""
    pod = o.pod
    return pod is not None and o.pod_metrics is not None and len(pod.hosts) >= 2 and pod.step_count > 0


def _pod_caption(rows: dict[str, MetricValue]) -> str:
    """The headline of what the pod chart shows (the pod's rows or one host's): step time and the
    split, as `overview --json` prints them (`headline`, `headline.per_host[host]`)."""

    def text(name: str) -> str:
        return _metric_text(rows.get(name))

    over = rows["step_time_mean"].over or rows["step_time_mean"].host or ""
    return (
        f"{over}: step time {text('step_time_mean')} (mean) · of step time: busy {text('busy_share')} "
        f"(in collectives {text('collective_share')}), waiting for input {text('input_share')}, "
        f"compiling {text('compile_share')}, host work and other idle {text('idle_share')}"
    )


def _metric_text(row: MetricValue | None) -> str:
    """A metric's value as every output shows it (`format_metric`: the one formatter per unit)."""
    return "–" if row is None else format_metric(row.value, row.unit)


def _window(row: MetricValue) -> str:
    """The window a metric covers, in words: "of the profile", "of step time", "over the steps"; a
    pod's row (scope `pod`) covers its registered window, as the mean over the hosts it names."""
    registered = METRICS_BY_NAME.get(row.name)
    scope = registered.scope if registered is not None and row.scope == POD else row.scope
    words = (SHARE_WINDOW_WORDS if row.unit in SHARE_UNITS else WINDOW_WORDS).get(scope, f"({scope})")
    if row.name == "async_wait_share":  # a share of the ops' time, not of the profile span
        words = "of device op time in the profile"
    return f"{words} ({row.over})" if row.over else words


def _shown(row: MetricValue) -> str:
    """A second value on a card: its number and its window ("100.0% of step time")."""
    return f"{_metric_text(row)} {_window(row)}"


def _definitions(rows: tuple[MetricValue | None, ...], action: str) -> str:
    """A card's tooltip: each metric it shows, named, with its window and one-line definition."""
    lines = [f"{r.name} ({r.scope}): {r.definition}." for r in rows if r is not None]
    return "\n".join([*lines, action])


def _single_device_detail(kind: str) -> str:
    return "XLA runs the ops on the host CPU" if kind == "CPU" else f"one {kind}"


def _profile_name(trace: Trace) -> str:
    names = [getattr(s, "name", str(s)) for s in trace.sources]
    return ", ".join(names) if names else "Overview"


def _status_text(o: Overview) -> str:
    if len(o.steps):
        return f"{len(o.steps):,} steps from {o.steps.description}."
    return f"No steps: {NO_STEPS_TEXT}."


def _finding_tooltip(finding: Finding) -> str:
    return without_code_marks(f"{finding.severity.label} · {finding.id}\n\n{finding.explanation}")
