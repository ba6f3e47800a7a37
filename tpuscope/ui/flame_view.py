"""The "Flame" view: device self time as an icicle of the model's structure (named scopes, Python stacks,
or programs and ops), from `tpuscope.analysis.scope_tree`; what `tpuscope flame` exports.

Time runs across (each frame as wide as its time), depth down, the root (`all`) on top; children are
placed most time first, as speedscope's "left heavy" view places them. Hovering a frame names it with its
total and self time and its share; clicking zooms into it (its ancestors stay above it, full width, so a
click on one zooms back out) and outlines its ops on the timeline and in the op table. The search box
dims every frame whose name does not contain the text and says how much time the matches hold. Frames
holding a fusion's estimated share (`--fusion split`) are hatched. "Selected range" narrows the tree to
the ops starting in the timeline's Shift+drag range.

Painting is one QPainter pass over the frames at least `MIN_FRAME_PX` wide of the zoomed subtree (a
narrower frame hides its subtree), so a tree of any size costs the frames on screen.
"""

from __future__ import annotations

import html

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFontMetrics, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.analysis.scope_tree import (
    BY_OP,
    BY_SCOPE,
    BY_STACK,
    FUSION_ROOT,
    FUSION_SPLIT,
    FlameTree,
    flame_tree,
    flame_tree_result,
)
from tpuscope.analysis.session import op_table_result
from tpuscope.model import order_statistics
from tpuscope.model.trace import Trace
from tpuscope.model.units import SHORT_SPEC, format_duration
from tpuscope.ui.analysis_hub import AnalysisHub
from tpuscope.ui.timeline.palette import PALETTE, colour_of_key
from tpuscope.ui.views import View

ROW_PX = 20  # one depth level
MIN_FRAME_PX = 1.0  # frames narrower than this (and their subtrees) are not painted
LABEL_MIN_PX = 28  # frames narrower than this get no label
DIMMED = QColor(225, 227, 231)
GROUPINGS = ((BY_SCOPE, "Scope"), (BY_STACK, "Python stack"), (BY_OP, "Program / op"))
FUSIONS = ((FUSION_SPLIT, "Split fusions by cost (estimate)"), (FUSION_ROOT, "Fusion on its root's scope"))


class FlameCanvas(QWidget):
    """The icicle of one tree (module docstring); emits `nodeClicked(node)`."""

    nodeClicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMouseTracking(True)
        self.setMinimumHeight(4 * ROW_PX)
        self.tree: FlameTree | None = None
        self.zoom = 0  # the node shown full width
        self.matches: np.ndarray | None = None  # bool per node while searching
        self._rects: list[tuple[QRectF, int]] = []  # painted frames, for hit tests
        self._start = np.zeros(0)  # each node's left edge as a fraction of the zoomed node's time

    def set_tree(self, tree: FlameTree | None) -> None:
        self.tree, self.zoom, self.matches = tree, 0, None
        depth = int(tree.depth.max()) + 1 if tree is not None and len(tree) else 4
        self.setMinimumHeight(depth * ROW_PX + 4)  # deep stacks scroll (the view's scroll area)
        self._layout()
        self.update()

    def set_zoom(self, node: int) -> None:
        self.zoom = node
        self._layout()
        self.update()

    def set_matches(self, matches: np.ndarray | None) -> None:
        self.matches = matches
        self.update()

    def sizeHint(self) -> QSize:
        depth = int(self.tree.depth.max()) + 1 if self.tree is not None and len(self.tree) else 4
        return QSize(600, (depth + 1) * ROW_PX)

    def _layout(self) -> None:
        """Each node's start (as a fraction of the zoomed node's total) in the zoomed subtree: ancestors
        of the zoomed node span it all; its descendants are placed left to right, most time first."""
        tree = self.tree
        if tree is None or not len(tree):
            self._start = np.zeros(0)
            return
        start = np.full(len(tree), np.nan)
        for node in [0, *tree.path(self.zoom)]:
            start[node] = 0.0
        scale = 1.0 / max(float(tree.total_ps[self.zoom]), 1.0)
        stack = [self.zoom]
        while stack:
            node = stack.pop()
            at = start[node]
            for child in tree.children(node):
                start[child] = at
                at += float(tree.total_ps[child]) * scale
                stack.append(child)
        self._start = start
        self._scale = scale

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor("white"))
        self._rects = []
        tree = self.tree
        if tree is None or not len(tree) or not len(self._start):
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "No device time to show.")
            return
        width = float(self.width())
        metrics = QFontMetrics(painter.font())
        hatch = QBrush(QColor(60, 60, 60, 90), Qt.BrushStyle.BDiagPattern)
        outline = QPen(QColor("white"))
        zoom_depth = int(tree.depth[self.zoom])
        ancestors = {0, *tree.path(self.zoom)}
        stack = [0]
        while stack:
            node = stack.pop()
            if node in ancestors and node != self.zoom:
                x, w = 0.0, width
            else:
                x = float(self._start[node]) * width
                w = float(tree.total_ps[node]) * self._scale * width
            if w < MIN_FRAME_PX:
                continue
            y = int(tree.depth[node]) * ROW_PX
            rect = QRectF(x, y, w, ROW_PX - 1)
            name = tree.name(node)
            colour = QColor(PALETTE[colour_of_key(name)]) if node else QColor("#c8ccd4")
            if self.matches is not None and not self.matches[node]:
                colour = DIMMED
            painter.fillRect(rect, colour)
            if tree.estimated[node] and tree.self_ps[node] > 0:  # the estimated shares themselves
                painter.fillRect(rect, hatch)
            painter.setPen(outline)
            painter.drawRect(rect)
            if w >= LABEL_MIN_PX:
                painter.setPen(QColor("black"))
                label = f"{name}  {format_duration(int(tree.total_ps[node]), SHORT_SPEC)}"
                if metrics.horizontalAdvance(label) > w - 6:
                    label = name
                text = metrics.elidedText(label, Qt.TextElideMode.ElideRight, int(w) - 6)
                painter.drawText(rect.adjusted(3, 0, -3, 0), Qt.AlignmentFlag.AlignVCenter, text)
            self._rects.append((rect, node))
            if node in ancestors and node != self.zoom:
                nxt = tree.path(self.zoom)[int(tree.depth[node])] if tree.depth[node] < zoom_depth else None
                if nxt is not None:
                    stack.append(nxt)
            else:
                stack.extend(tree.children(node))

    def node_at(self, point: QPointF) -> int:
        for rect, node in reversed(self._rects):
            if rect.contains(point):
                return node
        return -1

    def describe(self, node: int) -> str:
        tree = self.tree
        assert tree is not None
        total = tree.total_self_ps or 1.0
        lines = [
            f"<b>{html.escape(tree.name(node))}</b>",
            f"total {format_duration(int(tree.total_ps[node]))} ({tree.total_ps[node] * 100 / total:.1f}%)",
            f"self {format_duration(int(tree.self_ps[node]))}",
        ]
        if tree.estimated[node]:
            lines.append("<i>includes a fusion's estimated share (split by instruction cost)</i>")
        return "<br>".join(lines)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        node = self.node_at(event.position())
        if node >= 0:
            QToolTip.showText(event.globalPosition().toPoint(), self.describe(node), self)
        else:
            QToolTip.hideText()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            node = self.node_at(event.position())
            if node >= 0:
                self.nodeClicked.emit(node)


class FlameView(View):
    """The Flame tab (module docstring)."""

    def __init__(self, hub: AnalysisHub | None = None, parent: QWidget | None = None) -> None:
        super().__init__(hub, parent)
        self.tree: FlameTree | None = None
        self.whole: FlameTree | None = None  # the tree of the whole profile, before a range narrows it
        self.range_ps: tuple[int, int] | None = None
        self._build()
        self.follow_trace(self._on_trace)
        self.subscribe_when_shown(flame_tree_result(BY_SCOPE, FUSION_SPLIT), self._show_tree)

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        bar = QHBoxLayout()
        self.by_box = QComboBox()
        for key, title in GROUPINGS:
            self.by_box.addItem(title, key)
        self.fusion_box = QComboBox()
        for key, title in FUSIONS:
            self.fusion_box.addItem(title, key)
        self.search_box = QLineEdit()
        self.search_box.setPlaceholderText("Search frames")
        self.search_box.setClearButtonEnabled(True)
        self.range_box = QCheckBox("Selected range")
        self.range_box.setToolTip("Only ops starting in the timeline's Shift+drag range")
        self.range_box.setEnabled(False)
        self.reset_button = QPushButton("Reset zoom")
        bar.addWidget(QLabel("By"))
        bar.addWidget(self.by_box)
        bar.addWidget(self.fusion_box)
        bar.addWidget(self.search_box, 1)
        bar.addWidget(self.range_box)
        bar.addWidget(self.reset_button)
        layout.addLayout(bar)
        self.status = QLabel("")
        self.status.setTextFormat(Qt.TextFormat.RichText)
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.canvas = FlameCanvas()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(self.canvas)
        layout.addWidget(scroll, 1)
        self.by_box.currentIndexChanged.connect(self._ask)
        self.fusion_box.currentIndexChanged.connect(self._ask)
        self.search_box.textChanged.connect(self.search)
        self.reset_button.clicked.connect(lambda: self.zoom_to(0))
        self.canvas.nodeClicked.connect(self.zoom_to)
        self.range_box.toggled.connect(lambda _on: self._narrow())

    def showEvent(self, event) -> None:
        super().showEvent(event)
        window = self.window()
        summarized = getattr(window, "rangeSummarized", None)
        if summarized is not None and not getattr(self, "_follows_ranges", False):
            summarized.connect(self.set_range_from_pivot)
            self._follows_ranges = True

    def _on_trace(self, trace: Trace | None) -> None:
        self.whole = self.tree = None
        self.range_ps = None
        self.range_box.setEnabled(False)
        self.canvas.set_tree(None)
        self.status.setText("Computing..." if trace is not None else "")

    def _ask(self) -> None:
        if self.hub.analysis is None:
            return
        self.status.setText("Computing...")
        wanted = flame_tree_result(self.by_box.currentData(), self.fusion_box.currentData())
        self.hub.request(wanted, self._show_tree)

    def _show_tree(self, tree: FlameTree | None) -> None:
        self.whole = tree
        self._narrow()

    def set_range_from_pivot(self, pivot) -> None:
        """The timeline's Shift+drag range (the window's AreaPivot), for "Selected range"."""
        self.set_range(int(pivot.t0_ps), int(pivot.t1_ps))

    def set_range(self, t0_ps: int, t1_ps: int) -> None:
        self.range_ps = (t0_ps, t1_ps)
        self.range_box.setEnabled(True)
        if self.range_box.isChecked():
            self._narrow()

    def _narrow(self) -> None:
        """The tree shown: the whole profile's, or the selected range's (ops starting inside it)."""
        tree = self.whole
        if tree is not None and self.range_box.isChecked() and self.range_ps is not None:
            analysis = self.hub.analysis
            table = analysis.get(op_table_result("op", "all")) if analysis is not None else None
            if table is not None:
                starts = [t.start_ps[i] for t, i, _ in table.events.segments]
                start_ps = np.concatenate(starts) if starts else np.empty(0, np.int64)
                keep = (start_ps >= self.range_ps[0]) & (start_ps < self.range_ps[1])
                code = analysis.get(PROGRAM_CODE) if tree.by != BY_OP and analysis is not None else None
                tree = flame_tree(table, code, tree.by, tree.fusion, keep)
        self.tree = tree
        self.canvas.set_tree(tree)
        self.search(self.search_box.text())
        self._say()

    def _say(self, extra: str = "") -> None:
        tree = self.tree
        if tree is None:
            self.status.setText("No device ops in this profile.")
            return
        where = " in the selected range" if self.range_box.isChecked() and self.range_ps else ""
        path = " &gt; ".join(html.escape(tree.name(k)) for k in tree.path(self.canvas.zoom))
        count = len(tree.events.devices) if tree.events is not None else 0
        on = f" on {count} devices" if count > 1 else ""
        text = f"{format_duration(int(tree.total_self_ps))} of device self time{on}{where}"
        if path:
            text += f" &middot; zoomed into {path} ({format_duration(int(tree.total_ps[self.canvas.zoom]))})"
        if tree.has_estimates:
            text += " &middot; hatched: a fusion's time split by estimated instruction cost"
        self.status.setText(text + extra)

    def zoom_to(self, node: int) -> None:
        """Zooms into `node` (0: everything) and outlines its ops on the timeline and in the op table."""
        tree = self.tree
        if tree is None or not 0 <= node < len(tree):
            return
        self.canvas.set_zoom(node)
        self._say()
        if node == 0 or tree.events is None:
            self.highlightRequested.emit([])
            self.opsOutlined.emit(set())
            return
        mask = tree.event_mask(node)
        events = tree.events
        self.highlightRequested.emit(events.events_of(mask))
        self.opsOutlined.emit(
            {events.labels.texts[int(k)] for k in order_statistics.sorted_distinct(events.op[mask])}
        )

    def search(self, text: str) -> None:
        """Dims the frames whose name does not contain `text`; says the time the matches hold."""
        tree = self.tree
        if tree is None or not text.strip():
            self.canvas.set_matches(None)
            if tree is not None:
                self._say()
            return
        found = tree.find(text.strip())
        matches = np.zeros(len(tree), bool)
        matches[found] = True
        # Time of the matches, each counted once: those with no matching ancestor.
        top = [k for k in found.tolist() if not any(matches[a] for a in tree.path(k)[:-1])]
        held = float(tree.total_ps[top].sum()) if top else 0.0
        self.canvas.set_matches(matches)
        share = held * 100 / (tree.total_self_ps or 1.0)
        self._say(f" &middot; {len(found)} frames match: {format_duration(int(held))} ({share:.1f}%)")

    def set_grouping(self, by: str, fusion: str = FUSION_SPLIT) -> None:
        """Shows the tree `by` scope, stack or op (what the pickers choose)."""
        self.by_box.setCurrentIndex(self.by_box.findData(by))
        self.fusion_box.setCurrentIndex(self.fusion_box.findData(fusion))
        self._ask()

    def minimumSizeHint(self) -> QSize:
        return QSize(300, 200)
