"""Starting the desktop app: `tpuscope [PATH]`."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from tpuscope.gc_policy import MainThreadCollector
from tpuscope.ui import launch, theme
from tpuscope.ui.main_window import MainWindow

ICON = Path(__file__).resolve().parents[1] / "resources" / "tpuscope.svg"


def application() -> QApplication:
    """The process's QApplication, created once with tpuscope's names (QSettings uses them)."""
    existing = QApplication.instance()
    if existing is not None and not isinstance(existing, QApplication):
        raise RuntimeError("this process has a Qt application without widgets; tpuscope's window needs one")
    app = existing if existing is not None else QApplication(sys.argv[:1])
    if app.findChild(MainThreadCollector) is None:
        MainThreadCollector(app)  # garbage is collected on this thread only; the app owns it
    app.setOrganizationName("tpuscope")
    app.setApplicationName("tpuscope")
    theme.follow_desktop(app)
    if ICON.is_file():
        app.setWindowIcon(QIcon(str(ICON)))
    return app


def run_app(argv: list[str]) -> int:
    """Opens the main window, on PATH when given (compared with --compare NEW, at --at or --op), and
    runs until it is closed."""
    try:
        request = launch.parse(argv)
    except launch.LaunchError as error:
        print(f"tpuscope: {error}", file=sys.stderr)
        return 2
    app = application()
    window = MainWindow()
    window.show()
    open_request(window, request)
    return int(app.exec())


def open_request(window: MainWindow, request: launch.LaunchRequest) -> None:
    """Opens what `request` asks for in `window`: the comparison (BASE then opens in the other views
    too) or the profile, then the time range or op once its trace is shown."""
    if request.compare is not None:
        window.open_comparison(*request.compare)
    elif request.path is not None:
        window.open_path(request.path)
    if request.at_ps is None and request.op is None:
        return

    def go_there(_trace: object) -> None:
        window.traceLoaded.disconnect(go_there)
        from tpuscope.ui import navigate

        if request.at_ps is not None:
            navigate.go_to_time(window.router, *request.at_ps)
        if request.op is not None and not navigate.go_to_op(window.router, request.op):
            window.router.say(f"No event is named {request.op!r} in this profile.")

    window.traceLoaded.connect(go_there)
