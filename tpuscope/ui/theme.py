"""The app's colours follow the desktop's light/dark setting (issue 37).

Qt 6.5+ reports the desktop's choice as `QStyleHints.colorScheme()` and signals `colorSchemeChanged`
when the user switches (https://doc.qt.io/qt-6/qstylehints.html#colorScheme-prop). Where the
platform theme already hands Qt a dark palette (KDE, GNOME through the portal), it is kept; where it
does not (a bare X server, other window managers), the Fusion style's dark palette below is applied.
The views read their colours from the palette (cards, charts, the findings' tables), so they follow.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette

# A dark palette after Qt's Fusion style's own dark colours (qfusionstyle / the Qt 6 "Fusion dark"
# palette): mid-grey windows, darker bases, light text, and the light-theme blue for selection.
_DARK = {
    QPalette.ColorRole.Window: QColor(53, 53, 53),
    QPalette.ColorRole.WindowText: QColor(240, 240, 240),
    QPalette.ColorRole.Base: QColor(36, 36, 36),
    QPalette.ColorRole.AlternateBase: QColor(48, 48, 48),
    QPalette.ColorRole.ToolTipBase: QColor(60, 60, 60),
    QPalette.ColorRole.ToolTipText: QColor(240, 240, 240),
    QPalette.ColorRole.PlaceholderText: QColor(150, 150, 150),
    QPalette.ColorRole.Text: QColor(240, 240, 240),
    QPalette.ColorRole.Button: QColor(60, 60, 60),
    QPalette.ColorRole.ButtonText: QColor(240, 240, 240),
    QPalette.ColorRole.BrightText: QColor(255, 90, 90),
    QPalette.ColorRole.Light: QColor(90, 90, 90),
    QPalette.ColorRole.Midlight: QColor(75, 75, 75),
    QPalette.ColorRole.Mid: QColor(90, 90, 90),
    QPalette.ColorRole.Dark: QColor(30, 30, 30),
    QPalette.ColorRole.Shadow: QColor(20, 20, 20),
    QPalette.ColorRole.Highlight: QColor(42, 130, 218),
    QPalette.ColorRole.HighlightedText: QColor(255, 255, 255),
    QPalette.ColorRole.Link: QColor(110, 170, 255),
    QPalette.ColorRole.LinkVisited: QColor(170, 140, 255),
}
_DISABLED_TEXT = QColor(128, 128, 128)
# A palette is dark when its window colour is darker than this lightness (0-255; our heuristic: the
# middle of the range).
DARK_LIGHTNESS = 128
_APPLIED = "tpuscope_dark_palette"  # the application property saying the palette is ours
_FOLLOWING = "tpuscope_follows_color_scheme"


def dark_palette() -> QPalette:
    """The dark palette applied when the desktop asks for dark and the platform gives no dark one."""
    palette = QPalette()
    for role, color in _DARK.items():
        palette.setColor(role, color)
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, _DISABLED_TEXT)
    return palette


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Window).lightness() < DARK_LIGHTNESS


def apply_color_scheme(app: QGuiApplication, scheme: Qt.ColorScheme) -> None:
    """Dark: the dark palette, unless the platform's palette is dark already. Light or unknown: the
    style's standard (light) palette again, if the dark one was ours."""
    if scheme == Qt.ColorScheme.Dark:
        if not is_dark(app.palette()):
            app.setPalette(dark_palette())
            app.setProperty(_APPLIED, True)
    elif app.property(_APPLIED):
        style = getattr(app, "style", None)
        app.setPalette(style().standardPalette() if style is not None else QPalette())
        app.setProperty(_APPLIED, False)


def follow_desktop(app: QGuiApplication) -> None:
    """Applies the desktop's colour scheme now and whenever the user switches it (connected once)."""
    hints = app.styleHints()
    apply_color_scheme(app, hints.colorScheme())
    if not app.property(_FOLLOWING):
        hints.colorSchemeChanged.connect(lambda scheme: apply_color_scheme(app, scheme))
        app.setProperty(_FOLLOWING, True)
