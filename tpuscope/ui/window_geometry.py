"""Where the main window opens: sized to the screen it opens on, and where the user left it there.

A window of fixed size (1400x900) on a 1366x768 laptop put the status bar and the bottom of every
tab off the screen (issue 37). The first window takes the preferred size, shrunk to at most
`SCREEN_SHARE` of the screen's available geometry (the screen less its panels and docks), centred
on it. Later windows open at the size and position the user left on that screen: the geometry is
kept per screen (its name and size), so a laptop that is sometimes docked to a large monitor opens
at each screen's own size instead of the monitor's size on the laptop.
"""

from __future__ import annotations

import re

from PySide6.QtCore import QRect, QSettings, QSize
from PySide6.QtGui import QGuiApplication, QScreen
from PySide6.QtWidgets import QWidget

PREFERRED_SIZE = QSize(1400, 900)  # what the window asks for on a screen with room for it
# At most this share of the available width and height: the window's edges stay clear of the
# screen's, so it can be seen whole and moved (our heuristic; GNOME's first windows are ~2/3-3/4).
SCREEN_SHARE = 0.9
GEOMETRY_KEY = "window/geometry_on"  # + "/<screen>": one saved geometry per screen
LAST_SCREEN_KEY = "window/last_screen"  # the key of the screen the window was last closed on


def first_geometry(available: QRect, preferred: QSize = PREFERRED_SIZE) -> QRect:
    """The first window's frame on a screen whose available geometry is `available`: `preferred`,
    at most SCREEN_SHARE of it each way, centred."""
    width = min(preferred.width(), int(available.width() * SCREEN_SHARE))
    height = min(preferred.height(), int(available.height() * SCREEN_SHARE))
    rect = QRect(0, 0, width, height)
    rect.moveCenter(available.center())
    return rect


def screen_key(screen: QScreen | None) -> str:
    """The settings key of the geometry kept for `screen`: its name and size ("eDP-1 1366x768")."""
    if screen is None:
        return f"{GEOMETRY_KEY}/none"
    size = screen.size()
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", screen.name()) or "screen"
    return f"{GEOMETRY_KEY}/{name}_{size.width()}x{size.height()}"


def _screen_of(window: QWidget) -> QScreen | None:
    return window.screen() or QGuiApplication.primaryScreen()


def restore(window: QWidget, settings: QSettings) -> None:
    """Places `window` (not shown yet) where it was last closed: on the screen it was closed on when
    that screen is still there, else where it was last left on its own screen, else `first_geometry`."""
    screen = _screen_of(window)
    last = settings.value(LAST_SCREEN_KEY)
    present = {screen_key(s) for s in QGuiApplication.screens()}
    for key in ([last] if isinstance(last, str) and last in present else []) + [screen_key(screen)]:
        saved = settings.value(key)
        if saved is not None and window.restoreGeometry(saved):
            return  # Qt moves a geometry that would lie off the screen back onto it
    if screen is not None:
        window.setGeometry(first_geometry(screen.availableGeometry()))
    else:
        window.resize(PREFERRED_SIZE)


def save(window: QWidget, settings: QSettings) -> None:
    """Keeps `window`'s geometry for the screen it is on now."""
    key = screen_key(_screen_of(window))
    settings.setValue(key, window.saveGeometry())
    settings.setValue(LAST_SCREEN_KEY, key)
