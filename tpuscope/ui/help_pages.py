"""Help > Keys (F1), Help > Documentation and Help > About.

The Keys page is generated from the action table (`tpuscope.ui.actions.ACTIONS`: every command with a
shortcut, as its menu names it) plus the keys the timeline and the search box take themselves, so a
new command's key is listed without anyone editing a help text (issue 37: the hand-written page
left out Ctrl+F, Esc, Ctrl+E and Ctrl+Shift+K/H/U). The documentation is the README installed with
the package (its metadata's description), shown in the app: it needs no network and matches the
installed version. About names the version, the licence and the open profile's files.
"""

from __future__ import annotations

import html
import importlib.metadata
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from tpuscope.ui.actions import ACTIONS, plain_title, shortcut_text

if TYPE_CHECKING:
    from tpuscope.ui.main_window import MainWindow

DISTRIBUTION = "tpuscope"
# The keys the timeline and search box handle themselves (tpuscope.ui.timeline.view, tpuscope.ui.search):
# they are no menu commands, so the action table cannot list them.
TIMELINE_KEYS: tuple[tuple[str, str], ...] = (
    ("Wheel", "zoom around the cursor"),
    ("Shift+Wheel", "scroll the tracks"),
    ("Drag", "pan"),
    ("Shift+Drag", "select a time range (summarized in Details)"),
    ("W / S", "zoom in / out"),
    ("A / D", "pan left / right"),
    ("Double-click an event", "zoom to it"),
    ("Home or 0", "zoom to fit"),
    ("Esc", "clear the selection and the outlined events"),
    ("M", "mark a flag at the time under the cursor (M on a flag removes it)"),
    ("Right-click a track's name", "pin it to the top, or unpin it"),
    ("Enter / Shift+Enter in the search box", "next / previous match"),
    ("Esc in the search box", "clear the search"),
)
DIALOG_SIZE = (640, 520)  # px: fits a 1280x720 laptop screen with the window's frame


def version() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def licence() -> str:
    try:
        meta = importlib.metadata.metadata(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
    found = meta.get_all("License-Expression") or meta.get_all("License") or ["unknown"]
    return str(found[0])


def documentation_markdown() -> str:
    """The README installed with the package, as Markdown ("" when the package carries none)."""
    try:
        meta = importlib.metadata.metadata(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return ""
    return str(meta.json.get("description") or "")


def shortcut_rows() -> list[tuple[str, str]]:
    """(key, what it does) for every command of the action table that has a key, in menu order."""
    rows = []
    for action in ACTIONS:
        key = shortcut_text(action.shortcut)
        if key:
            title = plain_title(action.title).replace("\u2026", "")
            rows.append((key, f"{plain_title(action.menu)} > {title}"))
    return rows


def keys_html() -> str:
    def table(rows: list[tuple[str, str]]) -> str:
        cells = "".join(
            f"<tr><td style='padding-right:18px'><b>{html.escape(k)}</b></td><td>{html.escape(v)}</td></tr>"
            for k, v in rows
        )
        return f"<table>{cells}</table>"

    return (
        "<h3>Commands</h3>" + table(shortcut_rows()) + "<h3>On the timeline</h3>" + table(list(TIMELINE_KEYS))
    )


def about_html(window: MainWindow) -> str:
    lines = [
        f"<h3>tpuscope {html.escape(version())}</h3>",
        "<p>A desktop profiler for JAX, TensorFlow and PyTorch/XLA runs on TPU, GPU and CPU.</p>",
        f"<p>Licence: {html.escape(licence())}</p>",
    ]
    trace = window.trace
    if window.path is not None:
        lines.append(f"<p>Open profile: <code>{html.escape(str(window.path))}</code></p>")
    if trace is not None and trace.sources:
        files = "".join(f"<li><code>{html.escape(str(s))}</code></li>" for s in trace.sources)
        lines.append(f"<p>Its files:</p><ul>{files}</ul>")
    settings = getattr(window.settings, "fileName", lambda: "")()
    if settings:
        lines.append(f"<p>Settings: <code>{html.escape(settings)}</code></p>")
    return "".join(lines)


class HelpPage(QDialog):
    """A page of help text that scrolls (it fits any laptop screen), with Close."""

    def __init__(self, title: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.browser = QTextBrowser(self)
        self.browser.setOpenExternalLinks(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        column = QVBoxLayout(self)
        column.addWidget(self.browser, 1)
        column.addWidget(buttons)
        self.resize(*DIALOG_SIZE)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)


def show_keys(window: MainWindow) -> HelpPage:
    page = HelpPage("Keys", window)
    page.setObjectName("helpKeys")
    page.browser.setHtml(keys_html())
    page.show()
    return page


def show_documentation(window: MainWindow) -> HelpPage:
    page = HelpPage("tpuscope documentation", window)
    page.setObjectName("helpDocumentation")
    text = documentation_markdown()
    if text:
        page.browser.setMarkdown(text)
    else:
        page.browser.setPlainText("This copy of tpuscope was installed without its README.")
    page.show()
    return page


def show_about(window: MainWindow) -> HelpPage:
    page = HelpPage("About tpuscope", window)
    page.setObjectName("helpAbout")
    page.browser.setHtml(about_html(window))
    page.show()
    return page
