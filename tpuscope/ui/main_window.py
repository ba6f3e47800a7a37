"""The main window: a shell composing the view router (tabs, Details dock, what each view shows), the
load controller (opening, progress, recent files) and the menus built from the action table.

What a command does lives in the part it concerns; here are only the wiring between them, the
dialogs that start a command (export, compare, capture), and the window's own life: its first
paint, drag and drop, and saving its state when it closes. The members the tests and commands
read (`timeline`, `views`, `workers`...) are the parts' own, passed through.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QEvent, QObject, QSettings, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMessageBox, QWidget

from tpuscope.ui import window_geometry
from tpuscope.ui.actions import BuiltMenus
from tpuscope.ui.cache_setting import ask_for_limit, saved_limit
from tpuscope.ui.load_controller import LoadController
from tpuscope.ui.view_router import ViewRouter, short_name
from tpuscope.ui.welcome import WelcomePage

if TYPE_CHECKING:
    # The body: made just after the first paint, so the empty window shows before numpy, the
    # timeline, the analyses and the pod session are imported (issue 23).
    from tpuscope.ui.analysis_hub import AnalysisHub
    from tpuscope.ui.details import DetailsDock, DetailsPanel
    from tpuscope.ui.jobs import LatestJobs
    from tpuscope.ui.loader import LoadResult, LoadWorker
    from tpuscope.ui.pod.open_run import PodResult
    from tpuscope.ui.pod.session import PodSession
    from tpuscope.ui.search import SearchBar
    from tpuscope.ui.timeline.flags import FlagStore
    from tpuscope.ui.timeline.view import TimelineView

# A path opened before the first paint loads after it, or after this long if no paint comes (a window
# started minimized is not painted); our heuristic: longer than a first paint takes.
PAINT_WAIT_MS = 1000


def default_settings() -> QSettings:
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "tpuscope", "tpuscope")


class MainWindow(QMainWindow):
    traceLoaded = Signal(object)  # Trace
    loadFailed = Signal(str)
    rangeSummarized = Signal(object)  # the AreaPivot shown in the details panel

    def __init__(self, settings: QSettings | None = None):
        super().__init__()
        self.settings = settings if settings is not None else default_settings()
        self.setWindowTitle("tpuscope")
        self.setAcceptDrops(True)
        self._painted = False
        self._pods: PodSession | None = None  # made with the first load (`pods`)
        self._flag_store: FlagStore | None = None  # made with the first flags (`flag_store`)

        self.welcome = WelcomePage(self)
        self._first_paint = _FirstPaint(self.welcome, self._on_first_paint)
        self.router = ViewRouter(self, self.welcome)
        self.router.bodyBuilt.connect(self._on_body_built)
        self.router.resultShown.connect(self._on_result_shown)
        self.router.rangeSummarized.connect(self.rangeSummarized)
        self.loads = LoadController(
            self, self.settings, self.statusBar(), self.router.say, lambda: self.pods.work
        )
        self.loads.hold = self._hold_until_painted
        self.loads.resultReady.connect(self._on_result_ready)
        self.loads.loadFailed.connect(self.loadFailed)
        self.loads.recentChanged.connect(self._show_recent)

        from tpuscope.store import cache_limit  # no numpy: the window paints before numpy loads

        cache_limit.set_size_limit(saved_limit(self.settings))  # before any profile loads
        self.menus = BuiltMenus(self)
        self.recent_menu = self.menus.submenus["file.recent"]
        self.welcome.openFileRequested.connect(self.loads.open_file_dialog)
        self.welcome.openFolderRequested.connect(self.loads.open_folder_dialog)
        self.welcome.openPathRequested.connect(self.open_path)
        self._show_recent(self.loads.recent_paths())
        self._restore_state()

    # ----- the parts, passed through -----------------------------------------------------------------

    trace = property(lambda self: self.router.trace)
    path = property(lambda self: self.router.path)
    tabs = property(lambda self: self.router.tabs)
    stack = property(lambda self: self.router.stack)
    notice = property(lambda self: self.router.notice)
    status_label = property(lambda self: self.router.status_label)
    progress = property(lambda self: self.loads.progress)
    cancel_button = property(lambda self: self.loads.cancel_button)

    @property
    def workers(self) -> set[LoadWorker]:
        return self.loads.workers

    @property
    def timeline(self) -> TimelineView:
        return self.router.timeline

    @property
    def search(self) -> SearchBar:
        return self.router.search

    @property
    def hub(self) -> AnalysisHub:
        return self.router.hub

    @property
    def jobs(self) -> LatestJobs:
        return self.router.jobs

    @property
    def details(self) -> DetailsPanel:
        return self.router.details

    @property
    def details_dock(self) -> DetailsDock:
        return self.router.details_dock

    @property
    def views(self) -> MutableMapping[str, QWidget]:
        return self.router.views

    @property
    def made_views(self) -> dict[str, QWidget]:
        return self.router.made_views

    @property
    def show_empty_action(self) -> QAction:
        return self.menus.actions["view.show_empty"]

    @property
    def align_clocks_action(self) -> QAction:
        return self.menus.actions["view.align_clocks"]

    @property
    def pods(self) -> PodSession:
        """Runs of many hosts: the pod page first, one host's trace at a time. Made with the first
        load (its `work` is what the loader thread runs), which may start before the body is made."""
        if self._pods is None:
            from tpuscope.ui.pod.session import PodSession

            self._pods = PodSession(self.router, self.loads, self)
        return self._pods

    def open_path(self, path: str | Path) -> None:
        self.loads.open_path(path)

    def cancel_load(self) -> None:
        self.loads.cancel()

    def is_loading(self) -> bool:
        return self.loads.is_loading()

    def recent_paths(self) -> list[str]:
        return self.loads.recent_paths()

    def set_result(self, result: LoadResult, view: str | None = None) -> None:
        self.router.show_result(result, view)

    def show_no_trace(self) -> None:
        self.router.show_no_trace()

    def show_view(self, key: str) -> bool:
        return self.router.show(key)

    def outline_ops(self, names: set[str]) -> None:
        self.router.outline_ops(names)

    def zoom_timeline(self, t0_ps, t1_ps) -> None:
        self.router.zoom_timeline(t0_ps, t1_ps)

    # ----- the first paint, then the body -----------------------------------------------------------

    def _hold_until_painted(self) -> bool:
        """Asked for before the window first painted (`tpuscope PATH`), a load starts just after it."""
        if self.isVisible() and not self._painted and not self.router.body_built:
            QTimer.singleShot(PAINT_WAIT_MS, self._after_first_paint)
            return True
        return False

    def _on_first_paint(self) -> None:
        self._painted = self.router.painted = True
        QTimer.singleShot(0, self._after_first_paint)

    def _after_first_paint(self) -> None:
        """The load the user asked for before the paint, then the body while it loads, then the tabs:
        the first view's modules are imported in a worker while the profile loads (the others' once the
        first picture is complete); each view is made on this thread when its tab is first shown."""
        self._painted = self.router.painted = True
        self.loads.open_pending()
        self.router.add_view_tabs()
        self.router.import_first_view_modules()

    def _on_body_built(self) -> None:
        self.menus.provide("view.details", self.router.details_dock.toggleViewAction())
        self.router.timeline.flagsChanged.connect(self._save_flags)

    # ----- what the parts tell each other ------------------------------------------------------------

    def _on_result_ready(self, result: LoadResult | PodResult) -> None:
        """The newest load: a pod (or a host of the pod shown) goes to the pod session, a profile to
        every view."""
        if self.pods.accept(result):
            return
        loaded = cast("LoadResult", result)  # the pod session takes every PodResult
        self.router.show_result(loaded)
        self.loads.add_recent(loaded.path)

    def _on_result_shown(self, result: LoadResult) -> None:
        self.setWindowTitle(f"{short_name(result.path)} - tpuscope")
        self.timeline.set_flags(self.flag_store.load(result.path))  # as the user left them
        self.menus.refresh()
        self.traceLoaded.emit(result.trace)

    @property
    def flag_store(self) -> FlagStore:
        """The timeline's flags of each profile, in this window's settings."""
        from tpuscope.ui.timeline.flags import FlagStore

        if self._flag_store is None:
            self._flag_store = FlagStore(self.settings)
        return self._flag_store

    def _save_flags(self, flags: list[float]) -> None:
        if self.path is not None and self.trace is not None:
            self.flag_store.save(self.path, flags)

    def _show_recent(self, paths: list[str]) -> None:
        self.welcome.set_recent(paths)
        self.recent_menu.clear()
        for path in paths:
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda _=False, p=path: self.open_path(p))
        self.recent_menu.setEnabled(bool(paths))

    # ----- the commands that start with a dialog (see tpuscope.ui.actions) ---------------------------

    def compare_with_dialog(self) -> None:
        """Compares the open profile (BASE; asked for when none is open) with one the user picks (NEW)."""
        base = str(self.path) if self.path is not None else self.loads.ask_for_profile("Choose BASE profile")
        if not base:
            return
        new = self.loads.ask_for_profile("Compare BASE with (NEW)")
        if new:
            self.open_comparison(base, new)

    def open_comparison(self, base: str | Path, new: str | Path) -> None:
        from tpuscope.ui.compare_view import show_comparison  # imported on first use: a faster start

        show_comparison(self.router, self.loads, base, new)

    def history_dialog(self) -> None:
        folder = self.loads.ask_for_folder("Run history of the logdir")
        if folder:
            self.open_history([folder])

    def open_history(self, paths: list[str]) -> None:
        from tpuscope.ui.history_view import show_history  # imported on first use: a faster start

        show_history(self.router, self.loads, paths, self.open_comparison)

    def open_capture_dialog(self) -> None:
        # Imported on first use: paramiko and grpc alone took 0.6 s of the window's start.
        from tpuscope.ui.capture_dialog import CaptureDialog

        dialog = CaptureDialog(self)
        dialog.captured.connect(self.open_path)
        dialog.exec()

    def export_dialog(self, selected_range: bool) -> None:
        """File > Export: the trace (or the Shift+drag range) as Chrome trace JSON that Perfetto opens."""
        if self.trace is None:
            return
        window = self.router.selected_range if selected_range else None
        if selected_range and window is None:
            QMessageBox.information(self, "Export", "Select a time range first (Shift+drag on the timeline).")
            return
        from tpuscope.export.chrome_trace import DEFAULT_FILE_NAME, FILE_FILTER

        path, _ = QFileDialog.getSaveFileName(self, "Export Chrome trace", DEFAULT_FILE_NAME, FILE_FILTER)
        if path:
            self.export_to(Path(path), window)

    def export_to(self, path: Path, window: tuple[int, int] | None = None) -> int:
        from tpuscope.export.chrome_trace import export_chrome_trace

        assert self.trace is not None
        try:
            return export_chrome_trace(self.trace, path, *(window or (None, None)))
        except OSError as exc:
            QMessageBox.warning(self, "Export", f"{path} cannot be written ({exc.strerror or exc}).")
            return 0

    def export_report_dialog(self) -> None:
        """File > Export Report: the open profile as one self-contained HTML page (`tpuscope report`)."""
        if self.hub.analysis is None:
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Export report", "tpuscope_report.html", "HTML pages (*.html)"
        )
        if path:
            self.export_report_to(Path(path))

    def export_report_to(self, path: Path) -> bool:
        from tpuscope.export.html_report import report_html

        analysis = self.hub.analysis
        assert analysis is not None
        try:
            path.write_text(report_html(analysis), encoding="utf-8")
        except OSError as exc:
            QMessageBox.warning(self, "Export report", f"{path} cannot be written ({exc.strerror or exc}).")
            return False
        return True

    def ask_cache_limit(self) -> None:
        ask_for_limit(self, self.settings)

    def set_align_clocks(self, aligned: bool) -> None:
        """View > Align Host Clocks: saved, and the open profile is loaded again by it."""
        self.loads.align_clocks = aligned
        if self.trace is not None and self.path is not None:
            self.open_path(self.path)

    def show_keys(self) -> None:
        from tpuscope.ui.help_pages import show_keys  # the Keys page, from the action table

        show_keys(self)

    def show_documentation(self) -> None:
        from tpuscope.ui.help_pages import show_documentation

        show_documentation(self)

    def show_about(self) -> None:
        from tpuscope.ui.help_pages import show_about

        show_about(self)

    def show_command_palette(self) -> None:
        from tpuscope.ui.command_palette import show_palette  # imported on first use: a faster start

        show_palette(self)

    def copy_link(self) -> None:
        """View > Copy Link: the command line that opens this profile at the timeline's time range
        (`tpuscope PATH --at T0:T1`), on the clipboard."""
        from PySide6.QtWidgets import QApplication

        from tpuscope.ui.launch import command_line

        if self.path is None or self.trace is None:
            self.statusBar().showMessage(
                "Open a profile first: Copy Link names the profile and the time shown."
            )
            return
        timeline = self.timeline
        t0, t1 = max(timeline.t0_ps, 0.0), min(timeline.t1_ps, float(self.trace.duration_ps))
        line = command_line(self.path, t0, t1)
        QApplication.clipboard().setText(line)
        self.statusBar().showMessage(f"Copied: {line}", 8000)

    # ----- drag and drop, state ----------------------------------------------------------------------

    def dragEnterEvent(self, event) -> None:
        if any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.open_path(paths[0])

    def _restore_state(self) -> None:
        window_geometry.restore(self, self.settings)  # sized to the screen, or as left on it
        state = self.settings.value("window/state")
        if state is not None:
            self.restoreState(state)  # the Details dock's place is restored when it is made

    def wait_for_background_work(self) -> None:
        """Cancels loading and waits for every worker thread, ours and the views' (before closing)."""
        self.loads.wait()
        if self._pods is not None:
            self._pods.shutdown()  # a pod's background diagnosis: its workers stopped
        self.router.shutdown()

    def closeEvent(self, event) -> None:
        window_geometry.save(self, self.settings)
        self.settings.setValue("window/state", self.saveState())
        self.settings.sync()
        self.wait_for_background_work()
        super().closeEvent(event)


class _FirstPaint(QObject):
    """Calls `then()` once, after `widget` has painted for the first time."""

    def __init__(self, widget: QWidget, then: Callable[[], None]):
        super().__init__(widget)
        self.then = then
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            watched.removeEventFilter(self)
            self.then()
        return False
