"""Help (issue 37): F1 opens the Keys page, generated from the action table so it lists every
shortcut; About names the version, the licence and the open profile's files; Documentation shows
the README installed with the package."""

from __future__ import annotations

import importlib.metadata

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.conftest import TPU_TRACE
from tests.ui.conftest import open_and_wait
from tests.ui.widgets import show_exposed
from tpuscope.ui.actions import ACTIONS, shortcut_text
from tpuscope.ui.help_pages import TIMELINE_KEYS, HelpPage
from tpuscope.ui.main_window import MainWindow


def _page(window: MainWindow, name: str) -> HelpPage:
    QApplication.processEvents()
    page = window.findChild(HelpPage, name)
    assert page is not None and page.isVisible()
    return page


def test_f1_lists_every_shortcut_of_the_action_table_and_the_timelines_keys(qtbot, settings):
    window = show_exposed(qtbot, MainWindow(settings), 1280, 720)
    window.activateWindow()  # a shortcut works in the active window
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    qtbot.keyClick(window, Qt.Key.Key_F1)
    text = _page(window, "helpKeys").browser.toPlainText()
    keys = [shortcut_text(a.shortcut) for a in ACTIONS if shortcut_text(a.shortcut)]
    assert keys and all(key in text for key in keys)
    # What the hand-written page left out.
    for key in (
        "Ctrl+F",
        "Ctrl+E",
        "Ctrl+Shift+K",
        "Ctrl+Shift+H",
        "Ctrl+Shift+U",
        "Ctrl+Shift+P",
        "F1",
        "Esc",
    ):
        assert key in text, key
    assert all(key in text for key, _ in TIMELINE_KEYS)
    window.wait_for_background_work()


def test_about_names_the_version_the_licence_and_the_open_profiles_files(qtbot, settings):
    window = show_exposed(qtbot, MainWindow(settings), 1280, 720)
    open_and_wait(qtbot, window, TPU_TRACE)
    window.menus.actions["help.about"].trigger()
    text = _page(window, "helpAbout").browser.toPlainText()
    assert f"tpuscope {importlib.metadata.version('tpuscope')}" in text
    assert "Apache-2.0" in text
    assert str(TPU_TRACE) in text
    window.menus.actions["help.docs"].trigger()
    docs = _page(window, "helpDocumentation").browser.toPlainText()
    assert "tpuscope is a native desktop profiler" in docs
    window.wait_for_background_work()
