"""File > Cache Size Limit…: the store's one cap (traces, pod results and run summaries together) as an
app setting; TPUSCOPE_CACHE_MAX still wins, and 0 turns every cache off (`tpuscope.store.cache_limit`).

The saved value is applied when the menu is built, before any profile loads; it imports
`tpuscope.store.cache_limit` only (no numpy: the window paints before numpy loads)."""

from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QInputDialog, QMenu, QMessageBox, QWidget

from tpuscope.store import cache_limit

SETTING = "cache/max_bytes"  # bytes; absent or empty: the default limit


def saved_limit(settings: QSettings) -> int | None:
    value = settings.value(SETTING, "")
    try:
        return int(str(value)) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def add_cache_limit_action(window: QWidget, menu: QMenu, settings: QSettings) -> QAction:
    cache_limit.set_size_limit(saved_limit(settings))
    action = QAction("Cache Size &Limit\u2026", window)
    action.triggered.connect(lambda: ask_for_limit(window, settings))
    menu.addAction(action)
    return action


def ask_for_limit(window: QWidget, settings: QSettings) -> None:
    current = saved_limit(settings)
    text, accepted = QInputDialog.getText(
        window, "Cache Size Limit",
        "How much disk tpuscope's caches may use (like 2G or 500M; 0 turns them off;\n"
        f"empty: the default, the smaller of 4G and a quarter of the free disk).\n"
        f"{cache_limit.MAX_ENV}, when set, wins over this setting.",
        text="" if current is None else _words(current),
    )  # fmt: skip
    if not accepted:
        return
    apply_limit_text(window, settings, text)


def apply_limit_text(window: QWidget, settings: QSettings, text: str) -> bool:
    """Saves and applies the typed limit; a bad one is one sentence in a dialog and changes nothing."""
    if not text.strip():
        settings.remove(SETTING)
        cache_limit.set_size_limit(None)
        return True
    try:
        limit = cache_limit.parse_size(text)
    except ValueError as error:
        QMessageBox.warning(window, "Cache Size Limit", f"The cache size limit {error}.")
        return False
    settings.setValue(SETTING, limit)
    settings.sync()
    cache_limit.set_size_limit(limit)
    return True


def _words(limit: int) -> str:
    for unit, size in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if limit >= size and limit % (size // 16) == 0:
            return f"{limit / size:g}{unit}"
    return str(limit)
