"""Starting the desktop app: `tpuscope [PATH]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from tpuscope.gc_policy import MainThreadCollector
from tpuscope.readers import path_help
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
    if ICON.is_file():
        app.setWindowIcon(QIcon(str(ICON)))
    return app


def run_app(argv: list[str]) -> int:
    """Opens the main window, on PATH when given, and runs until it is closed."""
    parser = argparse.ArgumentParser(prog="tpuscope", description="Opens the tpuscope desktop app.")
    parser.add_argument("path", nargs="?", help=path_help())
    parser.add_argument(
        "--compare", nargs=2, metavar=("BASE", "NEW"), help="open the Compare view on two runs"
    )
    args, _ = parser.parse_known_args(argv)
    app = application()
    window = MainWindow()
    window.show()
    if args.compare:
        window.open_comparison(*args.compare)  # BASE then opens in the other views too
    elif args.path:
        window.open_path(args.path)
    return int(app.exec())
