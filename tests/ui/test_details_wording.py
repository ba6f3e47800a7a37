"""Details in human words (issue 37): raw stat keys and ids behind "All stats", a long kernel name's
title at most two lines with its full name copyable, and range pivot names never broken mid-word."""

from __future__ import annotations

import math

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtGui import QFontMetricsF, QGuiApplication

from tests.conftest import TPU_TRACE
from tests.paths import SHARED_TRACES
from tpuscope.analysis.area_pivot import pivot_area
from tpuscope.app.opener import open_trace
from tpuscope.ui.details import ALL_STATS_LINK, COPY_NAME_LINK, DetailsPanel
from tpuscope.ui.range_summary import NAME_CELL_CHARS

H100_TRACE = SHARED_TRACES / "kineto" / "tracelens__h100__gaunernst_bert-small-uncased__1016001.json.gz"
SEPARATORS = " /\\:(,.-_<>\u2026"  # where a name may wrap (after a word or a path's separator)
RAW_KEYS = ("_a", "flow", "symbol_id", "memory_access_breakdown")


@pytest.fixture(scope="module")
def tpu_trace():
    return open_trace(TPU_TRACE)


@pytest.fixture(scope="module")
def h100_trace():
    return open_trace(H100_TRACE)


def panel_of(qtbot) -> DetailsPanel:
    panel = DetailsPanel()
    qtbot.addWidget(panel)
    panel.resize(360, 700)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def row_keys(panel: DetailsPanel) -> set[str]:
    """The first word of each line the user reads: the stat tables' keys."""
    return {line.split()[0] for line in panel.toPlainText().splitlines() if line.split()}


def test_raw_keys_hide_until_all_stats_is_ticked(qtbot, tpu_trace):
    panel = panel_of(qtbot)
    device = tpu_trace.find_plane("/device:TPU:0")
    shown: set[str] = set()
    for track_name in ("Async XLA Ops", "XLA Ops"):
        track = device.track(track_name)
        raw = {**track.event_stats(0), **track.metadata_stats(0)}
        panel.show_event(track, 0)
        keys = row_keys(panel)
        assert not keys & set(RAW_KEYS)  # hidden by default
        assert "All stats" in panel.toPlainText()
        panel.anchorClicked.emit(QUrl(ALL_STATS_LINK))  # the user ticks "All stats"
        all_keys = row_keys(panel)
        present = {k for k in RAW_KEYS if k in raw}
        assert present <= all_keys
        shown |= present
        if "hlo_op" in raw:
            assert "hlo_op" in keys  # a known, human-readable stat stays visible
        panel.anchorClicked.emit(QUrl(ALL_STATS_LINK))  # and unticks it
        assert not row_keys(panel) & set(RAW_KEYS)
    assert shown == set(RAW_KEYS)  # the profile has every raw key this test is about


def test_a_long_kernel_name_title_takes_two_lines_and_copies_whole(qtbot, h100_trace):
    track = h100_trace.find_plane("GPU 0").track("stream 7")
    index = max(range(len(track)), key=lambda i: len(track.event_name(i)))
    name = track.event_name(index)
    assert len(name) > 300
    panel = panel_of(qtbot)
    panel.show_event(track, index)
    title = panel.document().firstBlock()
    layout = title.layout()
    font = title.begin().fragment().charFormat().font()
    assert font.bold()
    assert 1 <= layout.lineCount() <= 2
    line = math.ceil(QFontMetricsF(font).lineSpacing())  # Qt lays lines out on whole pixels
    assert layout.boundingRect().height() <= 2 * line
    assert title.begin().fragment().charFormat().toolTip() == name  # the full name in the tooltip
    QGuiApplication.clipboard().clear()
    panel.anchorClicked.emit(QUrl(COPY_NAME_LINK))  # "Copy name"
    assert QGuiApplication.clipboard().text() == name


def test_range_pivot_names_are_not_broken_mid_word(qtbot, h100_trace):
    tracks = h100_trace.track_list()
    t0 = min(int(t.start_ps.min()) for t in tracks if len(t))
    t1 = max(int(t.end_ps.max()) for t in tracks if len(t))
    pivot = pivot_area(tracks, t0, t1)
    panel = panel_of(qtbot)
    panel.show_range(pivot)  # what a Shift-drag on the timeline shows
    doc = panel.document()
    long_names = 0
    block = doc.begin()
    while block.isValid():
        cell = block.text()
        if block.layout().lineCount() > 1:  # a cell that wraps breaks only where a word ends
            for n in range(block.layout().lineCount() - 1):
                line = block.layout().lineAt(n)
                end = line.textStart() + line.textLength()
                assert cell[end - 1] in SEPARATORS or cell[end] == " ", cell
        long_names += len(cell) > NAME_CELL_CHARS - 1 and "\u2026" in cell
        block = block.next()
    assert long_names > 0  # the kernels' names were long enough to be shortened
