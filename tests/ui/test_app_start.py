"""`tpuscope [PATH]` through the real entry point: opens the window on PATH, returns when closed."""

from __future__ import annotations

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication

from tests.conftest import PTXLA_TRACE
from tpuscope.cli import main
from tpuscope.ui.main_window import MainWindow

GIVE_UP_MS = 60_000


def test_tpuscope_path_opens_the_window_on_it_and_returns_when_closed(qtbot, tmp_path):
    # The user's settings stay untouched: QSettings writes under tmp_path for this process.
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(tmp_path))
    seen: list[MainWindow] = []

    def close_once_loaded() -> None:
        for widget in QApplication.topLevelWidgets():
            if isinstance(widget, MainWindow) and widget.isVisible() and widget.trace is not None:
                seen.append(widget)
                widget.close()
                QApplication.quit()
                return
        QTimer.singleShot(50, close_once_loaded)

    QTimer.singleShot(50, close_once_loaded)
    QTimer.singleShot(GIVE_UP_MS, QApplication.quit)
    assert main([str(PTXLA_TRACE)]) == 0
    assert len(seen) == 1
    window = seen[0]
    assert window.path == PTXLA_TRACE and window.trace.sources == [PTXLA_TRACE]
    assert window.recent_paths() == [str(PTXLA_TRACE.resolve())]
    assert (tmp_path / "tpuscope" / "tpuscope.ini").is_file()
    assert not QApplication.windowIcon().isNull()  # the bundled icon (tpuscope/resources)
    window.deleteLater()
