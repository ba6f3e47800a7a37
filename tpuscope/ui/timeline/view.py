"""The timeline widget: ruler, step band, plane groups and tracks, drawn in batched QPainter calls.

Everything per event is numpy (tpuscope.ui.timeline.scene); this widget only
turns the frame into a few drawRects calls (one per colour), draws the
labels that fit, and maps mouse and keys to a time window: wheel zooms
around the cursor, drag pans, W/S zoom and A/D pan as in Perfetto and
chrome://tracing, Shift-drag selects a time range, double-click zooms to an
event. M marks a flag (tpuscope.ui.timeline.flags); right-clicking a track's name pins it to the
top (or unpins it).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, cast

import numpy as np
import shiboken6
from PySide6.QtCore import QPoint, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QMouseEvent, QPainter, QPen, QWheelEvent
from PySide6.QtWidgets import QMenu, QScrollBar, QToolTip, QWidget

from tpuscope.model import units
from tpuscope.model.flows import flows_near
from tpuscope.model.trace import Trace, Track
from tpuscope.ui.timeline import flags as flag_marks
from tpuscope.ui.timeline import ruler
from tpuscope.ui.timeline.counters import CounterSeries, format_value, step_area, value_y, visible_samples
from tpuscope.ui.timeline.layout import ROW_HEIGHT, Row, TimelineLayout, track_depth_at
from tpuscope.ui.timeline.lod import TimelineLod, TrackLod, time_key
from tpuscope.ui.timeline.palette import PALETTE, Colours, text_is_dark
from tpuscope.ui.timeline.query_tracks import QueryTrack
from tpuscope.ui.timeline.scene import MERGE_PX, Frame, Viewport, build_frame, highlight_rects
from tpuscope.ui.timeline.texts import KEEP_TAIL, StaticTexts

if TYPE_CHECKING:
    from tpuscope.analysis.steps import Steps

# Layout and feel: UI choices (no external source), tuned by looking at the real profiles.
LABEL_COLUMN_PX = 210
RULER_PX = 24
STEP_BAND_PX = 18
STEP_LABEL_MIN_PX = 16  # narrower steps carry no number
SCROLLBAR_PX = 14
ZOOM_STEP = 1.25  # one W/S key press or one wheel notch (120 units) zooms by this factor
PAN_FRACTION = 0.15  # one A/D key press pans by this share of the window
MIN_WINDOW_PS = 100.0  # the deepest zoom: 100 ps across the whole view
DRAG_THRESHOLD_PX = 4  # a press that moves less than this is a click
CLICK_TOLERANCE_PX = 3  # how near an event a click must land to select it

BACKGROUND = QColor("#ffffff")
ALT_ROW = QColor("#f7f8fa")
GROUP_BG = QColor("#e4e8ee")
LABEL_BG = QColor("#f0f2f5")
GRID = QColor("#dde1e6")
TEXT = QColor("#1d2330")
MUTED_TEXT = QColor("#5b6473")
LIGHT_TEXT = QColor("#ffffff")
LABEL_PADDING_PX = 3
SELECTION = QColor("#1a57d6")
FLOW = QColor("#d0342c")  # flow arrows: a red that reads on every palette colour
FLOW_HEAD_PX = 8.0
MAX_FLOW_ARROWS = 200  # a selected step can hold thousands of launches: draw the first ones
SEARCH_LAYER, PICKED_LAYER = "search", "picked"
# Outline colours: search matches and events picked in other views are separate layers, so a
# diagnosis selected in the background never wipes out the user's search.
HIGHLIGHT_COLOURS = {SEARCH_LAYER: QColor("#ff00aa"), PICKED_LAYER: QColor("#ff7a00")}
RANGE_FILL = QColor(40, 110, 240, 40)
STEP_COLOURS = (QColor("#c7d7ee"), QColor("#dfe8f5"))
COUNTER_FILL = QColor(26, 87, 214, 70)
COUNTER_LINE = QColor("#1a57d6")
COUNTER_PEAK = QColor("#d62728")


def draw_arrow(painter: QPainter, start: QPointF, end: QPointF) -> None:
    """A line with a filled head at `end`."""
    painter.setPen(QPen(FLOW, 1.5))
    painter.drawLine(start, end)
    dx, dy = end.x() - start.x(), end.y() - start.y()
    length = max((dx * dx + dy * dy) ** 0.5, 1e-6)
    ux, uy = dx / length, dy / length
    size = FLOW_HEAD_PX
    left = QPointF(end.x() - size * ux + size * 0.5 * uy, end.y() - size * uy - size * 0.5 * ux)
    right = QPointF(end.x() - size * ux - size * 0.5 * uy, end.y() - size * uy + size * 0.5 * ux)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawPolygon([end, left, right])


def draw_rect_array(painter: QPainter, rects: np.ndarray) -> None:
    """Draws an (n, 4) float64 x/y/w/h array in one call, reading the numpy memory in place.

    QPainter::drawRects takes a pointer to n QRectF, and a QRectF is four
    doubles laid out like one row of the array, so the buffer is handed over
    as a QRectF wrapped at its address (the idea behind pyqtgraph's
    PrimitiveArray, `pyqtgraph/Qt/internals.py`).
    """
    if not len(rects):
        return
    rects = np.ascontiguousarray(rects, dtype=np.float64)
    first = cast(QRectF, shiboken6.wrapInstance(rects.ctypes.data, QRectF))  # typed as shiboken's Object
    painter.drawRects(first, len(rects))


class TimelineView(QWidget):
    """Draws one trace; emits what the user selects."""

    eventSelected = Signal(object, int)  # (Track, event index); Track None clears
    rangeSelected = Signal(float, float)  # (t0_ps, t1_ps) of a Shift-drag
    windowChanged = Signal(float, float)
    flagsChanged = Signal(object)  # the flags' times (ps from the trace start), sorted

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(True)
        self.setMinimumSize(400, 200)
        self.trace: Trace | None = None
        self.lod: TimelineLod | None = None
        self.layout_: TimelineLayout | None = None
        self.colours = Colours()
        self.steps: Steps | None = None
        self.show_empty = False
        self.t0_ps = 0.0
        self.t1_ps = 1.0
        self.y_scroll = 0
        self.selected: tuple[Track, int] | None = None
        self.range: tuple[float, float] | None = None
        self.highlights: dict[str, dict[int, TrackLod]] = {}  # layer -> id(track) -> outlined events
        self.flags: list[float] = []  # times marked with M (ps from the trace start), sorted
        self.last_frame = Frame()
        self._press: QPointF | None = None
        self._press_window = (0.0, 1.0)
        self._press_scroll = 0
        self._dragging = False
        self._range_drag = False
        self.font_ = QFont(self.font())
        self.font_.setPointSizeF(8.5)
        self.bold_font = QFont(self.font_)
        self.bold_font.setBold(True)
        self._metrics = QFontMetricsF(self.font_)
        self._texts = StaticTexts(self.font_)
        self._bold_texts = StaticTexts(self.bold_font)
        self._brushes = [QColor(c) for c in PALETTE]
        self._dark_text = [text_is_dark(c) for c in PALETTE]
        self.scrollbar = QScrollBar(Qt.Orientation.Vertical, self)
        self.scrollbar.valueChanged.connect(self._on_scroll)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._on_context_menu)

    # ----- state -----------------------------------------------------------------------------

    def set_trace(
        self,
        trace: Trace | None,
        lod: TimelineLod | None = None,
        steps: Steps | None = None,
        colours: Colours | None = None,
    ) -> None:
        """Shows a trace; `lod` and `colours` are built here unless the loader made them off the UI thread."""
        self.trace = trace
        self.lod = lod if lod is not None or trace is None else TimelineLod(trace)
        self.layout_ = TimelineLayout(trace, show_empty=self.show_empty) if trace is not None else None
        self.colours = colours if colours is not None else Colours()
        self.steps = steps if steps is not None and len(steps) else None
        self.selected = None
        self.range = None
        self.highlights = {}
        self.flags = []
        self.y_scroll = 0
        self.zoom_to_fit()
        self._place_scrollbar()
        self.scrollbar.setValue(0)

    def set_steps(self, steps: Steps | None) -> None:
        """Draws the step band (`tpuscope.analysis.steps.Steps`; None or no steps: no band). Steps
        arrive after the trace: the timeline is usable before they are found."""
        self.steps = steps if steps is not None and len(steps) else None
        self._place_scrollbar()
        self.update()

    @property
    def events_top(self) -> int:
        return RULER_PX + (STEP_BAND_PX if self.steps is not None else 0)

    @property
    def events_width(self) -> float:
        return max(1.0, self.width() - LABEL_COLUMN_PX - SCROLLBAR_PX)

    def viewport(self) -> Viewport:
        return Viewport(
            self.t0_ps,
            self.t1_ps,
            LABEL_COLUMN_PX,
            self.events_width,
            self.y_scroll,
            self.events_top,
            self.sticky_px,
        )

    def set_window(self, t0_ps: float, t1_ps: float) -> None:
        """Shows [t0, t1], kept within the trace (with a small margin) and no narrower than MIN_WINDOW_PS."""
        duration = float(self.trace.duration_ps) if self.trace is not None else 1.0
        margin = 0.02 * max(duration, MIN_WINDOW_PS)
        lo, hi = -margin, duration + margin
        width = min(max(t1_ps - t0_ps, MIN_WINDOW_PS), hi - lo)
        center = (t0_ps + t1_ps) / 2
        t0 = min(max(center - width / 2, lo), hi - width)
        self.t0_ps, self.t1_ps = t0, t0 + width
        self.windowChanged.emit(self.t0_ps, self.t1_ps)
        self.update()

    def zoom_to_fit(self) -> None:
        duration = float(self.trace.duration_ps) if self.trace is not None else 1.0
        self.t0_ps, self.t1_ps = 0.0, max(duration, MIN_WINDOW_PS)
        self.set_window(self.t0_ps, self.t1_ps)

    def zoom(self, factor: float, anchor_ps: float | None = None) -> None:
        """Zooms in (factor > 1) or out around `anchor_ps` (the window centre by default)."""
        if anchor_ps is None:
            anchor_ps = (self.t0_ps + self.t1_ps) / 2
        width = max((self.t1_ps - self.t0_ps) / factor, MIN_WINDOW_PS)
        share = (anchor_ps - self.t0_ps) / max(self.t1_ps - self.t0_ps, 1e-9)
        t0 = anchor_ps - share * width
        self._set_anchored(t0, t0 + width)

    def _set_anchored(self, t0: float, t1: float) -> None:
        duration = float(self.trace.duration_ps) if self.trace is not None else 1.0
        margin = 0.02 * max(duration, MIN_WINDOW_PS)
        if t1 - t0 >= duration + 2 * margin:
            self.set_window(-margin, duration + margin)
            return
        shift = max(0.0, -margin - t0) - max(0.0, t1 - duration - margin)
        self.t0_ps, self.t1_ps = t0 + shift, t1 + shift
        self.windowChanged.emit(self.t0_ps, self.t1_ps)
        self.update()

    def pan(self, delta_ps: float) -> None:
        self._set_anchored(self.t0_ps + delta_ps, self.t1_ps + delta_ps)

    def zoom_to_range(self, t0_ps: float, t1_ps: float, margin: float = 0.1) -> None:
        width = max(t1_ps - t0_ps, MIN_WINDOW_PS)
        self.set_window(t0_ps - margin * width, t1_ps + margin * width)

    def zoom_to_event(self, track: Track, index: int) -> None:
        start = float(track.start_ps[index])
        self.zoom_to_range(start, start + float(track.duration_ps[index]))
        self.scroll_to_track(track)

    def select_event(self, track: Track | None, index: int = -1) -> None:
        self.selected = None if track is None else (track, int(index))
        self.update()
        self.eventSelected.emit(track, int(index))

    def set_highlight(self, matches: list[tuple[Track, np.ndarray]], layer: str = PICKED_LAYER) -> None:
        """Outlines these events (ops or findings picked in other views) until replaced or cleared."""
        self.set_highlight_lods(
            {id(track): TrackLod(track, idx) for track, idx in matches if len(idx)}, layer
        )

    def set_highlight_lods(self, lods: dict[int, TrackLod], layer: str) -> None:
        """Outlines events whose level-of-detail index was built elsewhere (the search worker)."""
        self.highlights = {k: v for k, v in self.highlights.items() if k != layer}
        if lods:
            self.highlights[layer] = dict(lods)
        self.update()

    def scroll_to_track(self, track: Track) -> None:
        if self.layout_ is None:
            return
        self.layout_.expand_to(track)
        self._update_scrollbar()
        row = self.layout_.row_of(track)
        if row is None:
            return
        sticky = self.sticky_px
        if row.y < sticky:
            return  # pinned: always in view
        visible = self.height() - self.events_top
        if row.y - self.y_scroll < sticky or row.y + row.height > self.y_scroll + visible:
            self.scrollbar.setValue(max(0, row.y - sticky - (visible - sticky) // 3))

    def toggle_group(self, key: tuple[str, str]) -> None:
        if self.layout_ is not None:
            self.layout_.toggle(key)
            self._update_scrollbar()
            self.update()

    def set_all_collapsed(self, collapsed: bool) -> None:
        if self.layout_ is not None:
            self.layout_.set_all_collapsed(collapsed)
            self._update_scrollbar()
            self.update()

    def set_counters(self, counters: list[CounterSeries]) -> None:
        """Shows these counters (memory in use...) in their own group above the planes."""
        if self.layout_ is not None:
            self.layout_.set_counters(counters)
            self._update_scrollbar()
            self.update()

    def set_query_tracks(self, tracks: list[QueryTrack]) -> None:
        """Pins these query results (the Query tab's) in their own group above the planes."""
        if self.layout_ is not None:
            self.layout_.set_query_tracks(tracks)
            self._update_scrollbar()
            self.update()

    def query_event_at(self, pos: QPointF | QPoint) -> tuple[QueryTrack, int] | None:
        """The pinned query track's event under a widget position, if any."""
        row = self.row_at(pos.y())
        if row is None or row.query is None or pos.x() < LABEL_COLUMN_PX:
            return None
        track_lod = row.query.lod.of(row.query.track)
        if track_lod is None:
            return None
        depth = track_depth_at(row, self.layout_y(pos.y()))
        view = self.viewport()
        found = track_lod.event_at(depth, view.t_of(pos.x()), CLICK_TOLERANCE_PX * view.ps_per_px)
        return None if found is None else (row.query, found)

    def set_show_empty(self, show: bool) -> None:
        """Shows or hides tracks (and planes) without events; hidden by default."""
        self.show_empty = show
        if self.layout_ is not None:
            self.layout_.show_empty = show
            self.layout_.relayout()
            self._update_scrollbar()
            self.update()

    def _update_scrollbar(self) -> None:
        visible = max(0, self.height() - self.events_top)
        total = self.layout_.height if self.layout_ is not None else 0
        self.scrollbar.setRange(0, max(0, total - visible + ROW_HEIGHT))
        self.scrollbar.setPageStep(max(1, visible))
        self.scrollbar.setSingleStep(ROW_HEIGHT)

    def _on_scroll(self, value: int) -> None:
        self.y_scroll = value
        self.update()

    def _place_scrollbar(self) -> None:
        """Beside the tracks, below the ruler and step band (whose height depends on the trace)."""
        top = self.events_top
        self.scrollbar.setGeometry(
            self.width() - SCROLLBAR_PX, top, SCROLLBAR_PX, max(0, self.height() - top)
        )
        self._update_scrollbar()

    def resizeEvent(self, event) -> None:
        self._place_scrollbar()
        super().resizeEvent(event)

    # ----- hit testing -----------------------------------------------------------------------

    def layout_y(self, y: float) -> float:
        """The layout y at widget y `y`: the pinned rows on top do not scroll, the rest do."""
        below_top = y - self.events_top
        return below_top if below_top < self.sticky_px else below_top + self.y_scroll

    @property
    def sticky_px(self) -> int:
        return self.layout_.sticky_height if self.layout_ is not None else 0

    def row_at(self, y: float) -> Row | None:
        if self.layout_ is None or y < self.events_top:
            return None
        return self.layout_.row_at(self.layout_y(y))

    def event_at(self, pos: QPointF | QPoint) -> tuple[Track, int] | None:
        """The event under a widget position, if any."""
        if self.lod is None or pos.x() < LABEL_COLUMN_PX:
            return None
        row = self.row_at(pos.y())
        if row is None or row.track is None:
            return None
        track_lod = self.lod.of(row.track)
        if track_lod is None:
            return None
        depth = track_depth_at(row, self.layout_y(pos.y()))
        view = self.viewport()
        found = track_lod.event_at(depth, view.t_of(pos.x()), CLICK_TOLERANCE_PX * view.ps_per_px)
        return None if found is None else (row.track, found)

    # ----- painting --------------------------------------------------------------------------

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        try:
            self.paint(painter)
        finally:
            painter.end()

    def paint(self, painter: QPainter) -> None:
        """Draws the whole widget; separate from paintEvent so benchmarks can time it on an image."""
        painter.setFont(self.font_)
        width, height = self.width(), self.height()
        painter.fillRect(0, 0, width, height, BACKGROUND)
        if self.layout_ is None or self.lod is None:
            painter.setPen(MUTED_TEXT)
            painter.drawText(QRectF(0, 0, width, height), Qt.AlignmentFlag.AlignCenter, "No profile open")
            return
        view = self.viewport()
        top = self.events_top
        sticky = self.sticky_px
        rows = self.layout_.rows_between(self.y_scroll + sticky, self.y_scroll + height - top)
        rows = [r for r in rows if r.y >= sticky]
        self.last_frame = self._paint_rows(
            painter, rows, view, QRectF(0, top + sticky, width, height - top - sticky)
        )
        if sticky:  # the pinned rows over the scrolled ones, a line under them
            pinned = self.layout_.rows_between(0, sticky)
            self._paint_rows(painter, pinned, view, QRectF(0, top, width, sticky), pinned=True)
            painter.setPen(QPen(MUTED_TEXT, 1))
            painter.drawLine(QPointF(0, top + sticky - 0.5), QPointF(width, top + sticky - 0.5))
        self._paint_ruler(painter, view)
        flag_marks.paint_flags(painter, view, self.flags, RULER_PX, height)
        if self.steps is not None:
            self._paint_steps(painter, view, self.steps)

    def _paint_rows(
        self, painter: QPainter, rows: list[Row], view: Viewport, band: QRectF, pinned: bool = False
    ) -> Frame:
        """`rows` and what is drawn over them, clipped to `band` (the scrolled rows, or the pinned
        ones on top); the frame of their events."""
        assert self.lod is not None and self.layout_ is not None  # `paint` draws rows only then
        top, height = band.top(), band.bottom()
        painter.save()
        painter.setClipRect(band)
        self._paint_row_backgrounds(painter, rows, view)
        self._paint_grid(painter, view, top, height)
        frame = build_frame(rows, self.lod, self.colours, view)
        for drawn in (frame, *self._query_frames(rows, view)):
            painter.setPen(Qt.PenStyle.NoPen)
            for colour, rects in drawn.rects_by_colour.items():
                painter.setBrush(self._brushes[colour])
                draw_rect_array(painter, rects)
            self._paint_labels(painter, drawn)
        self._paint_counters(painter, rows, view)
        self._paint_highlights(painter, rows, view)
        selected_row = self.layout_.row_of(self.selected[0]) if self.selected is not None else None
        if not pinned or (selected_row is not None and selected_row.y < view.sticky):
            self._paint_selection(painter, view)
        if not pinned:
            self._paint_flows(painter, view)
        self._paint_range(painter, view, top, height)
        self._paint_label_column(painter, rows, view)
        painter.restore()
        return frame

    def _query_frames(self, rows: list[Row], view: Viewport) -> list[Frame]:
        """The pinned query tracks' boxes and labels, drawn as the profile's tracks are."""
        return [
            build_frame(
                [replace(row, kind="track", track=row.query.track)], row.query.lod, self.colours, view
            )
            for row in rows
            if row.kind == "query" and row.query is not None
        ]

    def _paint_row_backgrounds(self, painter: QPainter, rows: list[Row], view: Viewport) -> None:
        for i, row in enumerate(rows):
            y = view.y_of(row.y)
            if row.kind == "group":
                painter.fillRect(QRectF(0, y, self.width(), row.height), GROUP_BG)
            elif i % 2:
                painter.fillRect(QRectF(view.x, y, view.width, row.height), ALT_ROW)

    def _paint_grid(self, painter: QPainter, view: Viewport, top: float, bottom: float) -> None:
        _, times = ruler.ticks(view.t0_ps, view.t1_ps, view.width)
        painter.setPen(QPen(GRID, 1))
        for t in times:
            x = float(view.x_of(t))
            painter.drawLine(QPointF(x, top), QPointF(x, bottom))

    def _paint_labels(self, painter: QPainter, frame: Frame) -> None:
        """Names inside boxes wide enough for them, each elided to fit its box."""
        text_height = ROW_HEIGHT - 2
        texts = self._texts
        dark = None
        for label in frame.labels:
            left = max(label.x, LABEL_COLUMN_PX) + LABEL_PADDING_PX
            static = texts.fitted(label.text, label.x + label.width - LABEL_PADDING_PX - left)
            if static is None:
                continue
            if self._dark_text[label.colour] is not dark:
                dark = self._dark_text[label.colour]
                painter.setPen(TEXT if dark else LIGHT_TEXT)
            texts.draw(painter, left, label.y, text_height, static)

    def _paint_counters(self, painter: QPainter, rows: list[Row], view: Viewport) -> None:
        """Each counter row as a step area on its own scale, its peak marked, the window's largest value.

        pyqtgraph's arrayToQPath turns the numpy points into one path without a Python loop; it is
        imported here, so a profile without counters never pays for it.
        """
        counter_rows = [r for r in rows if r.kind == "counter" and r.counter is not None]
        if not counter_rows:
            return
        import pyqtgraph as pg

        for row in counter_rows:
            series = row.counter
            assert series is not None  # counter_rows holds rows with a series
            top = float(view.y_of(row.y))
            points = step_area(series, view, top, row.height)
            if len(points) < 3:
                continue
            path = pg.functions.arrayToQPath(points[:, 0], points[:, 1], connect="all")
            path.closeSubpath()
            painter.setPen(QPen(COUNTER_LINE, 1))
            painter.setBrush(COUNTER_FILL)
            painter.drawPath(path)
            if series.peak_index is not None:
                t_peak = float(series.time_ps[series.peak_index])
                if view.t0_ps <= t_peak <= view.t1_ps:
                    x = float(view.x_of(t_peak))
                    y = float(value_y(series, series.values[series.peak_index], top, row.height))
                    painter.setPen(Qt.PenStyle.NoPen)
                    painter.setBrush(COUNTER_PEAK)
                    painter.drawEllipse(QPointF(x, y), 3.5, 3.5)
            _, values = visible_samples(series, view)
            if len(values):
                painter.setPen(MUTED_TEXT)
                text = f"max {format_value(series, float(np.nanmax(values)))} here"
                painter.drawText(
                    QRectF(view.x + 4, top + 1, 220, ROW_HEIGHT - 4),
                    Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                    text,
                )

    def _paint_highlights(self, painter: QPainter, rows: list[Row], view: Viewport) -> None:
        painter.setBrush(Qt.BrushStyle.NoBrush)
        for layer, lods in self.highlights.items():
            painter.setPen(QPen(HIGHLIGHT_COLOURS[layer], 2))
            draw_rect_array(painter, highlight_rects(rows, lods, view))

    def _paint_selection(self, painter: QPainter, view: Viewport) -> None:
        if self.selected is None or self.layout_ is None:
            return
        track, index = self.selected
        row = self.layout_.row_of(track)
        if row is None:
            return
        x0 = max(float(view.x_of(track.start_ps[index])), view.x - 3)
        x1 = min(float(view.x_of(track.start_ps[index] + track.duration_ps[index])), view.x + view.width + 3)
        y = view.y_of(row.y + int(track.depth[index]) * ROW_HEIGHT)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setPen(QPen(SELECTION, 2.5))
        painter.drawRect(QRectF(x0 - 1, y, max(x1 - x0, 1) + 2, ROW_HEIGHT))

    def _paint_flows(self, painter: QPainter, view: Viewport) -> None:
        """Arrows of the flows at the selected event and the events nested in it (as Perfetto draws them)."""
        if self.selected is None or self.layout_ is None or self.trace is None:
            return
        track, index = self.selected
        rows = flows_near(self.trace, track, index)[:MAX_FLOW_ARROWS]
        if len(rows) == 0:
            return
        tracks = self.trace.track_list()
        painter.setBrush(FLOW)
        for row in rows.tolist():
            points = []
            for number, event in self.trace.flows.ends(row):
                end_track = tracks[number]
                layout_row = self.layout_.row_of(end_track)
                if layout_row is None:
                    break
                x = float(
                    np.clip(view.x_of(end_track.start_ps[event]), view.x - 50, view.x + view.width + 50)
                )
                y = view.y_of(layout_row.y + int(end_track.depth[event]) * ROW_HEIGHT) + ROW_HEIGHT / 2
                points.append(QPointF(x, y))
            if len(points) == 2:
                draw_arrow(painter, points[0], points[1])

    def _paint_range(self, painter: QPainter, view: Viewport, top: float, bottom: float) -> None:
        if self.range is None:
            return
        x0, x1 = (float(view.x_of(t)) for t in self.range)
        painter.fillRect(QRectF(x0, top, max(1.0, x1 - x0), bottom - top), RANGE_FILL)
        painter.setPen(QPen(SELECTION, 1))
        painter.drawLine(QPointF(x0, top), QPointF(x0, bottom))
        painter.drawLine(QPointF(x1, top), QPointF(x1, bottom))

    def _paint_label_column(self, painter: QPainter, rows: list[Row], view: Viewport) -> None:
        painter.fillRect(QRectF(0, view.top, LABEL_COLUMN_PX, self.height()), LABEL_BG)
        painter.setPen(TEXT)
        for row in rows:
            y = view.y_of(row.y)
            if row.kind == "group":
                painter.fillRect(QRectF(0, y, LABEL_COLUMN_PX, row.height), GROUP_BG)
                painter.setFont(self.bold_font)
                bold = self._bold_texts
                arrow = bold.fitted("\u25b8" if row.collapsed else "\u25be", LABEL_COLUMN_PX - 8)
                if arrow is not None:
                    bold.draw(painter, 6, y, row.height, arrow)
                text = bold.fitted(row.label, LABEL_COLUMN_PX - 22)
                if text is not None:
                    bold.draw(painter, 20, y, row.height, text)
                painter.setFont(self.font_)
            else:
                text = self._texts.fitted(row.label, LABEL_COLUMN_PX - 26, KEEP_TAIL)
                if text is not None:
                    self._texts.draw(painter, 20, y, ROW_HEIGHT, text)
        painter.setPen(QPen(GRID, 1))
        painter.drawLine(
            QPointF(LABEL_COLUMN_PX - 0.5, view.top), QPointF(LABEL_COLUMN_PX - 0.5, self.height())
        )

    def _paint_ruler(self, painter: QPainter, view: Viewport) -> None:
        painter.fillRect(QRectF(0, 0, self.width(), RULER_PX), LABEL_BG)
        step, times = ruler.ticks(view.t0_ps, view.t1_ps, view.width)
        painter.setPen(TEXT)
        for t in times:
            x = float(view.x_of(t))
            painter.drawLine(QPointF(x, RULER_PX - 7), QPointF(x, RULER_PX))
            painter.drawText(
                QRectF(x + 3, 0, 120, RULER_PX - 3),
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                ruler.format_time(t, step),
            )
        painter.fillRect(QRectF(0, 0, LABEL_COLUMN_PX, RULER_PX), LABEL_BG)
        painter.setPen(MUTED_TEXT)
        span = units.format_duration(view.t1_ps - view.t0_ps, units.SHORT_SPEC)
        painter.drawText(
            QRectF(6, 0, LABEL_COLUMN_PX - 8, RULER_PX), Qt.AlignmentFlag.AlignVCenter, f"window {span}"
        )
        painter.setPen(QPen(GRID, 1))
        painter.drawLine(QPointF(0, RULER_PX - 0.5), QPointF(self.width(), RULER_PX - 0.5))

    def _paint_steps(self, painter: QPainter, view: Viewport, steps: Steps) -> None:
        y = RULER_PX
        painter.fillRect(QRectF(0, y, self.width(), STEP_BAND_PX), BACKGROUND)
        lo = int(np.searchsorted(steps.end_ps, time_key(view.t0_ps), side="right"))
        hi = int(np.searchsorted(steps.start_ps, time_key(view.t1_ps, up=True), side="left"))
        if hi > lo:
            x0 = np.maximum(view.x_of(steps.start_ps[lo:hi]), view.x - 10)
            x1 = np.minimum(view.x_of(steps.end_ps[lo:hi]), view.x + view.width + 10)
            w = np.maximum(x1 - x0 - 1, 1.0)
            parity = (np.arange(lo, hi) % 2).astype(bool)
            painter.setPen(Qt.PenStyle.NoPen)
            for odd in (False, True):
                chosen = parity == odd
                rects = np.column_stack(
                    [
                        x0[chosen],
                        np.full(chosen.sum(), y + 1.0),
                        w[chosen],
                        np.full(chosen.sum(), STEP_BAND_PX - 2.0),
                    ]
                )
                painter.setBrush(STEP_COLOURS[int(odd)])
                draw_rect_array(painter, rects)
            painter.setPen(TEXT)
            for i in np.flatnonzero(w >= STEP_LABEL_MIN_PX).tolist():
                number = int(steps.number[lo + i])
                text = f"step {number}"
                if self._metrics.horizontalAdvance(text) > w[i] - 4:
                    text = str(number)  # a narrow step still shows its number
                painter.drawText(
                    QRectF(x0[i] + 2, y, w[i] - 2, STEP_BAND_PX), Qt.AlignmentFlag.AlignVCenter, text
                )
        painter.fillRect(QRectF(0, y, LABEL_COLUMN_PX, STEP_BAND_PX), LABEL_BG)
        painter.setPen(MUTED_TEXT)
        painter.drawText(
            QRectF(6, y, LABEL_COLUMN_PX - 8, STEP_BAND_PX),
            Qt.AlignmentFlag.AlignVCenter,
            f"Steps ({len(steps)})",
        )

    # ----- input -----------------------------------------------------------------------------

    def wheelEvent(self, event: QWheelEvent) -> None:
        delta = event.angleDelta()
        pos = event.position()
        if event.modifiers() & Qt.KeyboardModifier.ShiftModifier or pos.x() < LABEL_COLUMN_PX:
            self.scrollbar.setValue(self.scrollbar.value() - int(delta.y() or delta.x()) // 2)
        elif abs(delta.x()) > abs(delta.y()):
            self.pan(-delta.x() / 120 * PAN_FRACTION * (self.t1_ps - self.t0_ps))
        elif delta.y():
            self.zoom(ZOOM_STEP ** (delta.y() / 120), self.viewport().t_of(pos.x()))
        event.accept()

    def keyPressEvent(self, event) -> None:
        key = event.key()
        cursor = self.mapFromGlobal(self.cursor().pos())
        anchor = self.viewport().t_of(cursor.x()) if LABEL_COLUMN_PX <= cursor.x() < self.width() else None
        width = self.t1_ps - self.t0_ps
        if key == Qt.Key.Key_W:
            self.zoom(ZOOM_STEP, anchor)
        elif key == Qt.Key.Key_S:
            self.zoom(1 / ZOOM_STEP, anchor)
        elif key == Qt.Key.Key_A:
            self.pan(-PAN_FRACTION * width)
        elif key == Qt.Key.Key_D:
            self.pan(PAN_FRACTION * width)
        elif key in (Qt.Key.Key_Home, Qt.Key.Key_0):
            self.zoom_to_fit()
        elif key == Qt.Key.Key_M:
            self.toggle_flag(self.flag_time())
        elif key == Qt.Key.Key_Escape:
            self.range = None
            self.highlights = {}
            self.select_event(None)
        else:
            super().keyPressEvent(event)

    # ----- flags and pinned tracks -------------------------------------------------------------

    def flag_time(self) -> float:
        """Where M puts a flag: the time under the cursor, else the selection's start, else the middle."""
        cursor = self.mapFromGlobal(self.cursor().pos())
        if LABEL_COLUMN_PX <= cursor.x() < self.width() and 0 <= cursor.y() < self.height():
            return self.viewport().t_of(cursor.x())
        if self.range is not None:
            return self.range[0]
        if self.selected is not None:
            track, index = self.selected
            return float(track.start_ps[index])
        return (self.t0_ps + self.t1_ps) / 2

    def toggle_flag(self, t_ps: float) -> None:
        """A flag at `t_ps`, or none where one was within a few pixels of it."""
        if self.trace is None:
            return
        snap_ps = flag_marks.FLAG_SNAP_PX * self.viewport().ps_per_px
        self.set_flags(flag_marks.toggled(self.flags, t_ps, snap_ps))

    def set_flags(self, flags: list[float]) -> None:
        self.flags = sorted(float(f) for f in flags)
        self.flagsChanged.emit(list(self.flags))
        self.update()

    def set_pinned(self, track: Track, pinned: bool) -> None:
        """Pins `track` to the top of the tracks (Perfetto's pin) or puts it back in its group."""
        if self.layout_ is None:
            return
        self.layout_.set_pinned(track, pinned)
        self._update_scrollbar()
        self.update()

    def context_menu(self, pos: QPoint) -> QMenu:
        """What a right-click at `pos` offers: pin or unpin the track whose name is there, remove the
        flag whose marker is there, remove every flag."""
        menu = QMenu(self)
        row = self.row_at(pos.y())
        layout = self.layout_
        if layout is not None and row is not None and row.track is not None and pos.x() < LABEL_COLUMN_PX:
            pinned = layout.is_pinned(row.track)
            track = row.track
            action = menu.addAction("Unpin from top" if pinned else "Pin to top")
            action.triggered.connect(lambda: self.set_pinned(track, not pinned))
        view = self.viewport()
        for t in self.flags:
            if flag_marks.marker_rect(view, t, RULER_PX).contains(QPointF(pos)):
                remove = menu.addAction(f"Remove flag at {units.format_duration(t, units.SHORT_SPEC)}")
                remove.triggered.connect(lambda _=False, at=t: self.remove_flag(at))
        if self.flags:
            menu.addAction("Remove all flags").triggered.connect(lambda: self.set_flags([]))
        return menu

    def remove_flag(self, t_ps: float) -> None:
        self.set_flags([f for f in self.flags if f != t_ps])

    def _on_context_menu(self, pos: QPoint) -> None:
        menu = self.context_menu(pos)
        if not menu.isEmpty():
            menu.popup(self.mapToGlobal(pos))

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        self.setFocus()
        self._press = event.position()
        self._press_window = (self.t0_ps, self.t1_ps)
        self._press_scroll = self.y_scroll
        self._dragging = False
        self._range_drag = (
            bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
            and event.position().x() >= LABEL_COLUMN_PX
        )

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._press is None:
            return
        pos = event.position()
        dx, dy = pos.x() - self._press.x(), pos.y() - self._press.y()
        if not self._dragging and math.hypot(dx, dy) < DRAG_THRESHOLD_PX:
            return
        self._dragging = True
        t0, t1 = self._press_window
        ps_per_px = (t1 - t0) / self.events_width
        if self._range_drag:
            a = t0 + (self._press.x() - LABEL_COLUMN_PX) * ps_per_px
            b = t0 + (pos.x() - LABEL_COLUMN_PX) * ps_per_px
            self.range = (min(a, b), max(a, b))
            self.update()
        else:
            self._set_anchored(t0 - dx * ps_per_px, t1 - dx * ps_per_px)
            self.scrollbar.setValue(int(self._press_scroll - dy))

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self._press is None:
            return
        pos = event.position()
        if self._range_drag and self._dragging and self.range is not None:
            self.rangeSelected.emit(*self.range)
        elif not self._dragging:
            self.click(pos)
        self._press = None
        self._dragging = False
        self._range_drag = False

    def click(self, pos: QPointF | QPoint) -> None:
        """Selects the event under `pos`, or toggles the plane group whose header is there."""
        row = self.row_at(pos.y())
        if row is not None and row.kind == "group":
            self.toggle_group(row.group)
            return
        found = self.event_at(pos)
        pinned = self.query_event_at(pos)
        if pinned is not None and self.trace is not None:  # the profile's event the row named
            found = pinned[0].origin(pinned[1], self.trace.track_list())
        self.range = None
        if found is None:
            self.select_event(None)
        else:
            self.select_event(*found)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        found = self.event_at(event.position())
        if found is not None:
            self.select_event(*found)
            self.zoom_to_event(*found)

    def event(self, event) -> bool:
        if event.type() == event.Type.ToolTip:
            QToolTip.showText(event.globalPos(), self.tooltip_at(event.pos()), self)
            return True
        return super().event(event)

    def tooltip_at(self, pos: QPoint) -> str:
        """Full track names over the name column; the event, or how many events a box folds, elsewhere."""
        if self.steps is not None and RULER_PX <= pos.y() < self.events_top:
            return f"Steps: {self.steps.description}"
        row = self.row_at(pos.y())
        if row is None:
            return ""
        if pos.x() < LABEL_COLUMN_PX:
            return row.tooltip
        if row.kind == "counter" and row.counter is not None:
            t = self.viewport().t_of(pos.x())
            value = row.counter.value_at(t)
            at = units.format_duration(t, units.SHORT_SPEC)
            return (
                f"{row.label}\n{format_value(row.counter, value)} at {at}" if value is not None else row.label
            )
        pinned = self.query_event_at(pos)
        if pinned is not None:
            query, index = pinned
            name = self.colours.of(query.track.plane).label_of_row[int(query.track.meta_index[index])]
            duration = units.format_duration(float(query.track.duration_ps[index]), units.SHORT_SPEC)
            return f"{name}\n{duration} ({query.label})"
        folded = self.box_at(pos)
        if folded is not None and folded[1] > 1:
            return f"{folded[1]:,} events too small to draw apart here: zoom in to see them"
        found = self.event_at(pos)
        if found is None:
            return ""
        track, index = found
        name = self.colours.of(track.plane).label_of_row[int(track.meta_index[index])]
        return f"{name}\n{units.format_duration(float(track.duration_ps[index]), units.SHORT_SPEC)}"

    def box_at(self, pos: QPoint | QPointF) -> tuple[float, int] | None:
        """(start_ps, event count) of the drawn box under a position, as the current frame merges it."""
        row = self.row_at(pos.y())
        if self.lod is None or row is None or row.track is None or pos.x() < LABEL_COLUMN_PX:
            return None
        track_lod = self.lod.of(row.track)
        depth = track_depth_at(row, self.layout_y(pos.y()))
        view = self.viewport()
        for depth_lod in track_lod.depths if track_lod is not None else []:
            if depth_lod.depth != depth:
                continue
            boxes = depth_lod.window(view.t0_ps, view.t1_ps, view.ps_per_px * MERGE_PX)
            t = view.t_of(pos.x())
            pad = CLICK_TOLERANCE_PX * view.ps_per_px
            hit = np.flatnonzero((boxes.start_ps - pad <= t) & (boxes.end_ps + pad >= t))
            if len(hit):
                best = hit[np.argmax(boxes.count[hit])]
                return float(boxes.start_ps[best]), int(boxes.count[best])
        return None
