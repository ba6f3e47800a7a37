"""Elision that keeps what tells names apart (issue 37): a source location keeps its file name and
line, an allocator its name, a kernel its template tail, each in a real font at the timeline label
column's width and in the Source and Op breakdown tables' name columns."""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontMetricsF

from tests.conftest import TPU_TRACE
from tests.ui.conftest import open_and_wait
from tests.ui.widgets import show_exposed
from tpuscope.ui.main_window import MainWindow
from tpuscope.ui.timeline.texts import KEEP_TAIL, StaticTexts
from tpuscope.ui.timeline.view import LABEL_COLUMN_PX
from tpuscope.ui.widgets.elide import ELLIPSIS, ElidingDelegate, elide, elided

LOCATION = "/home/someone/projects/jax_experiments/offload/offload_stress_test.py:31"
ALLOCATOR = "memory in use (allocator GPU_0_bfc)"
KERNEL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
)


def _chars(n: int):
    return lambda text: len(text) <= n


def test_the_distinguishing_tail_is_kept_whole():
    assert elide("short.py:3", _chars(40)) == "short.py:3"  # what fits is not touched
    assert elide(LOCATION, _chars(40)).endswith("/offload_stress_test.py:31")
    assert elide(LOCATION, _chars(14)).endswith("test.py:31")  # the file name cut from its left, not the line
    assert elide(ALLOCATOR, _chars(25)) == f"memory in use{ELLIPSIS}GPU_0_bfc)"
    shown = elide(KERNEL, _chars(60))
    assert shown.startswith("vectorized_elementwise_kernel<") and shown.endswith("std::array<char*, 1ul> >")
    assert elide(KERNEL, _chars(100)).endswith("<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >")
    assert elide("broadcast_add_fusion.1", _chars(15)) == f"broadcast_ad{ELLIPSIS}.1"  # which of the fusions
    assert elide("ProfilerStep#12", _chars(9)) == f"Profi{ELLIPSIS}#12"
    for text in (LOCATION, ALLOCATOR, KERNEL):
        for room in range(0, 90):
            assert len(elide(text, _chars(room))) <= room


def test_in_a_real_font_at_the_timeline_label_columns_width(qtbot):
    font = QFont()
    font.setPointSizeF(8.5)
    texts = StaticTexts(font)
    room = LABEL_COLUMN_PX - 26
    for text, kept in ((LOCATION, ".py:31"), (ALLOCATOR, "GPU_0_bfc)"), (KERNEL, "1ul> >")):
        static = texts.fitted(text, room, KEEP_TAIL)
        assert static is not None and static.text().endswith(kept)
        assert QFontMetricsF(font).horizontalAdvance(static.text()) <= room
    assert elided(QFontMetricsF(font), ALLOCATOR, 10_000) == ALLOCATOR


def test_the_source_and_op_tables_name_columns_keep_the_tail(qtbot, settings):
    window = show_exposed(qtbot, MainWindow(settings), 1280, 720)
    open_and_wait(qtbot, window, TPU_TRACE)
    ops = window.views["ops"].table_view
    source = window.views["source"].lines_view
    for table, columns in ((ops, range(3)), (source, [0])):
        for column in columns:
            assert isinstance(table.itemDelegateForColumn(column), ElidingDelegate)
    window.wait_for_background_work()
