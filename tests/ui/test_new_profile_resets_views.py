"""A new profile resets every view (issue 33): after profile A, then no profile or profile B, no widget
of the window (labels, tables, lists, combo boxes, tooltips, chart ticks and texts, the Details dock)
names one of A's ops, every page is scrolled back to its start, and the Compare tab made for A closes.

Real profiles with no op name in common: the TPU v6e sample (A) and the MI300X JAX profile (B).
"""

from __future__ import annotations

import re

import pyqtgraph as pg
from PySide6.QtCore import QAbstractListModel, QModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractScrollArea,
    QComboBox,
    QGraphicsView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QScrollArea,
    QTextEdit,
    QWidget,
)

from tests.paths import SHARED_TRACES
from tests.ui.conftest import LOAD_TIMEOUT_MS, open_and_wait
from tpuscope.ui.main_window import MainWindow
from tpuscope.ui.registry import TIMELINE

A = SHARED_TRACES / "tpu" / "tpu_v6e_inference_4chip.xplane.pb"
B = SHARED_TRACES / "gpu" / "jax_mi300x_attention.xplane.pb"
LAPTOP = (1280, 720)  # small enough that the Overview page scrolls
MAX_MODEL_ROWS = 5000  # rows of a table read for names (the op tables here have tens)
NAME_TOKEN = re.compile(r"[\w.\-]+")


def _op_names(win: MainWindow) -> set[str]:
    """The shown profile's op names (the op table by op over all devices)."""
    analysis = win.hub.analysis
    assert analysis is not None
    table = analysis.op_table("op", "all")
    assert table is not None
    return {table.label(i) for i in table.name}


def _model_texts(model) -> list[str]:
    texts: list[str] = []
    columns = 1 if isinstance(model, QAbstractListModel) else model.columnCount(QModelIndex())
    for row in range(min(model.rowCount(QModelIndex()), MAX_MODEL_ROWS)):
        for column in range(columns):
            index = model.index(row, column)
            for role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
                value = model.data(index, role)
                if isinstance(value, str):
                    texts.append(value)
            # Roles a delegate paints (a finding's title and explanation) are set on the item itself.
            texts += [v for v in model.itemData(index).values() if isinstance(v, str)]
    return texts


def _chart_texts(plot: pg.PlotWidget) -> list[str]:
    """What a chart writes: its axes' custom ticks (a bar chart's op names), its text items."""
    texts: list[str] = []
    item = plot.getPlotItem()
    for name in ("left", "bottom", "right", "top"):
        levels = item.getAxis(name)._tickLevels or []  # the ticks `setTicks` gave it
        texts += [str(label) for level in levels for _, label in level]
    return texts + _scene_texts(plot)


def _scene_texts(view: QGraphicsView) -> list[str]:
    """The texts of a graphics view's scene (a chart's labels, a graph's node names)."""
    texts: list[str] = []
    scene = view.scene()
    for graphic in scene.items() if scene is not None else []:
        for reader in ("toPlainText", "text"):
            read = getattr(graphic, reader, None)
            if callable(read):
                try:
                    value = read()
                except TypeError:
                    continue
                if isinstance(value, str):
                    texts.append(value)
                break
    return texts


def _own_texts(widget: QWidget) -> list[str]:
    """The texts one widget shows or would show on hover (not its children's)."""
    texts = [widget.toolTip()]
    if isinstance(widget, QLabel | QAbstractButton | QLineEdit):
        texts.append(widget.text())
    elif isinstance(widget, QTextEdit | QPlainTextEdit):
        texts.append(widget.toPlainText())
    elif isinstance(widget, QComboBox):
        texts += [widget.itemText(i) for i in range(widget.count())]
    if isinstance(widget, QAbstractItemView) and widget.model() is not None:
        texts += _model_texts(widget.model())
    if isinstance(widget, pg.PlotWidget):
        texts += _chart_texts(widget)
    elif isinstance(widget, QGraphicsView):
        texts += _scene_texts(widget)
    return texts


def _shown_texts(root: QWidget) -> list[str]:
    """Every text a widget under `root` shows or would show on hover."""
    return [text for widget in [root, *root.findChildren(QWidget)] for text in _own_texts(widget)]


def _where(widget: QWidget) -> str:
    """`OpsView > QSplitter > TopOpsChart`: where a widget is, for a failure's message."""
    chain = []
    while widget is not None:
        chain.append(type(widget).__name__)
        widget = widget.parentWidget()
    return " < ".join(chain[:6])


def _stale_widgets(root: QWidget, old: set[str], new: set[str]) -> dict[str, set[str]]:
    """The widgets under `root` naming ops of `old`, with the names each shows."""
    found: dict[str, set[str]] = {}
    for widget in [root, *root.findChildren(QWidget)]:
        names = _stale(_own_texts(widget), old, new)
        if names:
            found.setdefault(_where(widget), set()).update(names)
    return found


def _stale(texts: list[str], old: set[str], new: set[str]) -> set[str]:
    """The names of `old` (not also `new`'s) that a text shows: whole names, or a chart label's start
    cut with an ellipsis."""
    found: set[str] = set()
    for text in texts:
        tokens = set(NAME_TOKEN.findall(text))
        found |= old & tokens
        for piece in text.split("\u2026")[:-1]:  # "broadcast_add_fusi…": a cut name
            start = NAME_TOKEN.findall(piece)[-1:] or [""]
            if len(start[0]) >= 8:
                found |= {n for n in old if n.startswith(start[0])} - {
                    n for n in old if any(m.startswith(start[0]) for m in new)
                }
    return found


def _show_every_view(qtbot, win: MainWindow) -> None:
    """Each tab brought to the front once and filled, as a user clicking through them."""
    for key in list(win.views):
        if key == TIMELINE:
            continue
        assert win.show_view(key)
        win.hub.wait()
        qtbot.wait(10)


def test_a_new_profile_leaves_nothing_of_the_last_one_in_any_view(qtbot, window: MainWindow, tmp_path):
    window.resize(*LAPTOP)
    open_and_wait(qtbot, window, A)
    names_a = _op_names(window)
    # Only names that are A's own instances (`copy-start.3`, `broadcast_add_fusion`), not bare opcode
    # words a rule's text may use on any profile.
    specific_a = {n for n in names_a if re.search(r"[._]", n)}
    _show_every_view(qtbot, window)
    texts = _shown_texts(window)
    seen = _stale(texts, specific_a, set())
    assert len(seen) >= 5, "the views should show A's ops before B opens (else this test proves nothing)"
    ops = window.views["ops"]
    assert _stale(_chart_texts(ops.bar_plot), specific_a, set())  # the Top 15 chart names A's ops
    window.outline_ops({sorted(specific_a)[0]})
    page = window.views["overview"].findChild(QScrollArea)
    window.show_view("overview")
    qtbot.waitUntil(lambda: page.verticalScrollBar().maximum() > 0)
    page.verticalScrollBar().setValue(page.verticalScrollBar().maximum())
    window.open_comparison(A, B)
    compare = window.views["compare"]
    qtbot.waitUntil(lambda: compare.result is not None, timeout=LOAD_TIMEOUT_MS)

    # No profile (what a pod shows before a host is opened): every view empty of A.
    window.show_no_trace()
    window.hub.wait()
    left = _stale_widgets(window, specific_a, set())
    assert not left, f"with no profile shown, these widgets still name A's ops: {left}"
    assert "compare" not in window.made_views and "Compare" not in [
        window.tabs.tabText(i) for i in range(window.tabs.count())
    ]
    assert A.name not in window.status_label.text() and window.path is None
    # An empty chart's axes do not keep the last profile's scale (0-15 bars, 0-78 s).
    assert ops.bar_plot.getPlotItem().vb.viewRange() == [[0.0, 1.0], [0.0, 1.0]]

    open_and_wait(qtbot, window, B)
    names_b = _op_names(window)
    assert not names_a & names_b
    _show_every_view(qtbot, window)
    window.show_view("overview")
    qtbot.wait(10)
    left = _stale_widgets(window, specific_a, names_b)
    assert not left, f"after B opened, these widgets still name A's ops: {left}"
    assert _op_names(window) & set(_chart_texts(window.views["ops"].bar_plot))  # B's own bars instead
    assert not ops.model.outlined_names & names_a  # the op outlined in A is not outlined in B
    for area in window.findChildren(QAbstractScrollArea):
        if area.isVisible():
            assert area.verticalScrollBar().value() == area.verticalScrollBar().minimum(), area
    window.grab().save(str(tmp_path / "after_b.png"))
