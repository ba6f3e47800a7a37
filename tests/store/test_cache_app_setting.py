"""The app's cache size setting (File > Cache Size Limit…): saved, applied to the cache at start,
a bad size refused with one sentence, TPUSCOPE_CACHE_MAX still winning; and the cache obeys it."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QSettings  # noqa: E402

from tests.conftest import PTXLA_TRACE, TPU_TRACE, shown_message_boxes  # noqa: E402
from tests.store.cache_helpers import copied, names  # noqa: E402
from tpuscope.app.opener import open_trace  # noqa: E402
from tpuscope.store import cache_limit, traces  # noqa: E402
from tpuscope.ui.cache_setting import SETTING, apply_limit_text, saved_limit  # noqa: E402
from tpuscope.ui.main_window import MainWindow  # noqa: E402


@pytest.fixture
def settings(tmp_path, monkeypatch) -> QSettings:
    monkeypatch.delenv(traces.MAX_ENV, raising=False)
    monkeypatch.setattr(cache_limit, "_app_limit", None)
    return QSettings(str(tmp_path / "tpuscope.ini"), QSettings.IniFormat)


def _menu_action(window: MainWindow, text: str):
    for menu_action in window.menuBar().actions():
        for action in menu_action.menu().actions():
            if action.text().replace("&", "") == text:
                return action
    raise AssertionError(f"no menu item {text!r}")


def test_the_setting_is_saved_applied_and_restored_at_start(qtbot, settings, tmp_path, monkeypatch):
    window = MainWindow(settings)
    qtbot.addWidget(window)
    assert _menu_action(window, "Cache Size Limit\u2026") is not None
    assert traces.configured_limit() == (None, "default")
    assert apply_limit_text(window, settings, "3M")
    assert saved_limit(settings) == 3 << 20 and traces.configured_limit() == (3 << 20, "the app's setting")
    # The cache obeys it: the TPU entry (1.2 MB) and the PyTorch/XLA one (0.3 MB) fit 3 MiB together.
    small, big = copied(PTXLA_TRACE, tmp_path / "p"), copied(TPU_TRACE, tmp_path / "p")
    for path in (small, big):
        open_trace(path)
        traces.wait_for_writes()
    assert len(names(traces.cache_dir())) == 2
    assert apply_limit_text(window, settings, "100k")  # smaller than either entry
    open_trace(copied(TPU_TRACE, tmp_path / "q"))
    traces.wait_for_writes()
    assert len(names(traces.cache_dir())) == 2  # not written: it does not fit

    cache_limit.set_size_limit(None)
    restarted = MainWindow(QSettings(str(tmp_path / "tpuscope.ini"), QSettings.IniFormat))
    qtbot.addWidget(restarted)
    assert traces.configured_limit() == (100 << 10, "the app's setting")  # applied when the menu is made
    monkeypatch.setenv(traces.MAX_ENV, "2G")
    assert traces.configured_limit() == (2 << 30, traces.MAX_ENV)
    assert apply_limit_text(restarted, settings, "")  # back to the default
    assert settings.value(SETTING) is None
    monkeypatch.delenv(traces.MAX_ENV)
    assert traces.configured_limit() == (None, "default")


def test_a_bad_size_is_one_sentence_and_changes_nothing(qtbot, settings):
    window = MainWindow(settings)
    qtbot.addWidget(window)
    assert apply_limit_text(window, settings, "1G")
    assert not apply_limit_text(window, settings, "lots")
    ((kind, title, text),) = shown_message_boxes
    assert kind == "warning" and title == "Cache Size Limit"
    assert text == "The cache size limit 'lots' is not a size (like 2G, 500M or a number of bytes)."
    assert saved_limit(settings) == 1 << 30 and traces.configured_limit() == (1 << 30, "the app's setting")
