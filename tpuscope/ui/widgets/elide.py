"""Shortening a name to its room while keeping the part that tells it from its neighbours.

Qt's middle elision cuts wherever the middle falls: "memory in use…tor GPU_0_bfc" lost most of the
allocator's name, "…fload_stress_test.py:3" the line number's last digit, and a kernel's template
arguments (what tells two instantiations apart) went first (issue 37). Here the distinguishing tail
is kept whole and the head is cut instead:

- a source location keeps its file name and line ("…/offload_stress_test.py:31"); with less room the
  file name is cut from its left, never the line;
- a C++ symbol keeps its last template arguments ("void at::native::elementwise_ker…<float, 4>"); its
  parameter list goes first, then its namespaces, then the start of its arguments
  ("elementwise_kernel<…float, 4>");
- an op name keeps its instance number ("broadcast_add_fu….1");
- anything else keeps its last word ("memory in use (alloc…GPU_0_bfc").

`elide` is pure Python over a `fits(text)` test, so it is tested without a font; `elided` and
`ElidingDelegate` apply it with Qt's font metrics. The full name stays in the tooltip.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QFontMetricsF, QPainter
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem

ELLIPSIS = "\u2026"
_LOCATION = re.compile(r"(?P<file>[^/\\\s]+:\d+(?::\d+)?)$")  # file.py:31 or file.py:31:7 at the end
_WORD_BREAKS = " /\\:(,"
_NUMBERED = re.compile(r"[.#_-]\d+$")  # XLA's and PyTorch's instance numbers: fusion.12, ProfilerStep#3


def elide(text: str, fits: Callable[[str], bool]) -> str:
    """`text`, or a shortening of it that `fits` and keeps its distinguishing tail (the module
    docstring); "" when not even an ellipsis fits."""
    if fits(text):
        return text
    head, tail, joiner = _split(text)
    if not fits(ELLIPSIS + joiner + tail):
        if tail.startswith("<"):  # a symbol: its own name, then as much of its arguments' end as fits
            name = re.split(r"[\s:]", head.rstrip())[-1]
            shortened = _keep_end(tail[1:], lambda end: fits(f"{name}<{end}"))
            if name and shortened:
                return f"{name}<{shortened}"
        return _keep_end(tail, fits)  # the tail alone does not fit: its end (the line, the last args)
    low, high = 0, len(head)  # the longest head that fits before the ellipsis
    while low < high:
        middle = (low + high + 1) // 2
        if fits(head[:middle].rstrip() + ELLIPSIS + joiner + tail):
            low = middle
        else:
            high = middle - 1
    return head[:low].rstrip() + ELLIPSIS + joiner + tail


def _split(text: str) -> tuple[str, str, str]:
    """(head that may be cut, tail kept whole, what joins them after the ellipsis)."""
    location = _LOCATION.search(text)
    if location is not None and location.start() > 0:
        separator = text[location.start() - 1]
        joiner = separator if separator in "/\\" else ""
        return text[: location.start() - len(joiner)], location.group("file"), joiner
    numbered = _NUMBERED.search(text)
    if numbered is not None and " " not in text and numbered.start() > 0:
        return text[: numbered.start()], numbered.group(), ""
    symbol = _without_parameters(text)
    if symbol.endswith(">") and "<" in symbol:
        start = _template_start(symbol)
        if start > 0:
            return symbol[:start], symbol[start:], ""
    cut = max(text.rstrip().rfind(c) for c in _WORD_BREAKS)
    if 0 < cut < len(text) - 1:
        return text[: cut + 1], text[cut + 1 :], ""
    return text, "", ""


def _without_parameters(text: str) -> str:
    """A C++ signature without its trailing parameter list: "f<int>(float, int)" -> "f<int>"."""
    if not text.endswith(")"):
        return text
    depth = 0
    for position in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[position], 0)
        if depth == 0:
            return text[:position] if position > 0 else text
    return text


def _template_start(symbol: str) -> int:
    """Where the last top-level template argument list of `symbol` (ending in ">") opens."""
    depth = 0
    for position in range(len(symbol) - 1, -1, -1):
        depth += {">": 1, "<": -1}.get(symbol[position], 0)
        if depth == 0:
            return position
    return 0


def _keep_end(text: str, fits: Callable[[str], bool]) -> str:
    for start in range(1, len(text)):
        if fits(ELLIPSIS + text[start:]):
            return ELLIPSIS + text[start:]
    return ELLIPSIS if fits(ELLIPSIS) else ""


def elided(metrics: QFontMetricsF, text: str, width_px: float) -> str:
    """`elide` in a font: `text` shortened to `width_px` pixels."""
    return elide(text, lambda candidate: metrics.horizontalAdvance(candidate) <= width_px)


class ElidingDelegate(QStyledItemDelegate):
    """A table column whose names are shortened by `elide` (the full name is the cell's tooltip)."""

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        shown = QStyleOptionViewItem(option)
        self.initStyleOption(shown, index)
        room = shown.rect.width() - 2 * CELL_PADDING_PX
        text = shown.text
        if text and room > 0:
            shown.text = elided(QFontMetricsF(shown.font), text, room)
            shown.textElideMode = Qt.TextElideMode.ElideNone
        widget = shown.widget
        style = widget.style() if widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, shown, painter, widget)


CELL_PADDING_PX = 6  # a cell's text margins in Qt's styles (our measurement: 3 px a side in Fusion)
