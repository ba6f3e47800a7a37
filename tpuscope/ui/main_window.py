"""The main window: tabs (Overview first, then the timeline and others), details dock, menus, loading."""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QSettings, Qt, QThread, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from tpuscope.readers import dialog_filters
from tpuscope.ui.cache_setting import add_cache_limit_action
from tpuscope.ui.loader import OPTIONS as LOAD_OPTIONS
from tpuscope.ui.loader import LoadResult, LoadWorker
from tpuscope.ui.notice_bar import NoticeBar
from tpuscope.ui.registry import TIMELINE, VIEWS
from tpuscope.ui.welcome import WelcomePage, bundled_sample
from tpuscope.urls import is_url

if TYPE_CHECKING:
    import numpy as np

    # The window's body: made just after the first paint (`_build_body`), so the empty window shows
    # before numpy, the timeline, the analyses and the pod session are imported (issue 23).
    from tpuscope.analysis.steps import Steps
    from tpuscope.model.trace import Trace, Track
    from tpuscope.ui.analysis_hub import AnalysisHub

    # Imported when File > Compare (or Run History) is first used: a faster start.
    from tpuscope.ui.compare_view import CompareView
    from tpuscope.ui.details import DetailsDock, DetailsPanel
    from tpuscope.ui.history_view import HistoryView
    from tpuscope.ui.jobs import LatestJobs
    from tpuscope.ui.pod.session import PodSession
    from tpuscope.ui.search import SearchBar, SearchResults
    from tpuscope.ui.timeline.view import TimelineView

MAX_RECENT = 10
OUTLINE_MESSAGE_MS = 8000  # how long the status bar says where outlined events came from
COMPARE_TITLE = "Compare"  # the Compare tab, added on first use (it shows two traces, not the hub's)
HISTORY_TITLE = "History"  # the History tab, added on first use (every run of a logdir)
# Issue 7: the first view after a profile opens is the Overview (the timeline is the next tab, Ctrl+2).
FIRST_VIEWS = ("overview", TIMELINE)  # shown after a load: the first of these this build has
# A path opened before the first paint loads after it, or after this long if no paint comes (a window
# started minimized is not painted); our heuristic: longer than a first paint takes.
PAINT_WAIT_MS = 1000


def _clock_words(result: LoadResult) -> str:
    """ "; clocks aligned: worker2 -1.3 ms" when the load moved hosts onto the others' clock."""
    from tpuscope.analysis.pod.clocks import APPLIED_SHIFTS
    from tpuscope.model.clock_shift import describe_shifts

    if not result.analysis.has(APPLIED_SHIFTS):
        return ""
    words = describe_shifts(result.analysis.get(APPLIED_SHIFTS))
    return f"; {words}" if words else ""


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
        self.resize(1400, 900)
        self.setAcceptDrops(True)
        self.trace: Trace | None = None
        self._selected_range: tuple[int, int] | None = None
        self.path: Path | str | None = None
        self.generation = 0
        self._cancelled_generation = -1
        self.workers: set[LoadWorker] = set()
        self.compare_view: CompareView | None = None  # the Compare tab, once File > Compare made it
        self.history_view: HistoryView | None = None  # the History tab, once File > Run History made it
        self._status_head = ""  # the status line of the trace shown, before its steps are known
        self._status_clocks = ""  # how the hosts' clocks were aligned, said after the steps

        self.tabs = QTabWidget(self)
        self.titles: dict[str, str] = {spec.key: spec.title for spec in VIEWS}
        # Made after the first paint (see `_build_body` and `views`), or at once when asked for sooner.
        self._body_built = False
        self._views: dict[str, QWidget] = {}  # made: the timeline tab, the views opened so far
        self._placeholders: dict[str, QWidget] = {}  # the tabs whose view is not made yet
        self._views_built = False  # whether the views' tabs are there (their views made when shown)
        self._painted = False
        self._view_imports: list[QThread] = []  # the workers importing the views' modules
        self._others_imported = False  # whether the views not on screen had their modules imported
        self._outlined_ops: set[str] = set()  # the ops last outlined, for views made later
        self._open_after_paint: Path | str | None = None  # a path opened before the window painted
        self._pods: PodSession | None = None  # made with the first load (`pods`)

        self.welcome = WelcomePage(self)
        self._first_paint = _FirstPaint(self.welcome, self._on_first_paint)
        self.stack = QStackedWidget(self)
        self.stack.addWidget(self.welcome)
        self.stack.addWidget(self.tabs)
        self.notice = NoticeBar(self)  # what of the open profile could not be read (a file cut short)
        central = QWidget(self)
        central_column = QVBoxLayout(central)
        central_column.setContentsMargins(0, 0, 0, 0)
        central_column.setSpacing(0)
        central_column.addWidget(self.notice)
        central_column.addWidget(self.stack, 1)
        self.setCentralWidget(central)

        self.status_label = QLabel("", self)
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 1000)
        self.progress.setMaximumWidth(260)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.clicked.connect(self.cancel_load)
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.cancel_button)
        self._show_progress(False)

        self._build_menus()
        self.welcome.openFileRequested.connect(self.open_file_dialog)
        self.welcome.openFolderRequested.connect(self.open_folder_dialog)
        self.welcome.openPathRequested.connect(self.open_path)
        self._refresh_recent()
        self._restore_state()

    # ----- the body: what the window shows a profile with, made after the first paint --------------

    def _build_body(self) -> None:
        """The timeline tab, search bar, Details dock, analysis hub and pod session: their modules
        (numpy, the timeline's, the analyses') are most of the window's start, so the empty window is
        painted first and they are made just after; anything asking for them earlier makes them at once."""
        if self._body_built:
            return
        self._body_built = True
        from tpuscope.analysis.session import STEPS
        from tpuscope.ui.analysis_hub import AnalysisHub
        from tpuscope.ui.details import DetailsDock, DetailsPanel
        from tpuscope.ui.jobs import LatestJobs
        from tpuscope.ui.memory_counters import MEMORY_COUNTERS
        from tpuscope.ui.search import SearchBar
        from tpuscope.ui.timeline.view import TimelineView

        self._jobs = LatestJobs(self)  # range summaries; a newer range drops an older one's
        self._hub = AnalysisHub(self)  # the trace's analyses, computed once for every view
        self._hub.idle.connect(self._import_the_other_views)
        self._timeline = TimelineView(self)
        self._search = SearchBar(self)
        timeline_tab = QWidget(self)
        column = QVBoxLayout(timeline_tab)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self._search)
        column.addWidget(self._timeline, 1)
        self._views[TIMELINE] = timeline_tab
        self.tabs.addTab(timeline_tab, self.titles[TIMELINE])
        self._hub.subscribe(STEPS, self._on_steps)
        self._hub.subscribe(MEMORY_COUNTERS, self._timeline.set_counters)

        self._details = DetailsPanel(self, self._hub)
        self._details_dock = DetailsDock(self._details, self.settings, self)  # opens with something to show
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self._details_dock)
        self.restoreDockWidget(self._details_dock)  # where the user had it (`_restore_state` ran first)
        self._details_dock.hide()  # nothing to show yet: it opens with the first event or range shown
        self.view_menu.addAction(self._details_dock.toggleViewAction())

        self._timeline.eventSelected.connect(self._on_event_selected)
        self._timeline.rangeSelected.connect(self._on_range_selected)
        self._details.flowTargetClicked.connect(self._jump_to_event)
        self._details.sqlRequested.connect(self.run_sql)
        self._search.matchesChanged.connect(self._on_matches)
        self._search.currentMatch.connect(self._on_current_match)

    @property
    def timeline(self) -> TimelineView:
        self._build_body()
        return self._timeline

    @property
    def search(self) -> SearchBar:
        self._build_body()
        return self._search

    @property
    def hub(self) -> AnalysisHub:
        self._build_body()
        return self._hub

    @property
    def jobs(self) -> LatestJobs:
        self._build_body()
        return self._jobs

    @property
    def details(self) -> DetailsPanel:
        self._build_body()
        return self._details

    @property
    def details_dock(self) -> DetailsDock:
        self._build_body()
        return self._details_dock

    @property
    def pods(self) -> PodSession:
        """Runs of many hosts: the pod page first, one host's trace at a time. Made with the first
        load (its `work` is what the loader thread runs), which may start before the body is made."""
        if self._pods is None:
            from tpuscope.ui.pod.session import PodSession

            self._pods = PodSession(self)
        return self._pods

    def _on_first_paint(self) -> None:
        self._painted = True
        QTimer.singleShot(0, self._after_first_paint)

    def _after_first_paint(self) -> None:
        """The load the user asked for before the paint, then the body while it loads, then the tabs:
        the first view's modules are imported in a worker while the profile loads, and each view is
        made on this thread when its tab is first shown (the other views' modules are imported once
        the first picture is complete, while the user looks at it)."""
        self._painted = True
        pending, self._open_after_paint = self._open_after_paint, None
        if pending is not None:
            self.open_path(pending)
        self._build_body()
        self._add_view_tabs()
        if not self._view_imports:
            first = next((key for key in FIRST_VIEWS if key in self._placeholders), None)
            self._import_views_in_worker([first] if first is not None else [])

    def _import_views_in_worker(self, keys: list[str] | None) -> None:
        """Imports the modules of views `keys` (None: all) in a worker thread (`import_view_modules`)."""
        from tpuscope.ui.jobs import Job
        from tpuscope.ui.registry import import_view_modules

        job = Job(0, lambda: import_view_modules(keys))  # an error is raised again where its view is made
        self._view_imports.append(job)
        job.start()

    def _import_the_other_views(self) -> None:
        """Once the views on screen have every result (the hub is idle), the other views' modules are
        imported in a worker: a tab opened later is made from modules already in. Only in a window
        the user has on screen (it painted): a screenshot's window is closed once it is drawn."""
        if self._others_imported or self.trace is None or not self._painted:
            return
        self._others_imported = True
        self._import_views_in_worker(None)

    # ----- views -----------------------------------------------------------------------------

    @property
    def views(self) -> MutableMapping[str, QWidget]:
        """The timeline tab and every `View`, by key, in the registry's order (then Compare and History
        once made).

        A view is made when its tab is first shown or when it is looked up here, so the window
        neither waits for the modules of views nobody opens (pyqtgraph, DuckDB) nor makes their
        widgets; `made_views` lists those made so far."""
        self._add_view_tabs()
        return _ViewsByKey(self)

    @property
    def made_views(self) -> dict[str, QWidget]:
        """The views made so far (and the timeline tab), by key."""
        return dict(self._views)

    def _add_view_tabs(self) -> None:
        """A tab for each view of this build, in the registry's order, holding an empty page until
        the view is made (`_make_view`)."""
        if self._views_built:
            return
        self._build_body()
        self._views_built = True
        for spec in VIEWS:
            if spec.key == TIMELINE:
                continue
            if not spec.available():
                continue
            placeholder = QWidget(self)
            self._placeholders[spec.key] = placeholder
            position = sum(1 for s in VIEWS[: VIEWS.index(spec)] if s.key in self._placeholders)
            position += sum(1 for s in VIEWS[: VIEWS.index(spec)] if s.key == TIMELINE)
            self.tabs.insertTab(position, placeholder, spec.title)
        self.tabs.currentChanged.connect(self._on_tab_shown)

    def _on_tab_shown(self, index: int) -> None:
        key = next((k for k, page in self._placeholders.items() if page is self.tabs.widget(index)), None)
        if key is not None:
            self._make_view(key)

    def _make_view(self, key: str) -> QWidget:
        """Makes view `key` in place of its tab's empty page (its module imported here if no worker
        did yet), wired to the window, and shows it the hub's trace if one is loaded already."""
        spec = next(s for s in VIEWS if s.key == key)
        view_class = spec.load()
        placeholder = self._placeholders.pop(key)
        if view_class is None:  # the module went missing since the tabs were added
            self.tabs.removeTab(self.tabs.indexOf(placeholder))
            placeholder.deleteLater()
            raise KeyError(key)
        view = view_class(self.hub, self)
        view.highlightRequested.connect(self.highlight_events)
        view.zoomRequested.connect(self.zoom_timeline)
        view.trackRequested.connect(self.timeline.scroll_to_track)
        view.openRequested.connect(self.open_view)
        view.eventPicked.connect(self.details.show_event)
        view.opsOutlined.connect(self.outline_ops)
        view.queryTracksChanged.connect(self.timeline.set_query_tracks)
        view.catch_up()
        if self._outlined_ops:
            view.outline_ops(self._outlined_ops)
        self._views[key] = view
        index = self.tabs.indexOf(placeholder)
        was_current = self.tabs.currentIndex() == index
        self.tabs.blockSignals(True)  # the tab bar's current page changes only to the view itself
        try:
            self.tabs.insertTab(index, view, spec.title)
            if was_current:
                self.tabs.setCurrentIndex(index)
            self.tabs.removeTab(index + 1)
        finally:
            self.tabs.blockSignals(False)
        placeholder.deleteLater()
        return view

    # ----- menus -----------------------------------------------------------------------------

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self._action(file_menu, "&Open\u2026", self.open_file_dialog, QKeySequence.StandardKey.Open)
        self._action(file_menu, "Open &Folder\u2026", self.open_folder_dialog, "Ctrl+Shift+O")
        self._action(file_menu, "Open &URL\u2026", self.open_url_dialog, "Ctrl+Shift+U")
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self._action(file_menu, "Compare &with\u2026", self.compare_with_dialog, "Ctrl+Shift+K")
        self._action(file_menu, "Run &History\u2026", self.history_dialog, "Ctrl+Shift+H")
        sample = bundled_sample()
        if sample is not None:
            self._action(file_menu, "Open &Sample (TPU v6e)", lambda: self.open_path(sample))
        file_menu.addSeparator()
        self._action(file_menu, "&Capture\u2026", self.open_capture_dialog, "Ctrl+Shift+C")
        file_menu.addSeparator()
        self._action(file_menu, "&Export Chrome Trace\u2026", lambda: self.export_dialog(False), "Ctrl+E")
        self._action(
            file_menu, "Export Selected &Range\u2026", lambda: self.export_dialog(True), "Ctrl+Shift+E"
        )
        file_menu.addSeparator()
        add_cache_limit_action(self, file_menu, self.settings)
        self._action(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        view_menu = self.menuBar().addMenu("&View")
        self._action(view_menu, "Zoom to &Fit", lambda: self.timeline.zoom_to_fit(), "Ctrl+0")
        self._action(
            view_menu, "Zoom &In (W)", lambda: self.timeline.zoom(1.25), QKeySequence.StandardKey.ZoomIn
        )
        self._action(
            view_menu, "Zoom &Out (S)", lambda: self.timeline.zoom(0.8), QKeySequence.StandardKey.ZoomOut
        )
        view_menu.addSeparator()
        self._action(view_menu, "&Collapse All Groups", lambda: self.timeline.set_all_collapsed(True))
        self._action(view_menu, "&Expand All Groups", lambda: self.timeline.set_all_collapsed(False))
        self.show_empty_action = self._action(view_menu, "Show &Empty Tracks", self._toggle_empty_tracks)
        self.show_empty_action.setCheckable(True)
        self.align_clocks_action = self._action(view_menu, "Align Host &Clocks", self._toggle_align_clocks)
        self.align_clocks_action.setCheckable(True)
        aligned = str(self.settings.value("view/align_clocks", True)).lower() == "true"
        self.align_clocks_action.setChecked(aligned)
        LOAD_OPTIONS.align_clocks = self.align_clocks_action.isChecked()
        self._action(view_menu, "Find\u2026", self._focus_search, QKeySequence.StandardKey.Find)
        view_menu.addSeparator()
        for number, key in enumerate(self.titles, start=1):
            go_to = lambda _=False, k=key: self.show_view(k)  # noqa: E731 (one slot per tab)
            self._action(view_menu, f"Go to {self.titles[key]}", go_to, f"Ctrl+{number}")
        view_menu.addSeparator()
        self.view_menu = view_menu  # View > Details is added with the dock (`_build_body`)
        help_menu = self.menuBar().addMenu("&Help")
        self._action(help_menu, "&Keys", self._show_keys)

    def _action(self, menu, text: str, slot, shortcut=None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _toggle_empty_tracks(self) -> None:
        self.timeline.set_show_empty(self.show_empty_action.isChecked())

    def _toggle_align_clocks(self) -> None:
        """View > Align Host Clocks: saved, and the open profile is loaded again by it."""
        LOAD_OPTIONS.align_clocks = self.align_clocks_action.isChecked()
        self.settings.setValue("view/align_clocks", LOAD_OPTIONS.align_clocks)
        if self.trace is not None and self.path is not None:
            self.open_path(self.path)

    def _focus_search(self) -> None:
        self.show_view("timeline")
        self.search.line.setFocus()
        self.search.line.selectAll()

    def _show_keys(self) -> None:
        QMessageBox.information(
            self,
            "Timeline keys",
            "Wheel: zoom around the cursor; Shift+wheel: scroll tracks\n"
            "Drag: pan; Shift+drag: select a time range\nW / S: zoom in / out; A / D: pan\n"
            "Double-click an event: zoom to it; Ctrl+0 or Home: zoom to fit\n"
            "Enter / Shift+Enter in the search box: next / previous match\n"
            f"Ctrl+1 \u2026 Ctrl+{len(VIEWS)}: {', '.join(spec.title for spec in VIEWS)} tabs",
        )

    # ----- opening ---------------------------------------------------------------------------

    def open_file_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open profile", self._last_dir(), dialog_filters())
        if path:
            self.open_path(path)

    def open_folder_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open run folder or logdir", self._last_dir())
        if path:
            self.open_path(path)

    def open_url_dialog(self) -> None:
        """A logdir in cloud storage: its runs are listed first, the chosen one opens like a path."""
        from tpuscope.ui.open_url_dialog import OpenUrlDialog

        recent_urls = [p for p in self.recent_paths() if is_url(p)]
        dialog = OpenUrlDialog(self, recent_urls[0] if recent_urls else "")
        dialog.chosen.connect(self.open_path)
        dialog.exec()

    def compare_with_dialog(self) -> None:
        """Compares the open profile (BASE; asked for when none is open) with one the user picks (NEW)."""
        base = str(self.path) if self.path is not None else None
        if base is None:
            base, _ = QFileDialog.getOpenFileName(
                self, "Choose BASE profile", self._last_dir(), dialog_filters()
            )
            if not base:
                return
        new, _ = QFileDialog.getOpenFileName(
            self, "Compare BASE with (NEW)", self._last_dir(), dialog_filters()
        )
        if new:
            self.open_comparison(base, new)

    def open_comparison(self, base: str | Path, new: str | Path) -> None:
        """Shows the Compare tab (added on first use) and compares BASE with NEW in the background."""
        view = self.compare_view
        if view is None:
            from tpuscope.ui.compare_view import CompareView  # imported on first use: a faster start

            view = CompareView(self)
            view.compareFailed.connect(lambda message: QMessageBox.warning(self, "Cannot compare", message))
            view.comparisonShown.connect(lambda _: self._on_comparison_shown(view))
            self.views["compare"] = self.compare_view = view
            self.tabs.addTab(view, COMPARE_TITLE)
            self.titles["compare"] = COMPARE_TITLE
        self.stack.setCurrentWidget(self.tabs)
        self.tabs.setCurrentWidget(view)
        view.compare_paths(str(base), str(new), self._open_as_loaded(base))

    def history_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Run history of the logdir", self._last_dir())
        if folder:
            self.open_history([folder])

    def open_history(self, paths: list[str]) -> None:
        """Shows the History tab (added on first use) and reads every run of `paths` in the background;
        clicking a run there compares it with the run before it."""
        view = self.history_view
        if view is None:
            from tpuscope.ui.history_view import HistoryView  # imported on first use: a faster start

            view = HistoryView(self)
            view.historyFailed.connect(
                lambda message: QMessageBox.warning(self, "Cannot read the history", message)
            )
            view.compareRequested.connect(self.open_comparison)
            self.views["history"] = self.history_view = view
            self.tabs.addTab(view, HISTORY_TITLE)
            self.titles["history"] = HISTORY_TITLE
        self.stack.setCurrentWidget(self.tabs)
        self.tabs.setCurrentWidget(view)
        view.read_paths([str(p) for p in paths])

    def _open_as_loaded(self, path: str | Path) -> LoadResult | None:
        """The open profile as its loader made it, when `path` is it (a comparison reuses it)."""
        if self.trace is None or self.path is None or self.timeline.lod is None or self.hub.analysis is None:
            return None
        if str(path) != str(self.path) and Path(str(path)).resolve() != Path(str(self.path)).resolve():
            return None
        # Its analyses too: what the views computed is not computed again for the comparison.
        return LoadResult(self.path, self.trace, self.timeline.lod, self.hub.analysis, self.timeline.colours)

    def _on_comparison_shown(self, view) -> None:
        """BASE becomes the open profile of the other views (it is loaded already), unless it is open."""
        base = view.result.base
        if self.path is None or Path(self.path).resolve() != Path(base.path).resolve():
            self.set_result(base)
            self._add_recent(str(base.path))
        self.tabs.setCurrentWidget(view)

    def open_capture_dialog(self) -> None:
        # Imported on first use: paramiko and grpc alone took 0.6 s of the window's start.
        from tpuscope.ui.capture_dialog import CaptureDialog

        dialog = CaptureDialog(self)
        dialog.captured.connect(self.open_path)
        dialog.exec()

    def _last_dir(self) -> str:
        recent = [p for p in self.recent_paths() if not is_url(p)]
        return str(Path(recent[0]).parent) if recent else str(Path.home())

    def open_path(self, path: str | Path) -> None:
        """Starts loading `path` in a worker; any load still running is cancelled and its result dropped.

        Asked for before the window first painted (`tpuscope PATH`), the load starts just after it."""
        if self.isVisible() and not self._painted and not self._body_built:
            self._open_after_paint = path
            self.status_label.setText(f"Opening {path}\u2026")
            QTimer.singleShot(PAINT_WAIT_MS, self._after_first_paint)
            return
        self.cancel_load()
        self.generation += 1
        worker = LoadWorker(self.generation, path, self, work=self.pods.work)
        worker.progressed.connect(self._on_progress)
        worker.loaded.connect(self._on_loaded)
        worker.failed.connect(self._on_failed)
        worker.cancelled.connect(self._on_cancelled)
        worker.finished.connect(lambda w=worker: self._forget(w))
        self.workers.add(worker)
        self.status_label.setText(f"Opening {path}\u2026")
        self.progress.setValue(0)
        self._show_progress(True)
        worker.start()

    def cancel_load(self) -> None:
        """Stops the running load; a result that was already on its way is dropped too."""
        self._open_after_paint = None
        for worker in self.workers:
            worker.cancel()
        self._cancelled_generation = self.generation

    def is_loading(self) -> bool:
        return any(w.generation == self.generation for w in self.workers)

    def _forget(self, worker: LoadWorker) -> None:
        self.workers.discard(worker)
        worker.deleteLater()

    def _show_progress(self, visible: bool) -> None:
        self.progress.setVisible(visible)
        self.cancel_button.setVisible(visible)

    def _on_progress(self, generation: int, fraction: float, message: str) -> None:
        if generation == self.generation:
            self.progress.setValue(int(fraction * 1000))
            self.status_label.setText(message)

    def _on_loaded(self, generation: int, result: LoadResult) -> None:
        if generation != self.generation:
            return  # a newer load was started: this result is stale
        if generation == self._cancelled_generation:
            self._on_cancelled(generation)  # Cancel was pressed before the result arrived
            return
        self._show_progress(False)
        if self.pods.accept(result):  # a pod summary, or a host of the pod shown
            return
        self.set_result(result)
        self._add_recent(str(result.path))

    def _on_failed(self, generation: int, message: str) -> None:
        if generation != self.generation:
            return
        if generation == self._cancelled_generation:
            self._on_cancelled(generation)
            return
        self._show_progress(False)
        self.status_label.setText(message)
        self.loadFailed.emit(message)
        QMessageBox.warning(self, "Cannot open profile", message)

    def _on_cancelled(self, generation: int) -> None:
        if generation == self.generation:
            self._show_progress(False)
            self.status_label.setText("Loading cancelled.")

    def set_result(self, result: LoadResult, view: str | None = None) -> None:
        """Shows a loaded profile in every view: the timeline at once, the analyses as they finish;
        `view` is the tab brought to the front (default the Overview: issue 7), the only view made now
        (`tpuscope screenshot --view timeline` makes no Overview)."""
        self.trace = result.trace
        self._selected_range = None
        self.path = result.path
        self.timeline.set_trace(result.trace, result.lod, None, result.colours)
        self.search.set_trace(result.trace)
        self.details.clear_details()
        self.notice.show_messages(result.trace.load_warnings)
        trace = result.trace
        self._status_head = (
            f"{_short_name(result.path)}: {trace.event_count:,} events, "
            f"{len(trace.planes)} planes, {len(trace.hosts)} host(s)"
        )
        self._status_clocks = _clock_words(result)
        self.status_label.setText(self._status_head + self._status_clocks)
        self._add_view_tabs()
        self.hub.set_analysis(result.analysis)
        self.stack.setCurrentWidget(self.tabs)
        shown = (view,) if view is not None else FIRST_VIEWS
        first = next(key for key in (*shown, TIMELINE) if key in self._placeholders or key in self._views)
        self.show_view(first)
        if first == TIMELINE:
            self.timeline.setFocus()  # W/A/S/D work at once
        self.setWindowTitle(f"{_short_name(result.path)} - tpuscope")
        self.traceLoaded.emit(trace)

    def show_no_trace(self) -> None:
        """Empties every view: a pod page shows before any host's events are loaded."""
        self.trace = None
        self._selected_range = None
        self.timeline.set_trace(None)
        self.search.set_trace(None)
        self.details.clear_details()
        self.notice.show_messages([])
        self.hub.set_trace(None)

    def _on_steps(self, steps: Steps) -> None:
        """The step band on the timeline and the step count in the status line, once steps are found."""
        self.timeline.set_steps(steps)
        if len(steps):
            self.status_label.setText(f"{self._status_head}, {len(steps)} steps{self._status_clocks}")

    # ----- views -----------------------------------------------------------------------------

    def open_view(self, key: str, target: object = None) -> None:
        """Brings view `key` to the front (first, so a view that fills when shown has begun) and
        selects `target` there (a view's `openRequested`)."""
        from tpuscope.ui.views import View  # loaded with the views, after the first paint

        if self.show_view(key) and target is not None:
            view = self.views[key]
            if isinstance(view, View):
                view.select(target)

    def show_view(self, key: str) -> bool:
        """Brings a tab to the front; False when this build has no such view."""
        view = self.views.get(key)
        if view is None:
            return False
        self.tabs.setCurrentWidget(view)
        if key == TIMELINE:
            self.timeline.setFocus()  # W/A/S/D work at once after Ctrl+2 or a click that led here
        return True

    def highlight_events(self, matches: list[tuple[Track, np.ndarray]]) -> None:
        """Outlines events picked in another view on the timeline.

        It neither switches tabs nor moves the timeline: views highlight when
        the user selects something there, and the user's place must not jump.
        zoomRequested does both.
        """
        import numpy as np

        from tpuscope.ui.timeline.view import PICKED_LAYER

        matches = [(t, np.asarray(i)) for t, i in matches if len(i)]
        self.timeline.set_highlight(matches, PICKED_LAYER)
        source = self.sender()
        title = next((self.titles[k] for k, v in self._views.items() if v is source), "another view")
        count = sum(len(i) for _, i in matches)
        if count:
            self.statusBar().showMessage(
                f"{count:,} events outlined on the timeline, picked in {title} (Esc on the timeline clears).",
                OUTLINE_MESSAGE_MS,
            )

    def outline_ops(self, names: set[str]) -> None:
        """Marks the ops named (picked in one view, e.g. a source line's) in every view listing ops."""
        from tpuscope.ui.views import View  # loaded with the views, after the first paint

        self._outlined_ops = set(names)  # for the views made later
        for view in self._views.values():
            if isinstance(view, View):
                view.outline_ops(names)

    def zoom_timeline(self, t0_ps, t1_ps) -> None:
        self.show_view("timeline")
        self.timeline.zoom_to_range(float(t0_ps), float(t1_ps), margin=0.0)

    def _on_event_selected(self, track: Track | None, index: int) -> None:
        if track is None:
            self.details.clear_details()
        else:
            self.details.show_event(track, index)

    def _jump_to_event(self, track: Track, index: int) -> None:
        """The other end of a flow: select it, zoom to it and show its details."""
        self.show_view("timeline")
        self.timeline.scroll_to_track(track)
        self.timeline.zoom_to_event(track, index)
        self.timeline.select_event(track, index)
        self.details.show_event(track, index)

    def export_dialog(self, selected_range: bool) -> None:
        """File > Export: the trace (or the Shift+drag range) as Chrome trace JSON that Perfetto opens."""
        if self.trace is None:
            return
        window = self._selected_range if selected_range else None
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

    def _on_range_selected(self, t0_ps: float, t1_ps: float) -> None:
        """Summarizes the range in a worker: over millions of events it takes seconds."""
        self._selected_range = (int(t0_ps), int(t1_ps))
        if self.trace is None or self.timeline.layout_ is None:
            return
        tracks = [r.track for r in self.timeline.layout_.rows if r.track is not None]
        self.details.setHtml("<p>Summarizing the range\u2026</p>")

        def show(pivot) -> None:
            self.details.show_range(pivot)
            self.rangeSummarized.emit(pivot)

        from tpuscope.analysis.area_pivot import pivot_area

        self.jobs.start(lambda: pivot_area(tracks, t0_ps, t1_ps), show)

    def run_sql(self, query: str) -> None:
        """Shows the Query tab and runs `query` there (a range pivot's "as SQL")."""
        run = getattr(self.views.get("query"), "run_query", None)
        if run is not None and self.show_view("query"):
            run(query)

    def _on_matches(self, results: SearchResults) -> None:
        from tpuscope.ui.timeline.view import SEARCH_LAYER

        self.timeline.set_highlight_lods(results.outlines, SEARCH_LAYER)

    def _on_current_match(self, track: Track, index: int) -> None:
        self.timeline.select_event(track, index)
        self.timeline.zoom_to_event(track, index)

    # ----- recent files, drag and drop, state -------------------------------------------------

    def recent_paths(self) -> list[str]:
        value = self.settings.value("recent", [])
        if isinstance(value, str):  # one entry reads back as a string
            value = [value]
        return [str(v) for v in value] if isinstance(value, list | tuple) else []

    def _add_recent(self, path: str) -> None:
        path = path if is_url(path) else str(Path(path).resolve())
        paths = [path] + [p for p in self.recent_paths() if p != path]
        self.settings.setValue("recent", paths[:MAX_RECENT])
        self.settings.sync()
        self._refresh_recent()

    def _refresh_recent(self) -> None:
        paths = self.recent_paths()
        self.welcome.set_recent(paths)
        self.recent_menu.clear()
        for path in paths:
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda _=False, p=path: self.open_path(p))
        self.recent_menu.setEnabled(bool(paths))

    def dragEnterEvent(self, event) -> None:
        if any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.open_path(paths[0])

    def _restore_state(self) -> None:
        geometry = self.settings.value("window/geometry")
        state = self.settings.value("window/state")
        if geometry is not None:
            self.restoreGeometry(geometry)
        if state is not None:
            self.restoreState(state)  # the Details dock's place is restored when it is made

    def wait_for_background_work(self) -> None:
        """Cancels loading and waits for every worker thread, ours and the views' (before closing)."""
        self.cancel_load()
        for worker in list(self.workers):
            worker.wait()
        for job in self._view_imports:
            job.wait()
        if not self._body_built:
            return  # nothing else ever ran
        if self._pods is not None:
            self._pods.shutdown()  # a pod's background diagnosis: its workers stopped
        from tpuscope.ui.views import View  # loaded with the views, after the first paint

        self.search.shutdown()
        self.jobs.wait()
        self.details.wait_for_code()
        self.hub.wait(deliver=False)
        for view in self._views.values():  # views never made have nothing to wait for
            if isinstance(view, View):
                view.shutdown()
        if self.compare_view is not None:
            self.compare_view.shutdown()
        if self.history_view is not None:
            self.history_view.shutdown()

    def closeEvent(self, event) -> None:
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.settings.sync()
        self.wait_for_background_work()
        super().closeEvent(event)


def _short_name(path: Path | str) -> str:
    """The last part of a path or URL, for the title bar and the status line."""
    return path.rstrip("/").rsplit("/", 1)[-1] if isinstance(path, str) else path.name


class _ViewsByKey(MutableMapping[str, QWidget]):
    """`MainWindow.views`: the window's tabs by key; looking a view up makes it if its tab has not
    been shown yet (iterating lists the keys without making anything)."""

    def __init__(self, window: MainWindow):
        self._window = window

    def _keys(self) -> list[str]:
        window = self._window
        keys = [s.key for s in VIEWS if s.key in window._views or s.key in window._placeholders]
        return keys + [k for k in window._views if k not in keys]

    def __getitem__(self, key: str) -> QWidget:
        window = self._window
        if key in window._views:
            return window._views[key]
        if key in window._placeholders:
            return window._make_view(key)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key in self._window._views or key in self._window._placeholders

    def __setitem__(self, key: str, view: QWidget) -> None:
        self._window._views[key] = view

    def __delitem__(self, key: str) -> None:
        del self._window._views[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())


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
