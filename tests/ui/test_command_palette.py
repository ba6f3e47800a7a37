"""The command palette (issue 37): its fuzzy scorer, and in the real window on a real TPU profile,
Ctrl+Shift+P lists every command of the action table, every tab, every finding and the recent files, and a few
typed letters and Enter run the best match, go to a time or go to an op."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.conftest import PTXLA_TRACE, TPU_TRACE
from tests.ui.conftest import open_and_wait
from tests.ui.widgets import show_exposed
from tpuscope.analysis.session import REPORT
from tpuscope.ui.actions import ACTIONS, plain_title
from tpuscope.ui.command_palette import (
    KIND_FINDING,
    KIND_RECENT,
    KIND_VIEW,
    CommandPalette,
    fuzzy_score,
    ranked,
)
from tpuscope.ui.main_window import MainWindow
from tpuscope.ui.navigate import op_events_named


def test_every_letter_must_appear_in_order():
    assert fuzzy_score("tml", "Timeline") is not None
    assert fuzzy_score("lmt", "Timeline") is None
    assert fuzzy_score("TIME", "timeline") is not None  # case-insensitive
    assert fuzzy_score("go mem", "View: Go to Memory") is not None  # each word matches
    assert fuzzy_score("go xyz", "View: Go to Memory") is None


def test_word_starts_and_runs_rank_first():
    titles = ["View: Zoom Out", "View: Go to Op breakdown", "File: Open", "View: Show Empty Tracks"]
    assert titles[ranked("op", titles)[0]] == "View: Go to Op breakdown"
    assert titles[ranked("gto", titles)[0]] == "View: Go to Op breakdown"  # the words' first letters
    assert titles[ranked("open", titles)[0]] == "File: Open"
    # A whole word beats the same letters scattered; of two equal matches the shorter comes first.
    assert fuzzy_score("mem", "Memory") > fuzzy_score("mem", "Zoom Everything Maybe")
    assert ranked("", titles) == [0, 1, 2, 3]
    assert ranked("qqq", titles) == []


@pytest.fixture
def loaded(qtbot, settings) -> MainWindow:
    window = show_exposed(qtbot, MainWindow(settings), 1280, 720)
    open_and_wait(qtbot, window, PTXLA_TRACE)  # a recent file other than the one shown
    open_and_wait(qtbot, window, TPU_TRACE)
    done = []
    window.hub.request(REPORT, done.append)
    qtbot.waitUntil(lambda: bool(done), timeout=120_000)
    yield window
    window.wait_for_background_work()


def _palette(qtbot, window: MainWindow) -> CommandPalette:
    qtbot.keyClick(
        window, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    )
    palette = window.findChild(CommandPalette, "commandPalette")
    assert palette is not None and palette.isVisible()
    return palette


def _shown(palette: CommandPalette) -> list[str]:
    return [palette.list.item(k).text() for k in range(palette.list.count())]


def test_ctrl_shift_p_lists_every_command_tab_finding_and_recent_file(qtbot, loaded):
    window = loaded
    palette = _palette(qtbot, window)
    texts = [e.text for e in palette.entries]
    listed = {e.title.split(": ", 1)[1] for e in palette.entries if e.kind == "command"}
    for action in ACTIONS:
        if action.submenu or action.id in ("view.command_palette",) or action.id not in window.menus.actions:
            continue
        assert plain_title(action.title).replace("\u2026", "") in listed, action.id
    # Shortcuts are shown beside their commands: the palette teaches the keys.
    assert any(t.startswith("File: Open Folder") and t.endswith("Ctrl+Shift+O") for t in _shown(palette))
    views = {e.title for e in palette.entries if e.kind == KIND_VIEW}
    assert {"Overview", "Timeline", "Memory", "Diagnostics"} <= views
    findings = window.hub.analysis.get(REPORT).findings
    assert len([e for e in palette.entries if e.kind == KIND_FINDING]) == len(findings) > 0
    assert [e.title for e in palette.entries if e.kind == KIND_RECENT] == window.recent_paths()
    assert len(texts) == len(set(texts))

    qtbot.keyClicks(palette.line, "view memory")
    assert _shown(palette)[0] == "view: Memory"
    qtbot.keyClick(palette.line, Qt.Key.Key_Return)
    assert not palette.isVisible()
    assert window.tabs.currentWidget() is window.views["memory"]

    palette = _palette(qtbot, window)
    qtbot.keyClicks(palette.line, "finding async wait")
    first = next(e for e in palette.entries if e.kind == KIND_FINDING)
    assert "Async wait" in first.text  # the worst finding comes first in the report
    assert _shown(palette)[0] == first.text
    qtbot.keyClick(palette.line, Qt.Key.Key_Return)
    diagnostics = window.views["diagnostics"]
    qtbot.waitUntil(lambda: diagnostics.findings.currentRow() == 0, timeout=60_000)
    assert window.tabs.currentWidget() is diagnostics


def test_go_to_time_and_go_to_op_from_the_palette(qtbot, loaded):
    window = loaded
    palette = _palette(qtbot, window)
    qtbot.keyClicks(palette.line, "go to time")
    qtbot.keyClick(palette.line, Qt.Key.Key_Return)
    assert palette.isVisible() and palette.mode == CommandPalette.MODE_TIME
    qtbot.keyClicks(palette.line, "soon")
    assert palette.hint.isVisible() and "is not a time" in palette.hint.text()
    palette.line.clear()
    qtbot.keyClicks(palette.line, "3ms:4.5ms")
    qtbot.keyClick(palette.line, Qt.Key.Key_Return)
    assert not palette.isVisible()
    assert window.tabs.currentWidget() is window.views["timeline"]
    assert (window.timeline.t0_ps, window.timeline.t1_ps) == (pytest.approx(3e9), pytest.approx(4.5e9))

    palette = _palette(qtbot, window)
    qtbot.keyClicks(palette.line, "go op")
    qtbot.keyClick(palette.line, Qt.Key.Key_Return)
    assert palette.mode == CommandPalette.MODE_OP
    qtbot.keyClicks(palette.line, "copy-done.4")
    assert _shown(palette)[0] == "copy-done.4"
    qtbot.keyClick(palette.line, Qt.Key.Key_Return)
    QApplication.processEvents()
    track, index = window.timeline.selected
    # The op as the op breakdown names it: on a TPU each event's own name is its whole HLO text.
    assert window.trace.strings[int(track.name_id[index])].startswith("%copy-done.4 = ")
    events = op_events_named(window.router, "copy-done.4")
    assert int(track.duration_ps[index]) == max(int(t.duration_ps[i].max()) for t, i in events)
