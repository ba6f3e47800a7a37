"""`tpuscope [PATH]` through the real entry point: opens the window on PATH, returns when closed."""

from __future__ import annotations

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication

from tests.conftest import PTXLA_TRACE
from tpuscope.cli import main
from tpuscope.ui.main_window import MainWindow

POLL_MS = 50
GIVE_UP_MS = 60_000


def test_tpuscope_path_opens_the_window_on_it_and_returns_when_closed(qtbot, tmp_path):
    # The user's settings stay untouched: QSettings writes under tmp_path for this process.
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(tmp_path))
    seen: list[MainWindow] = []
    poll = QTimer()
    poll.setInterval(POLL_MS)
    give_up = QTimer()
    give_up.setSingleShot(True)

    def close_once_loaded() -> None:
        for widget in QApplication.topLevelWidgets():
            if isinstance(widget, MainWindow) and widget.isVisible() and widget.trace is not None:
                poll.stop()
                seen.append(widget)
                widget.close()  # the last window closing ends the app's event loop, as for a user

    def close_all() -> None:  # only if loading never finished: ends run_app instead of hanging the suite
        for widget in QApplication.topLevelWidgets():
            widget.close()

    poll.timeout.connect(close_once_loaded)
    give_up.timeout.connect(close_all)
    poll.start()
    give_up.start(GIVE_UP_MS)
    try:
        assert main([str(PTXLA_TRACE)]) == 0
    finally:
        poll.stop()
        give_up.stop()
    assert len(seen) == 1
    window = seen[0]
    assert window.path == PTXLA_TRACE and window.trace.sources == [PTXLA_TRACE]
    assert window.recent_paths() == [str(PTXLA_TRACE.resolve())]
    assert (tmp_path / "tpuscope" / "tpuscope.ini").is_file()
    assert not QApplication.windowIcon().isNull()  # the bundled icon (tpuscope/resources)
    window.deleteLater()
