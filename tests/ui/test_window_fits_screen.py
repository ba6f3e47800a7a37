"""The window on a laptop screen (issue 37): it opens sized to the screen, keeps its size and place per
screen, and nothing it shows asks for more than a 1280x720 or 1366x768 screen has.

Qt never makes a window smaller than its minimumSizeHint: the largest of its tabs' smallest sizes
(a tab widget asks for the largest of its pages'), plus the menu and status bars. Compare asked for
881 px (a 768-pixel screen lost its NEW timeline and the status bar, for good). Each tab, Compare,
History and the pod page is brought to the front of a real window and the window's minimumSizeHint
must fit the first window's size on each screen; each dialog opens at its sizeHint, which must fit
the screen.
"""

from __future__ import annotations

import os

import pytest
from PySide6.QtCore import QRect, QSize
from PySide6.QtWidgets import QApplication, QWidget

from tests.conftest import SAMPLES, TPU_TRACE
from tests.ui.conftest import LOAD_TIMEOUT_MS, open_and_wait
from tests.ui.widgets import show_exposed
from tpuscope.app.where import MANY_HOSTS
from tpuscope.ui import window_geometry
from tpuscope.ui.main_window import MainWindow
from tpuscope.ui.registry import VIEW_KEYS

LAPTOP_SCREENS = (QSize(1280, 720), QSize(1366, 768))
SMALLEST = LAPTOP_SCREENS[0]
# What the first window may fill of the smallest screen (its frame, a panel: the rest).
ROOM = window_geometry.first_geometry(QRect(0, 0, SMALLEST.width(), SMALLEST.height())).size()


def _settle() -> None:
    for _ in range(3):
        QApplication.processEvents()


def _fits(hint: QSize, room: QSize = ROOM) -> bool:
    return hint.width() <= room.width() and hint.height() <= room.height()


@pytest.mark.parametrize("screen", LAPTOP_SCREENS, ids=lambda s: f"{s.width()}x{s.height()}")
def test_the_first_window_is_sized_to_the_screen(screen):
    available = QRect(0, 0, screen.width(), screen.height() - 32)  # a 32 px panel
    rect = window_geometry.first_geometry(available)
    assert available.contains(rect)
    assert rect.width() <= available.width() * window_geometry.SCREEN_SHARE
    assert rect.height() <= available.height() * window_geometry.SCREEN_SHARE
    assert rect.center() == available.center()
    # On a large screen the window takes its preferred size, not 90% of a 4K monitor.
    assert window_geometry.first_geometry(QRect(0, 0, 3840, 2160)).size() == window_geometry.PREFERRED_SIZE


def test_the_window_opens_on_its_screen_and_where_it_was_left_there(qtbot, settings):
    first = MainWindow(settings)
    qtbot.addWidget(first)
    available = first.screen().availableGeometry()
    assert first.geometry() == window_geometry.first_geometry(available)
    first.show()
    qtbot.waitExposed(first)
    first.resize(available.width() // 2, available.height() // 2)
    left = first.size()
    first.close()
    assert settings.value(window_geometry.screen_key(first.screen())) is not None
    second = MainWindow(settings)
    qtbot.addWidget(second)
    assert second.size() == left
    assert settings.value(window_geometry.LAST_SCREEN_KEY) == window_geometry.screen_key(first.screen())
    assert window_geometry.screen_key(first.screen()).endswith(
        f"{first.screen().size().width()}x{first.screen().size().height()}"
    )


def test_a_screen_that_is_gone_gives_its_place_to_the_windows_own(qtbot, settings):
    """Closed last on a monitor that is not connected now: not its 3840-pixel geometry, but the
    first window's on the screen there is."""
    elsewhere = MainWindow(settings)
    qtbot.addWidget(elsewhere)
    elsewhere.resize(3000, 2000)
    gone = f"{window_geometry.GEOMETRY_KEY}/HDMI-9_3840x2160"
    settings.setValue(gone, elsewhere.saveGeometry())
    settings.setValue(window_geometry.LAST_SCREEN_KEY, gone)
    window = MainWindow(settings)
    qtbot.addWidget(window)
    assert window.geometry() == window_geometry.first_geometry(window.screen().availableGeometry())


def _hints(window: MainWindow) -> dict[str, QSize]:
    """The window's minimumSizeHint with the Details dock closed and open."""
    hints = {}
    for dock_open in (False, True):
        window.details_dock.setVisible(dock_open)
        _settle()
        hints["dock open" if dock_open else "dock closed"] = window.minimumSizeHint()
    window.details_dock.setVisible(False)
    return hints


def _pod_run(tmp_path) -> str:
    """A run of MANY_HOSTS host files (links to one real JAX CPU host's), which opens to the pod page."""
    run = tmp_path / "pod" / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    for i in range(MANY_HOSTS):
        os.link(SAMPLES / "jax_cpu_pod_straggler" / "worker0.xplane.pb", run / f"host{i}.xplane.pb")
    return str(run)


def _logdir(tmp_path) -> str:
    """A logdir of two runs of real JAX CPU profiles, for the History tab."""
    root = tmp_path / "logdir"
    for run, sample in (
        ("2026_01_01_12_00_00", "jax_cpu_healthy"),
        ("2026_01_02_12_00_00", "jax_cpu_input_bound"),
    ):
        folder = root / "plugins" / "profile" / run
        folder.mkdir(parents=True)
        os.link(SAMPLES / f"{sample}.xplane.pb", folder / "host.xplane.pb")
    return str(root)


def test_every_tab_compare_history_and_the_pod_page_fit_a_laptop_screen(
    qtbot, settings, tmp_path, monkeypatch
):
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    window = show_exposed(qtbot, MainWindow(settings), ROOM.width(), ROOM.height())
    open_and_wait(qtbot, window, TPU_TRACE)
    too_big: dict[str, QSize] = {}
    for key in VIEW_KEYS:
        assert window.show_view(key)
        window.hub.wait()
        too_big |= {f"{key}, {k}": h for k, h in _hints(window).items() if not _fits(h)}

    window.open_comparison(SAMPLES / "jax_cpu_healthy.xplane.pb", SAMPLES / "jax_cpu_input_bound.xplane.pb")
    compare = window.views["compare"]
    qtbot.waitUntil(lambda: compare.result is not None, timeout=LOAD_TIMEOUT_MS)
    _settle()
    assert window.tabs.currentWidget() is compare
    too_big |= {f"compare, {k}": h for k, h in _hints(window).items() if not _fits(h)}
    # Compare never grows the window (it grew to 881 px tall on a 768-pixel screen).
    assert window.size() == ROOM

    window.open_history([_logdir(tmp_path)])
    history = window.views["history"]
    qtbot.waitUntil(lambda: history.table.rowCount() == 2, timeout=LOAD_TIMEOUT_MS)
    _settle()
    too_big |= {f"history, {k}": h for k, h in _hints(window).items() if not _fits(h)}

    with qtbot.waitSignal(window.pods.podShown, timeout=LOAD_TIMEOUT_MS):
        window.open_path(_pod_run(tmp_path))
    qtbot.waitUntil(lambda: not window.workers, timeout=LOAD_TIMEOUT_MS)
    _settle()
    page = window.pods.page
    assert window.tabs.currentWidget() is page
    # Hosts in natural order, wherever the page lists them (it listed host0, host1, host10, ..., host2).
    hosts = [f"host{i}" for i in range(MANY_HOSTS)]
    assert page.result.hosts == hosts and page.panel.heatmap.hosts == hosts
    assert [page.picker.itemText(k) for k in range(page.picker.count())] == hosts
    assert [page.panel.table.item(r, 0).text() for r in range(page.panel.table.rowCount())] == hosts
    too_big |= {f"pod page, {k}": h for k, h in _hints(window).items() if not _fits(h)}
    assert window.size() == ROOM
    window.pods.stop_diagnosis(wait=True)
    window.wait_for_background_work()
    assert too_big == {}, f"larger than {ROOM.toTuple()}: { {k: v.toTuple() for k, v in too_big.items()} }"


def _dialogs(window: MainWindow) -> dict[str, QWidget]:
    from tpuscope.ui import help_pages
    from tpuscope.ui.capture_dialog import CaptureDialog
    from tpuscope.ui.command_palette import show_palette
    from tpuscope.ui.open_url_dialog import OpenUrlDialog

    return {
        "capture": CaptureDialog(window, window.settings),
        "open url": OpenUrlDialog(window),
        "keys": help_pages.show_keys(window),
        "documentation": help_pages.show_documentation(window),
        "about": help_pages.show_about(window),
        "command palette": show_palette(window),
    }


@pytest.mark.parametrize("screen", LAPTOP_SCREENS, ids=lambda s: f"{s.width()}x{s.height()}")
def test_every_dialog_fits_a_laptop_screen(qtbot, settings, screen):
    window = MainWindow(settings)
    qtbot.addWidget(window)
    room = window_geometry.first_geometry(QRect(QRect(0, 0, screen.width(), screen.height()))).size()
    too_big = {}
    for name, dialog in _dialogs(window).items():
        dialog.show()
        _settle()
        if not (_fits(dialog.sizeHint(), room) and _fits(dialog.minimumSizeHint(), room)):
            too_big[name] = (dialog.sizeHint().toTuple(), dialog.minimumSizeHint().toTuple())
        dialog.close()
    assert too_big == {}
