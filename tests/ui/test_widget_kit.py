"""The shared widget kit on its own: which bar a chart coordinate falls on, and cells that sort by
their numbers."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QTableWidget

from tpuscope.ui.widgets.chart_hits import BarSlots
from tpuscope.ui.widgets.code_spans import code_spans_html, without_code_marks
from tpuscope.ui.widgets.labels import ELLIPSIS, code_span_words, wrap_code_spans
from tpuscope.ui.widgets.tables import SortableItem


def test_a_coordinate_falls_on_the_bar_whose_slot_holds_it():
    slots = BarSlots(np.array([0.0, 1.0, 2.0]), half_width=0.4)
    assert [slots.bar_at(x) for x in (-0.4, 0.0, 0.39, 0.6, 1.2, 2.39)] == [0, 0, 0, 1, 1, 2]
    assert [slots.bar_at(x) for x in (-0.41, 0.41, 0.5, 1.45, 2.41, 9.0)] == [None] * 6  # gaps and outside


def test_touching_slots_give_the_shared_edge_to_the_later_bar():
    slots = BarSlots(np.array([0.0, 1.0, 2.0]), half_width=0.5)
    assert [slots.bar_at(x) for x in (-0.5, 0.5, 1.5, 2.4999)] == [0, 1, 2, 2]
    assert slots.bar_at(2.5) is None


def test_bars_keep_the_numbers_they_were_given_in_any_order():
    # Horizontal bars drawn top first: bar 0 at y=2, bar 2 at y=0.
    slots = BarSlots(np.array([2.0, 1.0, 0.0]), half_width=0.5)
    assert [slots.bar_at(y) for y in (2.1, 1.0, -0.2)] == [0, 1, 2]


def test_no_bars_hold_nothing():
    assert BarSlots().bar_at(0.0) is None and len(BarSlots()) == 0


@pytest.mark.parametrize("size", [22.0, 13.78, 0.63, 1.2637913741223672])
def test_uniform_slots_agree_with_floor_division_at_every_pixel(size):
    start, count = 71.0, 40
    slots = BarSlots.uniform(start, size, count)
    for pixel in range(0, int(start + size * count) + 5):
        index = (pixel - start) // size
        expected = int(index) if 0 <= index < count else None
        assert slots.bar_at(pixel) == expected, pixel


def test_sortable_cells_sort_by_number_and_the_rest_by_text(qtbot):
    table = QTableWidget(4, 2)
    qtbot.addWidget(table)
    sizes = [("9 MiB", 9 * 2**20), ("10 KiB", 10 * 2**10), ("1.5 GiB", 1.5 * 2**30), ("", 0)]
    for row, (text, key) in enumerate(sizes):
        table.setItem(row, 0, SortableItem(text, key))
        table.setItem(row, 1, SortableItem(["b", "d", "a", "c"][row]))
    table.sortItems(0, Qt.SortOrder.AscendingOrder)
    # By number, not as text ("" < "1.5 GiB" < "10 KiB" < "9 MiB").
    assert [table.item(r, 0).text() for r in range(4)] == ["", "10 KiB", "9 MiB", "1.5 GiB"]
    assert table.item(3, 0).key == 1.5 * 2**30 and table.item(0, 1).key is None
    table.sortItems(1, Qt.SortOrder.DescendingOrder)
    assert [table.item(r, 1).text() for r in range(4)] == ["d", "c", "b", "a"]


def test_code_spans_become_code_pieces_that_keep_their_punctuation():
    words = code_span_words("Worst: `copy-done.4` 24.68%, `a b`, and a lone ` mark")
    assert words[1] == [("copy-done.4", True)]
    assert words[3] == [("a b", True), (",", False)]  # a span stays whole, its comma on its line
    assert words[-2] == [("`", False)]  # a backtick that opens no span is text
    assert code_spans_html("run `a<b>` now") == "run <code>a&lt;b&gt;</code> now"
    assert without_code_marks("run `a<b>` now, `x`") == "run a<b> now, x"


def test_wrapped_code_spans_end_in_an_ellipsis_when_cut(qtbot):
    label = QLabel()
    metrics = label.fontMetrics()
    text = "the devices spent 96% of their time in `copy-done.4` and `copy-done.2` and more " * 3
    width = metrics.horizontalAdvance("the devices spent 96% of their")
    lines = wrap_code_spans(text, metrics, metrics, width, 2)
    assert len(lines) == 2 and lines[-1][-1][-1] == (ELLIPSIS, False)
    for line in lines:
        widths = [sum(metrics.horizontalAdvance(t) for t, _ in word) for word in line]
        assert sum(widths) + metrics.horizontalAdvance(" ") * (len(line) - 1) <= width
