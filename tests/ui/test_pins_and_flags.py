"""Perfetto's everyday tools on the timeline (issue 37), in the real window on a real TPU profile: a
track pinned to the top from its name's right-click menu (and unpinned), and flags: M marks the time
under the cursor, M on a flag removes it, the flags are drawn, listed in the command palette and kept
with the profile's settings for the next window."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QCursor

from tests.conftest import TPU_TRACE
from tests.ui.conftest import open_and_wait
from tests.ui.widgets import show_exposed
from tpuscope.ui.command_palette import KIND_FLAG, show_palette
from tpuscope.ui.main_window import MainWindow
from tpuscope.ui.timeline.flags import FLAG_COLOUR
from tpuscope.ui.timeline.layout import PINNED_GROUP, TRACK_GAP, group_key
from tpuscope.ui.timeline.view import LABEL_COLUMN_PX, RULER_PX


def _action(menu, text: str):
    found = [a for a in menu.actions() if a.text() == text]
    assert found, [a.text() for a in menu.actions()]
    return found[0]


def test_a_track_pinned_to_the_top_and_back(qtbot, settings):
    window = show_exposed(qtbot, MainWindow(settings), 1280, 720)
    open_and_wait(qtbot, window, TPU_TRACE, view="timeline")
    timeline = window.timeline
    layout = timeline.layout_
    last = [r for r in layout.rows if r.kind == "track"][-1]  # a host thread, far down the list
    track = last.track
    timeline.scrollbar.setValue(timeline.scrollbar.maximum())  # scrolled to it, as a user would
    label_at = QPoint(LABEL_COLUMN_PX // 2, int(timeline.events_top + last.y - timeline.y_scroll + 2))
    assert timeline.row_at(label_at.y()).track is track
    _action(timeline.context_menu(label_at), "Pin to top").trigger()
    rows = layout.rows
    assert rows[0].kind == "group" and rows[0].group == PINNED_GROUP and rows[0].label == "Pinned"
    assert rows[1].track is track and rows[1].group == PINNED_GROUP
    assert [r for r in rows if r.track is track] == [rows[1]]  # moved, not copied
    assert not [r for r in rows if r.group == group_key(track.plane) and r.track is track]
    # Its name says where it came from, now that it is out of its group.
    assert track.plane.name in rows[1].label
    # Pinned rows stay on top as the rest scrolls (the window is still scrolled to the bottom).
    assert timeline.y_scroll > 0 and timeline.sticky_px == rows[1].y + rows[1].height + TRACK_GAP
    pinned_at = QPoint(LABEL_COLUMN_PX // 2, int(timeline.events_top + rows[1].y + 2))
    assert timeline.row_at(pinned_at.y()) is rows[1]
    below = QPoint(LABEL_COLUMN_PX // 2, int(timeline.events_top + timeline.sticky_px + 2))
    assert timeline.layout_y(below.y()) == timeline.sticky_px + 2 + timeline.y_scroll
    timeline.scroll_to_track(track)  # in view already: nothing moves
    assert timeline.y_scroll > 0
    _action(timeline.context_menu(pinned_at), "Unpin from top").trigger()
    assert all(r.group != PINNED_GROUP for r in layout.rows)
    assert layout.row_of(track).group == group_key(track.plane)
    window.wait_for_background_work()


def _press_m_at(qtbot, timeline, x: int) -> None:
    QCursor.setPos(timeline.mapToGlobal(QPoint(x, timeline.height() // 2)))
    qtbot.keyClick(timeline, Qt.Key.Key_M)


def test_m_marks_flags_listed_in_the_palette_and_kept_for_the_profile(qtbot, settings):
    window = show_exposed(qtbot, MainWindow(settings), 1280, 720)
    open_and_wait(qtbot, window, TPU_TRACE, view="timeline")
    timeline = window.timeline
    timeline.setFocus()
    x = LABEL_COLUMN_PX + 300
    QCursor.setPos(timeline.mapToGlobal(QPoint(x, timeline.height() // 2)))
    assert timeline.mapFromGlobal(QCursor.pos()).x() == x  # M marks the time under the cursor
    expected = timeline.viewport().t_of(x)
    _press_m_at(qtbot, timeline, x)
    assert timeline.flags == [pytest.approx(expected)]
    _press_m_at(qtbot, timeline, x + 200)
    assert len(timeline.flags) == 2
    _press_m_at(qtbot, timeline, x + 2)  # on the first flag: removes it
    assert timeline.flags == [pytest.approx(timeline.viewport().t_of(x + 200))]
    kept = list(timeline.flags)

    # Drawn: the marker in the ruler in the flags' colour.
    image = timeline.grab().toImage()
    colour = image.pixelColor(x + 200 + 2, RULER_PX - 6)
    assert colour.rgb() == FLAG_COLOUR.rgb()

    palette = show_palette(window)
    flags = [e for e in palette.entries if e.kind == KIND_FLAG]
    assert len(flags) == 1
    timeline.zoom_to_fit()
    flags[0].run()
    assert timeline.t0_ps < kept[0] < timeline.t1_ps
    assert timeline.t1_ps - timeline.t0_ps < timeline.trace.duration_ps  # zoomed in on it
    palette.hide()

    window.close()  # the next window on these settings finds the profile's flags
    again = show_exposed(qtbot, MainWindow(settings), 1280, 720)
    open_and_wait(qtbot, again, TPU_TRACE, view="timeline")
    assert again.timeline.flags == pytest.approx(kept)
    again.timeline.set_flags([])
    again.close()
    third = show_exposed(qtbot, MainWindow(settings), 1280, 720)
    open_and_wait(qtbot, third, TPU_TRACE)
    assert third.timeline.flags == []
    third.wait_for_background_work()
