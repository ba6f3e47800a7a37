"""One frame of the timeline as flat numpy rectangles grouped by colour, ready for batched drawing.

The view calls build_frame on every paint; it does the level-of-detail
selection and pixel merging per visible (track, depth) in numpy and returns
one (n, 4) float64 x/y/w/h array per palette colour, so Qt draws the whole
frame in one drawRects call per colour (the zero-copy call pyqtgraph's BarGraphItem makes through
`pyqtgraph/Qt/internals.py::PrimitiveArray`).
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from tpuscope.model.records import record
from tpuscope.ui.timeline.layout import ROW_HEIGHT, Row
from tpuscope.ui.timeline.lod import Boxes, TimelineLod, TrackLod
from tpuscope.ui.timeline.palette import PALETTE, Colours

# Events narrower than this many pixels are merged with their sub-pixel neighbours
# (catapult 2 px, `tracing/tracing/ui/base/fast_rect_renderer.html`; Tracy 3 px,
# `profiler/src/profiler/TracyTimelineItemThread.cpp::PreprocessZoneLevel`).
MERGE_PX = 2.0
MIN_BOX_PX = 1.0  # every event covering the window is at least this wide (Perfetto, Tracy: 1-2 px)
LABEL_MIN_PX = 28.0  # boxes narrower than this get no label (Perfetto 5 px, catapult 20 px)
GAP_PX = 1.0  # right inset of boxes wider than GAP_MIN_PX, so neighbours stay apart (Perfetto SLICE_GAP_PX)
GAP_MIN_PX = 4.0
OFFSCREEN_PX = 10.0  # clamp to the viewport +- this margin: huge rects flicker (Tracy, Perfetto)
BOX_MARGIN_PX = 1.0  # vertical space between stacked depths
SUMMARY_INSET_PX = 5.0  # a collapsed group's summary boxes keep this far from its header's edges


@record
class Viewport:
    """The time window on screen and where the event area sits in the widget."""

    t0_ps: float
    t1_ps: float
    x: float  # left edge of the event area
    width: float
    y_shift: float  # layout y at the top of the event area
    top: float  # widget y of the event area's top
    # Layout rows above this y (the pinned tracks) stay at the top of the event area, unscrolled.
    sticky: float = 0.0

    @property
    def ps_per_px(self) -> float:
        return max(1e-9, (self.t1_ps - self.t0_ps) / max(1.0, self.width))

    def x_of(self, t_ps: np.ndarray | float) -> np.ndarray | float:
        return self.x + (np.asarray(t_ps, dtype=np.float64) - self.t0_ps) / self.ps_per_px

    def t_of(self, x: float) -> float:
        return self.t0_ps + (x - self.x) * self.ps_per_px

    def y_of(self, layout_y: float) -> float:
        if layout_y < self.sticky:
            return self.top + layout_y
        return self.top + layout_y - self.y_shift


@record
class Label:
    x: float
    y: float
    width: float
    text: str
    colour: int


@record
class Frame:
    rects_by_colour: dict[int, np.ndarray] = field(default_factory=dict)
    labels: list[Label] = field(default_factory=list)
    box_count: int = 0


@record
class _Pieces:
    x: list[np.ndarray] = field(default_factory=list)
    y: list[np.ndarray] = field(default_factory=list)
    w: list[np.ndarray] = field(default_factory=list)
    h: list[np.ndarray] = field(default_factory=list)
    colour: list[np.ndarray] = field(default_factory=list)


def track_boxes(
    track_lod: TrackLod, top_y: float, view: Viewport, max_depth: int | None = None
) -> list[tuple[int, Boxes, np.ndarray, np.ndarray, np.ndarray]]:
    """Per depth: (depth, boxes, x, width, y) of one track in the window, its depth 0 at layout y `top_y`."""
    min_ps = view.ps_per_px * MERGE_PX
    out = []
    left, right = view.x - OFFSCREEN_PX, view.x + view.width + OFFSCREEN_PX
    for depth_lod in track_lod.depths:
        if max_depth is not None and depth_lod.depth > max_depth:
            continue
        boxes = depth_lod.window(view.t0_ps, view.t1_ps, min_ps)
        if not len(boxes):
            continue
        x0 = np.maximum(view.x_of(boxes.start_ps), left)
        x1 = np.minimum(view.x_of(boxes.end_ps), right)
        width = np.maximum(x1 - x0, MIN_BOX_PX)
        width = np.where(width > GAP_MIN_PX, width - GAP_PX, width)
        y = view.y_of(top_y + depth_lod.depth * ROW_HEIGHT + BOX_MARGIN_PX)
        out.append((depth_lod.depth, boxes, x0, width, np.full(len(boxes), y)))
    return out


def build_frame(rows: list[Row], lod: TimelineLod, colours: Colours, view: Viewport) -> Frame:
    """Rectangles (grouped by palette colour) and labels for the visible rows.

    A collapsed plane group shows its busiest track's outermost events, thinner
    and without labels, in its header row (Perfetto's group summary idea).
    """
    pieces = _Pieces()
    labels: list[Label] = []
    for row in rows:
        track = row.track if row.kind == "track" else row.summary
        if track is None:
            continue
        track_lod = lod.of(track)
        if track_lod is None:
            continue
        plane_colours = colours.of(track.plane)
        if row.kind == "track":
            drawn = track_boxes(track_lod, row.y, view)
            height = ROW_HEIGHT - 2 * BOX_MARGIN_PX
        else:
            drawn = track_boxes(track_lod, row.y + SUMMARY_INSET_PX - BOX_MARGIN_PX, view, max_depth=0)
            height = row.height - 2 * SUMMARY_INSET_PX
        for _, boxes, x, width, y in drawn:
            meta_rows = track.meta_index[boxes.rep]
            colour = plane_colours.colour_of_row[meta_rows]
            pieces.x.append(x)
            pieces.y.append(y)
            pieces.w.append(width)
            pieces.h.append(np.full(len(x), float(height)))
            pieces.colour.append(colour)
            if row.kind != "track":
                continue
            wide = np.flatnonzero((width >= LABEL_MIN_PX) & (boxes.count == 1))
            for i in wide.tolist():
                label = plane_colours.label_of_row[int(meta_rows[i])]
                labels.append(Label(float(x[i]), float(y[i]), float(width[i]), label, int(colour[i])))
    frame = Frame(labels=labels)
    if not pieces.x:
        return frame
    x = np.concatenate(pieces.x)
    y = np.concatenate(pieces.y)
    w = np.concatenate(pieces.w)
    h = np.concatenate(pieces.h)
    colour = np.concatenate(pieces.colour).astype(np.int64)
    frame.box_count = len(x)
    frame.rects_by_colour = group_rects(x, y, w, h, colour)
    return frame


def group_rects(x: np.ndarray, y: np.ndarray, w: np.ndarray, h: np.ndarray, colour: np.ndarray) -> dict:
    """(n, 4) contiguous float64 x/y/w/h arrays, one per colour present (a counting sort, no per-box loop)."""
    order = np.argsort(colour, kind="stable")
    counts = np.bincount(colour, minlength=len(PALETTE))
    rects = np.empty((len(x), 4), np.float64)
    rects[:, 0] = x[order]
    rects[:, 1] = y[order]
    rects[:, 2] = w[order]
    rects[:, 3] = h[order]
    out = {}
    bounds = np.concatenate(([0], np.cumsum(counts)))
    for c in np.flatnonzero(counts).tolist():
        out[c] = rects[bounds[c] : bounds[c + 1]]
    return out


def highlight_rects(rows: list[Row], highlights: dict[int, TrackLod], view: Viewport) -> np.ndarray:
    """Outline rectangles of highlighted events (search matches, rows picked in other views)."""
    parts = []
    for row in rows:
        if row.track is None:
            continue
        track_lod = highlights.get(id(row.track))
        if track_lod is None:
            continue
        for _, _, x, width, y in track_boxes(track_lod, row.y, view):
            part = np.empty((len(x), 4))
            part[:, 0], part[:, 1], part[:, 2], part[:, 3] = x, y, width, ROW_HEIGHT - 2 * BOX_MARGIN_PX
            parts.append(part)
    return np.concatenate(parts) if parts else np.empty((0, 4))
