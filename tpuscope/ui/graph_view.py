"""The "Graph" view: the HLO graph around an op, top to bottom (operands above, users below).

It shows `tpuscope.analysis.op_graph.OpGraph`, the same graph `tpuscope graph` prints: every
instruction within N hops of the op (operands and users alike), each a box with its name, opcode,
shape and device time, filled by its device time (white: none recorded, to dark orange: the most
in the picture); edges run from operand to user. The layout is the layered one of
`tpuscope.analysis.graph_layout` (Sugiyama et al.'s layers, then barycenter ordering for fewer
crossings), computed here from the boxes' sizes in this font. "Expand fusions" shows the
instructions each fusion fused inside a dashed frame. Edges XLA's rules say could not be fused
are dashed red, and the reasons are listed under the graph (`tpuscope.analysis.fusion_hints`).

Before an op is picked it shows the op with the most device time; any view that selects an op
(the op table, the timeline, a finding, through the Details dock's "Show in graph") opens it on that
op (`select(OpGraphAt)`). Click a box to read its HLO text and outline its op in the other views;
double-click it to centre the graph there; the wheel zooms.
"""

from __future__ import annotations

import html
from functools import partial

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPainterPath, QPen, QPolygonF
from PySide6.QtWidgets import (
    QCheckBox,
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsSimpleTextItem,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from tpuscope.analysis.graph_layout import Layout, layout
from tpuscope.analysis.hlo_graph import DEFAULT_RADIUS, OpNotFound
from tpuscope.analysis.op_graph import HEAVIEST_OP, MAX_RADIUS, NoPrograms, OpGraph, op_graph_result
from tpuscope.export.graph_dot import HEAT_COLOURS, heat_class
from tpuscope.model import order_statistics
from tpuscope.model.trace import Trace
from tpuscope.model.units import format_duration
from tpuscope.ui.analysis_hub import AnalysisHub
from tpuscope.ui.views import OpGraphAt, View

SHAPE_CHARS = 40  # a box shows this much of a shape; the details pane has it whole
BOX_PADDING = 8.0
CENTRE_PEN = QPen(QColor(20, 20, 20), 3)
BOX_PEN = QPen(QColor(90, 96, 110), 1)
EDGE_PEN = QPen(QColor(110, 116, 128), 1.4)
HINT_PEN = QPen(QColor(176, 58, 46), 1.6, Qt.PenStyle.DashLine)
FRAME_PEN = QPen(QColor(120, 120, 120), 1, Qt.PenStyle.DashLine)
ARROW_PX = 7.0
ZOOM_STEP = 1.15
MIN_FIT_SCALE = 0.8  # below this the boxes' text is too small to read at a laptop's DPI (our heuristic)


def box_lines(found: OpGraph, k: int) -> list[str]:
    """The text of node `k`'s box: name, opcode (and fusion kind), shape, device time."""
    graph, node = found.part.graph, int(found.part.nodes[k])
    opcode = graph.opcode[node] + (f" ({graph.fusion_kind[node]})" if graph.fusion_kind[node] else "")
    shape = graph.shape[node]
    shape = shape if len(shape) <= SHAPE_CHARS else shape[: SHAPE_CHARS - 1] + "\u2026"
    lines = [graph.names[node], opcode, shape]
    time = int(found.part.self_ps[k])
    if time > 0:
        lines.append(format_duration(time))
    return lines


def _program_edge(graph, source: int, target: int) -> tuple[str, str]:
    """The program's edge an edge drawn into an expanded fusion stands for: an operand feeding a
    fused parameter is the operand feeding the fusion (what the hints name)."""
    owner = int(graph.fused_into[target])
    if owner >= 0 and graph.opcode[target] == "parameter" and graph.fused_into[source] < 0:
        target = owner
    return graph.names[source], graph.names[target]


class _GraphCanvas(QGraphicsView):
    """The scene, zoomed by the wheel; reports clicks and double-clicks on boxes by node position."""

    def __init__(self, owner: GraphView):
        super().__init__(owner)
        self.owner = owner
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)

    def wheelEvent(self, event) -> None:
        factor = ZOOM_STEP if event.angleDelta().y() > 0 else 1 / ZOOM_STEP
        self.scale(factor, factor)

    def _node_at(self, event) -> int | None:
        item = self.itemAt(event.position().toPoint())
        while item is not None and item.data(0) is None:
            item = item.parentItem()
        return int(item.data(0)) if item is not None else None

    def mousePressEvent(self, event) -> None:
        node = self._node_at(event)
        if node is not None:
            self.owner.pick_node(node)
        super().mousePressEvent(event)

    def mouseDoubleClickEvent(self, event) -> None:
        node = self._node_at(event)
        if node is not None:
            self.owner.centre_on_node(node)
        super().mouseDoubleClickEvent(event)


class GraphView(View):
    """The HLO graph around an op (module docstring)."""

    def __init__(self, hub: AnalysisHub | None = None, parent: QWidget | None = None) -> None:
        super().__init__(hub, parent)
        self.found: OpGraph | None = None
        self.layout_: Layout | None = None
        self.message = ""  # what the view says instead of a graph ("" while it shows one)
        self._wanted: OpGraphAt | None = None  # the op asked for; None: the heaviest one
        self._picked = -1
        self._asked = ""  # the name of the graph result asked for last
        self._build()
        self.follow_trace(self._on_trace)
        self.subscribe_when_shown(HEAVIEST_OP, self._show_heaviest, self._show_error)

    # --- construction -------------------------------------------------------------------------
    def _build(self) -> None:
        self.op_edit = QLineEdit()
        self.op_edit.setPlaceholderText("HLO op name, e.g. fusion.3")
        self.radius_spin = QSpinBox()
        self.radius_spin.setRange(0, MAX_RADIUS)
        self.radius_spin.setValue(DEFAULT_RADIUS)
        self.radius_spin.setPrefix("hops: ")
        self.expand_box = QCheckBox("Expand fusions")
        fit = QPushButton("Fit")
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Op:"))
        controls.addWidget(self.op_edit, 1)
        controls.addWidget(self.radius_spin)
        controls.addWidget(self.expand_box)
        controls.addWidget(fit)
        self.summary_label = QLabel("No profile loaded.")
        self.summary_label.setWordWrap(True)
        self.legend_label = QLabel(self._legend_html())
        self.legend_label.setTextFormat(Qt.TextFormat.RichText)

        self.scene = QGraphicsScene(self)
        self.canvas = _GraphCanvas(self)
        self.canvas.setScene(self.scene)
        self.info = QTextBrowser()
        self.info.setOpenLinks(False)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.canvas)
        splitter.addWidget(self.info)
        splitter.setStretchFactor(0, 4)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([400, 100])

        layout_ = QVBoxLayout(self)
        layout_.addLayout(controls)
        top = QHBoxLayout()
        top.addWidget(self.summary_label, 1)
        top.addWidget(self.legend_label)
        layout_.addLayout(top)
        layout_.addWidget(splitter, 1)

        self.op_edit.returnPressed.connect(self._ask_typed)
        self.radius_spin.valueChanged.connect(lambda _: self._ask())
        self.expand_box.toggled.connect(lambda _: self._ask())
        fit.clicked.connect(lambda: self.fit(whole=True))

    @staticmethod
    def _legend_html() -> str:
        chips = "".join(
            f"<span style='background:{c};border:1px solid #888'>&nbsp;&nbsp;&nbsp;</span>"
            for c in HEAT_COLOURS
        )
        return f"device time: none {chips} most"

    # --- input ----------------------------------------------------------------------------------
    def _on_trace(self, trace: Trace | None) -> None:
        self._wanted = None
        self._asked = ""
        self.found = self.layout_ = None
        self.message = ""
        self.scene.clear()
        self.info.clear()
        self.op_edit.clear()
        self.summary_label.setText("Computing the graph\u2026" if trace is not None else "No profile loaded.")

    def select(self, target: object) -> None:
        """Shows the graph around an `OpGraphAt`'s op."""
        if isinstance(target, OpGraphAt):
            self._wanted = target
            self.op_edit.setText(target.name)
            self._ask()

    def _ask_typed(self) -> None:
        name = self.op_edit.text().strip()
        if name:
            self._wanted = OpGraphAt(name)
            self._ask()

    def _ask(self) -> None:
        """Asks the hub for the graph of the op wanted with the radius and expansion chosen."""
        if self._wanted is None or self.hub.analysis is None:
            return
        program = str(self._wanted.program_id) if self._wanted.program_id is not None else None
        result = op_graph_result(
            self._wanted.name, self.radius_spin.value(), self.expand_box.isChecked(), program
        )
        self.summary_label.setText(f"Computing the graph around {self._wanted.name}\u2026")
        self._asked = result.name
        self.hub.request(result, partial(self._answer, result.name), partial(self._answer_error, result.name))

    def _answer(self, asked: str, found: OpGraph) -> None:
        if asked == self._asked:  # an answer to an older question (another op, radius) is dropped
            self.show_graph(found)

    def _answer_error(self, asked: str, error: Exception) -> None:
        if asked == self._asked:
            self._show_error(error)

    def _show_heaviest(self, name: str | None) -> None:
        if self._wanted is not None:
            return  # an op was picked meanwhile
        if name is None:
            self._say("This profile keeps no HLO programs with device time, so there is no op graph to show.")
            return
        self._wanted = OpGraphAt(name)
        self.op_edit.setText(name)
        self._ask()

    def _show_error(self, error: Exception) -> None:
        if isinstance(error, NoPrograms):
            self._say(
                "This profile keeps no compiled programs (no HLO): the graph needs XLA's modules, "
                "which XPlane profiles keep in /host:metadata."
            )
        elif isinstance(error, OpNotFound):
            close = f" Close matches: {', '.join(error.close)}." if error.close else ""
            self._say(f"No HLO op named {error.name!r} in this profile's programs.{close}")
        else:
            self._say(f"The graph could not be computed: {error}")

    def _say(self, text: str) -> None:
        self.message = text
        self.found = self.layout_ = None
        self.scene.clear()
        self.summary_label.setText(text)

    # --- drawing --------------------------------------------------------------------------------
    def show_graph(self, found: OpGraph) -> None:
        """Draws `found` (laid out here, in this view's font) and fits it in view."""
        self.message = ""
        self.found = found
        self._picked = -1
        part = found.part
        font = QFont(self.font())
        bold = QFont(font)
        bold.setBold(True)
        metrics, bold_metrics = QFontMetricsF(font), QFontMetricsF(bold)
        lines = [box_lines(found, k) for k in range(len(part))]
        widths = np.array(
            [
                max(bold_metrics.horizontalAdvance(t[0]), *(metrics.horizontalAdvance(s) for s in t[1:]))
                + 2 * BOX_PADDING
                for t in lines
            ]
        )
        heights = np.array([len(t) * metrics.lineSpacing() + 2 * BOX_PADDING for t in lines])
        placed = layout(widths, heights, part.edge_src, part.edge_dst)
        self.layout_ = placed
        self.scene.clear()
        self._draw_frames(found, placed, widths, heights)
        self._draw_edges(found, placed, heights)
        most = int(part.self_ps.max()) if len(part.self_ps) else 0
        for k in range(len(part)):
            self._draw_box(k, lines[k], placed, widths[k], heights[k], most, font, bold, metrics)
        # The scene's rectangle only ever grows by itself: this graph's own, so Fit shows all of it.
        self.scene.setSceneRect(self.scene.itemsBoundingRect().adjusted(-8, -8, 8, 8))
        shown = f"HLO around {found.op} in {found.program_label}: {len(part)} instructions, "
        shown += f"{len(part.edge_src)} edges, radius {part.radius}"
        if part.truncated:
            shown += " (cut at the node limit)"
        if found.place.others:
            shown += f"; also named so in {len(found.place.others)} other program(s)"
        self.summary_label.setText(shown)
        centre = int(np.flatnonzero(part.nodes == part.center)[0])
        self._show_info(centre)
        self.fit()

    def _draw_box(self, k, lines, placed, width, height, most, font, bold, metrics) -> None:
        found = self.found
        assert found is not None
        part = found.part
        x, y = float(placed.x[k]), float(placed.y[k])
        box = QGraphicsRectItem(QRectF(x - width / 2, y - height / 2, width, height))
        box.setBrush(QBrush(QColor(HEAT_COLOURS[heat_class(int(part.self_ps[k]), most)])))
        box.setPen(CENTRE_PEN if int(part.nodes[k]) == part.center else BOX_PEN)
        box.setData(0, k)
        box.setToolTip(html.escape(part.graph.text[int(part.nodes[k])][:2000]))
        box.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, False)
        self.scene.addItem(box)
        top = y - height / 2 + BOX_PADDING
        for number, text in enumerate(lines):
            item = QGraphicsSimpleTextItem(text, box)
            item.setFont(bold if number == 0 else font)
            item.setPos(x - width / 2 + BOX_PADDING, top + number * metrics.lineSpacing())

    def _draw_edges(self, found: OpGraph, placed: Layout, heights: np.ndarray) -> None:
        part, graph = found.part, found.part.graph
        hinted = {(h.producer, h.consumer) for h in found.hints}
        for e, points in enumerate(placed.edge_paths):
            a, b = int(part.edge_src[e]), int(part.edge_dst[e])
            start = QPointF(points[0, 0], points[0, 1] + heights[a] / 2)
            end = QPointF(points[-1, 0], points[-1, 1] - heights[b] / 2)
            path = QPainterPath(start)
            for x, y in points[1:-1]:
                path.lineTo(QPointF(float(x), float(y)))
            path.lineTo(end)
            pen = (
                HINT_PEN
                if _program_edge(graph, int(part.nodes[a]), int(part.nodes[b])) in hinted
                else EDGE_PEN
            )
            item = QGraphicsPathItem(path)
            item.setPen(pen)
            item.setZValue(-1)
            self.scene.addItem(item)
            before = QPointF(points[-2, 0], points[-2, 1]) if len(points) > 2 else start
            self._arrow(before, end, pen)

    def _arrow(self, before: QPointF, tip: QPointF, pen: QPen) -> None:
        direction = tip - before
        length = max((direction.x() ** 2 + direction.y() ** 2) ** 0.5, 1e-6)
        ux, uy = direction.x() / length, direction.y() / length
        base = QPointF(tip.x() - ux * ARROW_PX, tip.y() - uy * ARROW_PX)
        side = QPointF(-uy * ARROW_PX / 2, ux * ARROW_PX / 2)
        head = self.scene.addPolygon(QPolygonF([tip, base + side, base - side]), QPen(pen.color()))
        head.setBrush(QBrush(pen.color()))
        head.setZValue(-1)

    def _draw_frames(self, found: OpGraph, placed: Layout, widths: np.ndarray, heights: np.ndarray) -> None:
        """A dashed frame around each expanded fusion's instructions, labelled with the fusion."""
        part, graph = found.part, found.part.graph
        owners = graph.fused_into[part.nodes]
        for owner in order_statistics.sorted_distinct(owners[owners >= 0]):
            members = np.flatnonzero(owners == owner)
            left = float(np.min(placed.x[members] - widths[members] / 2)) - BOX_PADDING
            right = float(np.max(placed.x[members] + widths[members] / 2)) + BOX_PADDING
            top = float(np.min(placed.y[members] - heights[members] / 2)) - 2 * BOX_PADDING
            bottom = float(np.max(placed.y[members] + heights[members] / 2)) + BOX_PADDING
            frame = self.scene.addRect(QRectF(left, top, right - left, bottom - top), FRAME_PEN)
            frame.setZValue(-2)
            label = self.scene.addSimpleText(f"fused into {graph.names[int(owner)]}")
            label.setBrush(QBrush(QColor(100, 100, 100)))
            label.setPos(left + 2, top - label.boundingRect().height())

    def fit(self, whole: bool = False) -> None:
        """Fits the graph in view, never larger than its natural size nor, unless `whole` (the Fit
        button), smaller than MIN_FIT_SCALE: a taller graph scrolls, centred on the op, its text
        still readable."""
        rect = self.scene.itemsBoundingRect()
        if rect.isEmpty():
            return
        self.canvas.resetTransform()
        view = self.canvas.viewport().rect()
        scale = min(view.width() / max(rect.width(), 1.0), view.height() / max(rect.height(), 1.0), 1.0)
        scale = scale * 0.97 if whole else max(scale * 0.97, MIN_FIT_SCALE)
        self.canvas.scale(scale, scale)
        self.canvas.centerOn(self._centre_point() if scale == MIN_FIT_SCALE else rect.center())

    def _centre_point(self) -> QPointF:
        """The centre op's box centre in the scene (the middle of the picture when none)."""
        found, placed = self.found, self.layout_
        if found is None or placed is None:
            return self.scene.itemsBoundingRect().center()
        k = int(np.flatnonzero(found.part.nodes == found.part.center)[0])
        return QPointF(float(placed.x[k]), float(placed.y[k]))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit()

    # --- picking ---------------------------------------------------------------------------------
    def pick_node(self, k: int) -> None:
        """A click on box `k`: its HLO text below the graph, its op outlined in the other views."""
        if self.found is None:
            return
        self._picked = k
        self._show_info(k)
        name = self.found.part.graph.names[int(self.found.part.nodes[k])]
        self.opsOutlined.emit({name})

    def centre_on_node(self, k: int) -> None:
        """A double-click on box `k`: the graph around that instruction."""
        if self.found is None:
            return
        graph = self.found.part.graph
        node = int(self.found.part.nodes[k])
        self.select(OpGraphAt(graph.names[node], self.found.place.program_id))

    def _show_info(self, k: int) -> None:
        found = self.found
        assert found is not None
        part, graph = found.part, found.part.graph
        node = int(part.nodes[k])
        time = int(part.self_ps[k])
        parts = [f"<b>{html.escape(graph.names[node])}</b>"]
        parts.append(
            f" &middot; device time {format_duration(time)}" if time > 0 else " &middot; no device time"
        )
        owner = int(graph.fused_into[node])
        if owner >= 0:
            parts.append(f" &middot; fused into {html.escape(graph.names[owner])}")
        parts.append(f"<pre style='white-space:pre-wrap'>{html.escape(graph.text[node])}</pre>")
        if found.hints:
            items = "".join(
                f"<li><code>{html.escape(h.producer)} \u2192 {html.escape(h.consumer)}</code>: "
                f"{html.escape(h.reason)}</li>"
                for h in found.hints
            )
            parts.append(f"<p style='margin:4px 0 0 0'><b>Not fused, and why</b></p><ul>{items}</ul>")
        self.info.setHtml("".join(parts))
