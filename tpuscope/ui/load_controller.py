"""Opening profiles for the window: the path asked for, its load in a worker with progress and
Cancel, the newest result handed over, the recent files, and a failure said in one sentence.

KDAB Hotspot keeps this apart from its results pages (its `MainWindow` asks a parser to open a file
and only hears the results); here too the window composes this controller and the view router, and
the pod session opens a host's file through `open_path` without touching the window. Only the
newest load's result is taken (`loader`'s generation numbers), so opening a second profile while
the first loads can never show the first.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QStatusBar,
    QWidget,
)

from tpuscope.readers import dialog_filters
from tpuscope.ui.loader import OPTIONS as LOAD_OPTIONS
from tpuscope.ui.loader import LoadWorker
from tpuscope.urls import is_url

MAX_RECENT = 10
RECENT_KEY = "recent"
ALIGN_CLOCKS_KEY = "view/align_clocks"
LOAD_ERROR_TITLE = "Cannot open profile"

Work = Callable[[Path | str, Callable[[float, str], bool]], Any]


class LoadController(QObject):
    """See the module docstring. `say` writes the window's status line; `work()`, asked for on this
    thread as each load starts, is the function the loader thread runs (the pod session's, which opens
    runs of many hosts as a pod summary; the session is made with the first load)."""

    resultReady = Signal(object)  # the newest load's LoadResult (or PodResult)
    loadFailed = Signal(str)  # the sentence shown in the dialog
    recentChanged = Signal(list)  # the recent paths, newest first

    def __init__(
        self,
        parent: QWidget,
        settings: QSettings,
        status_bar: QStatusBar,
        say: Callable[[str], None],
        work: Callable[[], Work] | None = None,
    ):
        super().__init__(parent)
        self._parent = parent
        self.settings = settings
        self._say = say
        self._work = work
        self.generation = 0
        self._cancelled_generation = -1
        self.workers: set[LoadWorker] = set()
        # Set by the window until it first paints: a path opened before waits (`open_pending`).
        self.hold: Callable[[], bool] | None = None
        self._pending: Path | str | None = None

        self.progress = QProgressBar(parent)
        self.progress.setRange(0, 1000)
        self.progress.setMaximumWidth(260)
        self.cancel_button = QPushButton("Cancel", parent)
        self.cancel_button.clicked.connect(self.cancel)
        status_bar.addPermanentWidget(self.progress)
        status_bar.addPermanentWidget(self.cancel_button)
        self._show_progress(False)
        aligned = str(settings.value(ALIGN_CLOCKS_KEY, True)).lower() == "true"
        LOAD_OPTIONS.align_clocks = aligned

    # ----- opening ---------------------------------------------------------------------------

    def open_path(self, path: str | Path) -> None:
        """Starts loading `path` in a worker; any load still running is cancelled and its result dropped.
        While `hold` says so (the window has not painted yet), the path waits for `open_pending`."""
        if self.hold is not None and self.hold():
            self._pending = path
            self._say(f"Opening {path}\u2026")
            return
        self.cancel()
        self.generation += 1
        work = self._work() if self._work is not None else None
        worker = LoadWorker(self.generation, path, self, work=work)
        worker.progressed.connect(self._on_progress)
        worker.loaded.connect(self._on_loaded)
        worker.failed.connect(self._on_failed)
        worker.cancelled.connect(self._on_cancelled)
        worker.finished.connect(lambda w=worker: self._forget(w))
        self.workers.add(worker)
        self._say(f"Opening {path}\u2026")
        self.progress.setValue(0)
        self._show_progress(True)
        worker.start()

    def open_pending(self) -> None:
        """Starts the load asked for while the window was held (nothing when none was)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            self.open_path(pending)

    def open_file_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self._parent, "Open profile", self.last_dir(), dialog_filters())
        if path:
            self.open_path(path)

    def open_folder_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(self._parent, "Open run folder or logdir", self.last_dir())
        if path:
            self.open_path(path)

    def open_url_dialog(self) -> None:
        """A logdir in cloud storage: its runs are listed first, the chosen one opens like a path."""
        from tpuscope.ui.open_url_dialog import OpenUrlDialog

        recent_urls = [p for p in self.recent_paths() if is_url(p)]
        dialog = OpenUrlDialog(self._parent, recent_urls[0] if recent_urls else "")
        dialog.chosen.connect(self.open_path)
        dialog.exec()

    def open_sample(self) -> None:
        from tpuscope.ui.welcome import bundled_sample

        sample = bundled_sample()
        if sample is not None:
            self.open_path(sample)

    def ask_for_profile(self, caption: str) -> str:
        """A profile file the user picks (the dialog starts in the last folder opened); "" if none."""
        path, _ = QFileDialog.getOpenFileName(self._parent, caption, self.last_dir(), dialog_filters())
        return path

    def ask_for_folder(self, caption: str) -> str:
        return QFileDialog.getExistingDirectory(self._parent, caption, self.last_dir())

    # ----- the running load ------------------------------------------------------------------

    def cancel(self) -> None:
        """Stops the running load; a result that was already on its way is dropped too."""
        self._pending = None
        for worker in self.workers:
            worker.cancel()
        self._cancelled_generation = self.generation

    def is_loading(self) -> bool:
        return any(w.generation == self.generation for w in self.workers)

    def wait(self) -> None:
        """Cancels loading and waits for the worker threads (before the window closes)."""
        self.cancel()
        for worker in list(self.workers):
            worker.wait()

    def _forget(self, worker: LoadWorker) -> None:
        self.workers.discard(worker)
        worker.deleteLater()

    def _show_progress(self, visible: bool) -> None:
        self.progress.setVisible(visible)
        self.cancel_button.setVisible(visible)

    def _on_progress(self, generation: int, fraction: float, message: str) -> None:
        if generation == self.generation:
            self.progress.setValue(int(fraction * 1000))
            self._say(message)

    def _on_loaded(self, generation: int, result: object) -> None:
        if generation != self.generation:
            return  # a newer load was started: this result is stale
        if generation == self._cancelled_generation:
            self._on_cancelled(generation)  # Cancel was pressed before the result arrived
            return
        self._show_progress(False)
        self.resultReady.emit(result)

    def _on_failed(self, generation: int, message: str) -> None:
        if generation != self.generation:
            return
        if generation == self._cancelled_generation:
            self._on_cancelled(generation)
            return
        self._show_progress(False)
        self._say(message)
        self.loadFailed.emit(message)
        self.show_error(LOAD_ERROR_TITLE, message)

    def _on_cancelled(self, generation: int) -> None:
        if generation == self.generation:
            self._show_progress(False)
            self._say("Loading cancelled.")

    def show_error(self, title: str, message: str) -> None:
        """A failure as the one sentence that says it, in a dialog over the window."""
        QMessageBox.warning(self._parent, title, message)

    # ----- options and recent files ----------------------------------------------------------

    @property
    def align_clocks(self) -> bool:
        """View > Align Host Clocks: whether loads move each host onto the others' clock."""
        return LOAD_OPTIONS.align_clocks

    @align_clocks.setter
    def align_clocks(self, aligned: bool) -> None:
        LOAD_OPTIONS.align_clocks = aligned
        self.settings.setValue(ALIGN_CLOCKS_KEY, aligned)

    def recent_paths(self) -> list[str]:
        value = self.settings.value(RECENT_KEY, [])
        if isinstance(value, str):  # one entry reads back as a string
            value = [value]
        return [str(v) for v in value] if isinstance(value, list | tuple) else []

    def add_recent(self, path: Path | str) -> None:
        where = str(path) if is_url(str(path)) else str(Path(path).resolve())
        paths = [where] + [p for p in self.recent_paths() if p != where]
        self.settings.setValue(RECENT_KEY, paths[:MAX_RECENT])
        self.settings.sync()
        self.recentChanged.emit(self.recent_paths())

    def last_dir(self) -> str:
        recent = [p for p in self.recent_paths() if not is_url(p)]
        return str(Path(recent[0]).parent) if recent else str(Path.home())
