"""The "Roofline" view: each op placed by its operational intensity and achieved FLOP rate, under
the chip's roofs (XProf's roofline_model).

Log-log axes: FLOPs per byte accessed across, FLOP/s up. The roofs are the chip's peak FLOP/s and
its HBM bandwidth (from the profile's own device stats, else the TPU table:
`tpuscope.analysis.roofline.device_peaks`), meeting at the ridge point, which is marked. Each op of
the op table by op with known FLOPs and bytes is a dot (`tpuscope.analysis.ops.roofline_points`),
its area following its self time and its colour its category; hovering a dot names it, clicking it
selects it (outlined on the timeline, its code in the Details dock). Pickers narrow the chart to
one program and to a range of steps (each op's FLOPs, bytes and self time summed over its
occurrences that start inside the range, as XProf's roofline_model gives them per step).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from tpuscope.analysis.async_ops import NO_RATE_REASON
from tpuscope.analysis.ops import OpTable, RooflinePoints, roofline_points
from tpuscope.analysis.roofline import BOUND_NAMES, bound_by
from tpuscope.analysis.session import STEPS, op_table_result
from tpuscope.analysis.steps import Steps
from tpuscope.model.trace import Trace
from tpuscope.model.units import format_duration
from tpuscope.ui.analysis_hub import AnalysisHub
from tpuscope.ui.timeline.palette import PALETTE, colour_of_key
from tpuscope.ui.views import View
from tpuscope.ui.widgets.charts import make_chart

ALL_PROGRAMS = "All programs"
WHOLE_PROFILE = "Whole profile"
# Dot diameters: the op with most self time gets the largest; areas follow time (diameter ~ sqrt).
DOT_MIN_PX, DOT_MAX_PX = 7.0, 34.0
ROOF_PEN = pg.mkPen(QColor(40, 40, 40), width=2)
RIDGE_COLOR = QColor(214, 39, 40)
PICKED_PEN = pg.mkPen(QColor(0, 0, 0), width=3)
AXIS_MARGIN = 4.0  # the axes reach this factor past the dots and the ridge point on each side


def dot_sizes(self_ps: np.ndarray) -> np.ndarray:
    """Diameters in pixels whose areas follow the self times."""
    if not len(self_ps):
        return np.empty(0)
    share = np.sqrt(self_ps / max(float(self_ps.max()), 1.0))
    return DOT_MIN_PX + (DOT_MAX_PX - DOT_MIN_PX) * share


def ridge_label_anchor(low_x: float, high_x: float, ridge: float) -> tuple[float, float]:
    """Where the peaks' label hangs from the ridge point: above the roof, on the side of the
    ridge with more of the chart's width, so that it stays inside the plot at any window size and
    names the point it describes."""
    span = np.log10(high_x) - np.log10(low_x)
    left_share = (np.log10(ridge) - np.log10(low_x)) / span if span > 0 else 0.5
    return (1.05, 1.2) if left_share >= 0.5 else (-0.05, 1.2)


def decade_ticks(low: float, high: float) -> list[list[tuple[float, str]]]:
    """Log-axis ticks (in log10 units): labelled powers of ten, unlabelled 2..9 between them."""
    first, last = int(np.floor(np.log10(low))), int(np.ceil(np.log10(high)))
    major = [(float(k), f"{10.0**k:g}" if -2 <= k <= 3 else f"1e{k}") for k in range(first, last + 1)]
    minor = [(float(np.log10(m * 10.0**k)), "") for k in range(first, last) for m in range(2, 10)]
    return [major, minor]


class RooflineView(View):
    """The roofline of the op table by op over all devices (module docstring)."""

    def __init__(self, hub: AnalysisHub | None = None, parent: QWidget | None = None) -> None:
        super().__init__(hub, parent)
        self.table: OpTable | None = None
        self.points: RooflinePoints | None = None
        self.picked_row = -1  # the op table row of the dot clicked last
        self.steps: Steps | None = None
        self._build()
        self.follow_trace(self._on_trace)
        self.subscribe_when_shown(STEPS, self._show_steps)
        self.subscribe_when_shown(op_table_result("op", "all"), self._show_table)

    def _build(self) -> None:
        self.program_combo = QComboBox()
        # Long program names are elided, so the tab fits beside the Details dock on a laptop screen.
        self.program_combo.setMinimumContentsLength(20)
        self.program_combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.program_combo.currentIndexChanged.connect(lambda _: self._draw())
        # A step range: the first step (or the whole profile) and the last step, by position.
        self.first_step_combo = QComboBox()
        self.last_step_combo = QComboBox()
        self.first_step_combo.currentIndexChanged.connect(lambda _: self._on_step_range())
        self.last_step_combo.currentIndexChanged.connect(lambda _: self._on_step_range())
        self.summary = QLabel("No profile loaded.")
        self.summary.setWordWrap(True)
        self.picked_label = QLabel("")
        self.picked_label.setWordWrap(True)
        self.picked_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Program:"))
        controls.addWidget(self.program_combo)
        controls.addSpacing(16)
        controls.addWidget(QLabel("Steps:"))
        controls.addWidget(self.first_step_combo)
        self.step_to_label = QLabel("to")
        controls.addWidget(self.step_to_label)
        controls.addWidget(self.last_step_combo)
        controls.addStretch(1)
        self.chart = make_chart()
        self.chart.setLogMode(x=True, y=True)
        self.chart.showGrid(x=True, y=True, alpha=0.25)
        self.chart.setLabel("bottom", "operational intensity (FLOP/byte)")
        self.chart.setLabel("left", "FLOP rate (FLOP/s)")
        self.chart.getPlotItem().setMenuEnabled(False)
        for side in ("left", "bottom"):
            self.chart.getAxis(side).enableAutoSIPrefix(False)
        self.legend = self.chart.addLegend(offset=(-10, -10))
        self.scatter: pg.ScatterPlotItem | None = None
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.summary)
        layout.addWidget(self.chart, 1)
        layout.addWidget(self.picked_label)

    def _on_trace(self, trace: Trace | None) -> None:
        self.table = self.points = None
        self.picked_row = -1
        self.program_combo.blockSignals(True)
        self.program_combo.clear()
        self.program_combo.blockSignals(False)
        self._show_steps(None, redraw=False)
        self.chart.clear()
        self.legend.clear()
        self.picked_label.setText("")
        self.summary.setText("No profile loaded." if trace is None else "Computing the op table\u2026")

    def _show_table(self, table: OpTable | None) -> None:
        self.table = table
        self.program_combo.blockSignals(True)
        self.program_combo.clear()
        self.program_combo.addItem(ALL_PROGRAMS, None)
        if table is not None:
            for program in roofline_points(table).programs:
                self.program_combo.addItem(program, program)
        self.program_combo.blockSignals(False)
        self._draw()

    def _show_steps(self, steps: Steps | None, redraw: bool = True) -> None:
        self.steps = steps if steps is not None and len(steps) else None
        for combo in (self.first_step_combo, self.last_step_combo):
            combo.blockSignals(True)
            combo.clear()
        self.first_step_combo.addItem(WHOLE_PROFILE, None)
        if self.steps is not None:
            for position, number in enumerate(self.steps.number.tolist()):
                self.first_step_combo.addItem(f"step {number}", position)
                self.last_step_combo.addItem(f"step {number}", position)
            self.last_step_combo.setCurrentIndex(len(self.steps) - 1)
        for combo in (self.first_step_combo, self.last_step_combo):
            combo.blockSignals(False)
        self.first_step_combo.setEnabled(self.steps is not None)
        self._enable_last_step()
        if redraw:
            self._draw()

    def _enable_last_step(self) -> None:
        ranged = self.first_step_combo.currentData() is not None
        self.last_step_combo.setEnabled(ranged)
        self.step_to_label.setEnabled(ranged)

    def _on_step_range(self) -> None:
        self._enable_last_step()
        self._draw()

    def set_step_range(self, first: int | None, last: int | None = None) -> None:
        """Shows the ops of steps `first`..`last` (positions in the profile's steps, both included;
        `last` None: `first` alone), or of the whole profile when `first` is None."""
        self.last_step_combo.blockSignals(True)
        found = self.last_step_combo.findData(first if last is None else last)
        if found >= 0:
            self.last_step_combo.setCurrentIndex(found)
        self.last_step_combo.blockSignals(False)
        found = self.first_step_combo.findData(first)
        if found >= 0:
            self.first_step_combo.setCurrentIndex(found)
        self._on_step_range()

    def step_window(self) -> tuple[int, int] | None:
        """The picked steps' time range (trace ps, end exclusive), None for the whole profile."""
        first, last = self.first_step_combo.currentData(), self.last_step_combo.currentData()
        if self.steps is None or first is None:
            return None
        last = first if last is None else last
        first, last = min(first, last), max(first, last)
        return int(self.steps.start_ps[first]), int(self.steps.end_ps[last])

    def set_program(self, program: str | None) -> None:
        """Shows one program's ops (a program label as the op table names it), None for all."""
        found = self.program_combo.findData(program)
        if found >= 0:
            self.program_combo.setCurrentIndex(found)

    def _draw(self) -> None:
        self.chart.clear()
        self.legend.clear()
        self.scatter = None
        table = self.table
        if table is None:
            self.chart.setVisible(False)
            self.summary.setText("This profile holds no device ops.")
            return
        window = self.step_window()
        self.points = points = roofline_points(table, self.program_combo.currentData(), window)
        peaks = table.peaks
        self.chart.setVisible(bool(len(points)))  # empty log axes say nothing
        if not len(points):
            self.summary.setText(
                "No op of this selection has both FLOPs and bytes accessed recorded, so none can be placed."
            )
            return
        x, y = points.intensity, points.flop_rate
        low_x, high_x = float(x.min()) / AXIS_MARGIN, float(x.max()) * AXIS_MARGIN
        high_y = float(y.max()) * AXIS_MARGIN
        if peaks is not None:
            peak_flops = peaks.teraflops_per_second * 1e12
            bandwidth = peaks.hbm_gigabytes_per_second * 1e9
            ridge = peaks.ridge_flops_per_byte
            low_x, high_x = min(low_x, ridge / AXIS_MARGIN), max(high_x, ridge * AXIS_MARGIN)
            high_y = max(high_y, peak_flops * AXIS_MARGIN)  # room for the peaks label above the roof
            roof_x = np.array([low_x, ridge, high_x])
            roof_y = np.array([bandwidth * low_x, peak_flops, peak_flops])
            self.chart.plot(roof_x, roof_y, pen=ROOF_PEN, name=f"roofs ({peaks.source})")
            ridge_dot = pg.ScatterPlotItem(
                [np.log10(ridge)],
                [np.log10(peak_flops)],
                size=12,
                symbol="d",
                brush=pg.mkBrush(RIDGE_COLOR),
                pen=pg.mkPen("k"),
            )
            self.chart.addItem(ridge_dot)
            self.legend.addItem(ridge_dot, f"ridge point {ridge:.4g} FLOP/byte")
            label = pg.TextItem(
                f"{peaks.teraflops_per_second:g} TFLOP/s · {peaks.hbm_gigabytes_per_second:g} GB/s HBM",
                color=self.chart.palette().color(QPalette.ColorRole.Text),  # light or dark theme
                anchor=ridge_label_anchor(low_x, high_x, ridge),
            )
            label.setPos(np.log10(ridge), np.log10(peak_flops))
            self.chart.addItem(label)
        sizes = dot_sizes(points.self_ps)
        # Scatter items are placed in the log axes' own coordinates (pyqtgraph maps only line plots).
        lx, ly = np.log10(x).tolist(), np.log10(y).tolist()
        categories = [table.label(table.category[r]) if table.category[r] else "(none)" for r in points.rows]
        brushes = [pg.mkBrush(self.category_colour(c)) for c in categories]
        spots = [
            {
                "pos": (lx[k], ly[k]),
                "size": float(sizes[k]),
                "brush": brushes[k],
                "data": int(row),
            }
            for k, row in enumerate(points.rows)
        ]
        self.scatter = pg.ScatterPlotItem(
            spots=spots, pen=pg.mkPen(QColor(60, 60, 60)), hoverable=True, tip=self._tip, hoverPen=PICKED_PEN
        )
        self.scatter.sigClicked.connect(self._on_clicked)
        self.chart.addItem(self.scatter)
        for category in dict.fromkeys(categories):
            swatch = pg.ScatterPlotItem(size=10, brush=pg.mkBrush(self.category_colour(category)))
            self.legend.addItem(swatch, category)
        low_y = float(y.min()) / AXIS_MARGIN
        self.chart.setXRange(np.log10(low_x), np.log10(high_x), padding=0)
        self.chart.setYRange(np.log10(low_y), np.log10(high_y), padding=0)
        # Powers of ten only, labelled once each: pyqtgraph's log axes also label the 2..9 between
        # them, which run together on a wide chart.
        self.chart.getAxis("bottom").setTicks(decade_ticks(low_x, high_x))
        self.chart.getAxis("left").setTicks(decade_ticks(low_y, high_y))
        shown = int(points.self_ps.sum())
        total = points.total_self_ps
        ridge_words = f"; ridge point {peaks.ridge_flops_per_byte:.4g} FLOP/byte" if peaks is not None else ""
        where = f" in {self._steps_words()}" if window is not None else ""
        share = f"{100.0 * shown / max(total, 1):.1f}%"
        self.summary.setText(
            f"{len(points):,} ops with FLOPs and bytes recorded, {format_duration(shown)} of "
            f"{format_duration(total)} device self time{where} ({share}){ridge_words}. "
            "Dot area: self time; colour: category. Hover a dot for its name, click it to select it."
        )

    def _steps_words(self) -> str:
        first, last = self.first_step_combo.currentText(), self.last_step_combo.currentText()
        first_at, last_at = self.first_step_combo.currentData(), self.last_step_combo.currentData()
        if last_at is None or first_at == last_at:
            return first
        return f"{first} to {last}" if first_at < last_at else f"{last} to {first}"

    def _point_of(self, row: int) -> int | None:
        """The position of op table row `row` among the dots drawn, None when it has none."""
        points = self.points
        if points is None:
            return None
        at = np.flatnonzero(points.rows == row)
        return int(at[0]) if len(at) else None

    @staticmethod
    def category_colour(category: str) -> QColor:
        return QColor(PALETTE[colour_of_key(category)])

    def _tip(self, x: float, y: float, data: int) -> str:
        table = self.table
        if table is None:
            return ""
        x, y = 10.0**x, 10.0**y
        at = self._point_of(data)
        self_ps = int(self.points.self_ps[at]) if self.points is not None and at is not None else 0
        return (
            f"{table.label(table.name[data])} ({table.label(table.program[data])})\n"
            f"{x:.4g} FLOP/byte, {y / 1e9:.4g} GFLOP/s, self {format_duration(self_ps)}"
        )

    def _on_clicked(self, _item, spots, _event=None) -> None:
        if len(spots):
            self.pick(int(spots[0].data()))

    def pick(self, row: int) -> None:
        """Selects op table row `row`: its dot ringed, its events outlined, its code in the Details dock."""
        table = self.table
        if table is None or not 0 <= row < len(table):
            return
        self.picked_row = row
        if self.scatter is not None:
            for spot in self.scatter.points():
                spot.setPen(PICKED_PEN if spot.data() == row else pg.mkPen(QColor(60, 60, 60)))
        events = table.events_of_row(row)
        self.highlightRequested.emit(events)
        if events:
            self.eventPicked.emit(events[0][0], int(events[0][1][0]))
        at = self._point_of(row)
        intensity, flop_rate = float(table.intensity[row]), float(table.flop_rate[row])
        bound = int(table.bound[row])
        if self.points is not None and at is not None:  # as placed: in the picked steps
            intensity, flop_rate = float(self.points.intensity[at]), float(self.points.flop_rate[at])
            bound = int(bound_by(np.array([intensity]), np.ones(1), table.peaks)[0])  # per byte
        rate = f"{flop_rate / 1e9:.4g} GFLOP/s" if table.rate_known[row] else f"no FLOP/s ({NO_RATE_REASON})"
        self.picked_label.setText(
            f"Selected: {table.label(table.name[row])} in {table.label(table.program[row])}: "
            f"{intensity:.4g} FLOP/byte, {rate}, bound by {BOUND_NAMES[bound]}"
        )
