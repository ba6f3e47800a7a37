"""The load controller (tpuscope.ui.load_controller) on its own, without the main window: the newest
load's result handed over, a failure said once in a dialog, a held path opened later, recent files."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QMainWindow

from tests.conftest import TPU_TRACE, require_shared_traces, shown_message_boxes
from tpuscope.ui.load_controller import LOAD_ERROR_TITLE, MAX_RECENT, LoadController
from tpuscope.ui.loader import LoadResult

LOAD_TIMEOUT_MS = 120_000


def _controller(qtbot, settings) -> tuple[LoadController, list[str]]:
    host = QMainWindow()
    qtbot.addWidget(host)
    said: list[str] = []
    return LoadController(host, settings, host.statusBar(), said.append), said


def test_the_newest_load_is_handed_over_and_a_failure_is_one_dialog(qtbot, settings, tmp_path):
    require_shared_traces()
    loads, said = _controller(qtbot, settings)
    missing = tmp_path / "gone.xplane.pb"
    with qtbot.waitSignal(loads.resultReady, timeout=LOAD_TIMEOUT_MS) as ready:
        loads.open_path(missing)  # superseded at once: its failure is never shown
        loads.open_path(TPU_TRACE)
    qtbot.waitUntil(lambda: not loads.workers, timeout=LOAD_TIMEOUT_MS)
    result = ready.args[0]
    assert isinstance(result, LoadResult) and result.path == TPU_TRACE
    assert shown_message_boxes == [] and not loads.progress.isVisible()
    with qtbot.waitSignal(loads.loadFailed, timeout=LOAD_TIMEOUT_MS) as failed:
        loads.open_path(missing)
    qtbot.waitUntil(lambda: not loads.workers, timeout=LOAD_TIMEOUT_MS)
    message = failed.args[0]
    assert shown_message_boxes == [("warning", LOAD_ERROR_TITLE, message)] and said[-1] == message
    assert message.endswith(".") and "\n" not in message  # one sentence


def test_a_held_path_waits_for_open_pending_and_cancel_drops_it(qtbot, settings, tmp_path):
    loads, said = _controller(qtbot, settings)
    held = True
    loads.hold = lambda: held
    loads.open_path(tmp_path / "a.xplane.pb")
    assert not loads.workers and said == [f"Opening {tmp_path / 'a.xplane.pb'}\u2026"]
    loads.cancel()
    held = False
    loads.open_pending()  # cancelled: nothing to open
    assert not loads.workers and not loads.is_loading()


def test_recent_files_are_newest_first_resolved_and_capped(qtbot, settings, tmp_path):
    loads, _ = _controller(qtbot, settings)
    changes: list[list[str]] = []
    loads.recentChanged.connect(changes.append)
    for number in range(MAX_RECENT + 2):
        loads.add_recent(tmp_path / f"run{number}")
    url = "gs://bucket/logdir/run"
    loads.add_recent(url)  # a URL is kept as typed
    loads.add_recent(tmp_path / "run5")  # opened again: moves to the front
    paths = loads.recent_paths()
    assert paths[:2] == [str((tmp_path / "run5").resolve()), url] and len(paths) == MAX_RECENT
    assert changes[-1] == paths
    assert loads.last_dir() == str(Path(paths[0]).parent)  # the file dialogs start there
