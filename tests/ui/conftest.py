"""Fixtures for driving the real main window: isolated settings, loading and waiting, a JAX CPU recording."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from tests.jax_recordings import record_training_profile
from tests.ui.widgets import show_exposed
from tpuscope.ui.main_window import MainWindow

LOAD_TIMEOUT_MS = 120_000


JAX_STEPS = 6


@pytest.fixture
def settings(tmp_path) -> QSettings:
    """A settings file of this test's own, so tests never read or write the user's."""
    return QSettings(str(tmp_path / "tpuscope.ini"), QSettings.IniFormat)


@pytest.fixture
def window(qtbot, settings) -> MainWindow:
    win = show_exposed(qtbot, MainWindow(settings), 1500, 950)
    yield win
    win.wait_for_background_work()


def open_and_wait(qtbot, win: MainWindow, path: str | Path, view: str | None = None):
    """Opens `path` through the window's worker thread and waits for the loaded trace.

    `view` names the tab to bring to the front afterwards (a load shows the Overview), laid out
    before this returns, as the user's click on that tab would.
    """
    with qtbot.waitSignal(win.traceLoaded, timeout=LOAD_TIMEOUT_MS) as blocker:
        win.open_path(path)
    qtbot.waitUntil(lambda: not win.workers, timeout=LOAD_TIMEOUT_MS)
    # The analyses the views show arrive now, not amid the test.
    win.hub.wait()
    if view is not None:
        assert win.show_view(view)
        win.hub.wait()  # what a tab asks for when first shown
    QApplication.processEvents()
    return blocker.args[0]


@pytest.fixture(scope="session")
def jax_cpu_profile(tmp_path_factory) -> Path:
    """A real profile recorded now by JAX on the CPU: annotated training steps (`step_num`)."""
    return record_training_profile(tmp_path_factory.mktemp("jax_ui"), steps=JAX_STEPS)
