"""What the window shows and where: its tabs by name, the profile shown in every view, and what one
view asks of another (outline these ops, zoom the timeline to this time, open that tab).

KDAB Hotspot's results pages are the pattern: one object owns the pages, makes each when first
needed, routes "show this in that page" between them, and is all the rest of the app talks to; the
window only composes it. Views are named by their registry key (`registry.VIEWS`); a page added
later (Compare, History, the Pod tab) is added through `add_view` / `add_page`.

The body (the timeline tab with its search bar, the Details dock, the analysis hub) is made on
first use (`build_body`): the window paints before their modules (numpy, the timeline's, the
analyses') are imported (issue 23). Each view is made when its tab is first shown or when it is
looked up in `views`, so the window neither waits for the modules of views nobody opens (pyqtgraph,
DuckDB) nor makes their widgets.

A new profile resets what the window shows (issue 33), in one place, `_forget_the_shown_profile`:
every view resets itself when the hub shows the new trace (`View.reset`), and here the Details dock is
emptied, the ops outlined in the views forgotten, and the pages added for the previous profile
(Compare, History: `add_view`) closed, unless the profile shown comes from that page itself.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, QThread, Signal
from PySide6.QtWidgets import QLabel, QMainWindow, QStackedWidget, QTabWidget, QVBoxLayout, QWidget

from tpuscope.ui.notice_bar import NoticeBar
from tpuscope.ui.registry import TIMELINE, VIEWS

if TYPE_CHECKING:
    import numpy as np

    from tpuscope.analysis.steps import Steps
    from tpuscope.model.trace import Trace, Track
    from tpuscope.ui.analysis_hub import AnalysisHub
    from tpuscope.ui.details import DetailsDock, DetailsPanel
    from tpuscope.ui.jobs import LatestJobs
    from tpuscope.ui.loader import LoadResult
    from tpuscope.ui.search import SearchBar, SearchResults
    from tpuscope.ui.timeline.view import TimelineView

# Issue 7: the first view after a profile opens is the Overview (the timeline is the next tab, Ctrl+2).
FIRST_VIEWS = ("overview", TIMELINE)  # shown after a load: the first of these this build has
OUTLINE_MESSAGE_MS = 8000  # how long the status bar says where outlined events came from


class ViewRouter(QObject):
    """See the module docstring. `host` is the main window: the router lays out its central widget
    (`welcome` until a profile is shown, then the tabs), its Details dock and its status line."""

    bodyBuilt = Signal()  # the timeline, search bar, Details dock and hub exist now
    resultShown = Signal(object)  # the LoadResult every view now shows
    rangeSummarized = Signal(object)  # the AreaPivot shown in the details panel

    def __init__(self, host: QMainWindow, welcome: QWidget):
        super().__init__(host)
        self._host = host
        self.trace: Trace | None = None
        self.path: Path | str | None = None  # the profile or run shown (a URL stays a string)
        self.selected_range: tuple[int, int] | None = None  # the Shift+drag range on the timeline
        self.painted = False  # set by the window: the other views' modules are imported only then
        self.titles: dict[str, str] = {spec.key: spec.title for spec in VIEWS}
        self._status_head = ""  # the status line of the trace shown, before its steps are known
        self._status_clocks = ""  # how the hosts' clocks were aligned, said after the steps
        self._body_built = False
        self._views: dict[str, QWidget] = {}  # made: the timeline tab, the views opened so far
        self._placeholders: dict[str, QWidget] = {}  # the tabs whose view is not made yet
        self._views_built = False  # whether the views' tabs are there (their views made when shown)
        self._view_imports: list[QThread] = []  # the workers importing the views' modules
        self._others_imported = False  # whether the views not on screen had their modules imported
        self._outlined_ops: set[str] = set()  # the ops last outlined, for views made later
        self._added: list[str] = []  # keys of the pages `add_view` added: closed by a new profile

        self.tabs = QTabWidget(host)
        self.welcome = welcome
        self.stack = QStackedWidget(host)
        self.stack.addWidget(welcome)
        self.stack.addWidget(self.tabs)
        self.notice = NoticeBar(host)  # what of the open profile could not be read (a file cut short)
        central = QWidget(host)
        column = QVBoxLayout(central)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.notice)
        column.addWidget(self.stack, 1)
        host.setCentralWidget(central)
        self.status_label = QLabel("", host)
        host.statusBar().addWidget(self.status_label, 1)

    # ----- the body -------------------------------------------------------------------------------

    def build_body(self) -> None:
        """The timeline tab, search bar, Details dock and analysis hub, once (see the module docstring)."""
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

        host = self._host
        self._jobs = LatestJobs(self)  # range summaries; a newer range drops an older one's
        self._hub = AnalysisHub(host)  # the trace's analyses, computed once for every view
        self._hub.idle.connect(self._import_the_other_views)
        self._timeline = TimelineView(host)
        self._search = SearchBar(host)
        timeline_tab = QWidget(host)
        column = QVBoxLayout(timeline_tab)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self._search)
        column.addWidget(self._timeline, 1)
        self._views[TIMELINE] = timeline_tab
        self.tabs.addTab(timeline_tab, self.titles[TIMELINE])
        self._hub.subscribe(STEPS, self._on_steps)
        self._hub.subscribe(MEMORY_COUNTERS, self._timeline.set_counters)

        self._details = DetailsPanel(host, self._hub)
        self._details_dock = DetailsDock(self._details, host)  # opens with content
        host.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self._details_dock)
        host.restoreDockWidget(self._details_dock)  # where the user had it (the window state is restored)
        self._details_dock.hide()  # nothing to show yet: it opens with the first event or range shown

        self._timeline.eventSelected.connect(self.show_event_details)
        self._timeline.rangeSelected.connect(self.summarize_range)
        self._details.flowTargetClicked.connect(self.jump_to_event)
        self._details.sqlRequested.connect(self.run_sql)
        self._details.graphRequested.connect(self.open_graph)
        self._search.matchesChanged.connect(self._on_matches)
        self._search.currentMatch.connect(self._on_current_match)
        self.bodyBuilt.emit()

    @property
    def body_built(self) -> bool:
        return self._body_built

    @property
    def views_built(self) -> bool:
        return self._views_built

    @property
    def timeline(self) -> TimelineView:
        self.build_body()
        return self._timeline

    @property
    def search(self) -> SearchBar:
        self.build_body()
        return self._search

    @property
    def hub(self) -> AnalysisHub:
        self.build_body()
        return self._hub

    @property
    def jobs(self) -> LatestJobs:
        self.build_body()
        return self._jobs

    @property
    def details(self) -> DetailsPanel:
        self.build_body()
        return self._details

    @property
    def details_dock(self) -> DetailsDock:
        self.build_body()
        return self._details_dock

    # ----- the views' tabs and modules ----------------------------------------------------------

    @property
    def views(self) -> MutableMapping[str, QWidget]:
        """The timeline tab and every view, by key, in the registry's order (then the pages added
        later); looking a view up makes it (see the module docstring)."""
        self.add_view_tabs()
        return _ViewsByKey(self)

    @property
    def made_views(self) -> dict[str, QWidget]:
        """The views made so far (and the timeline tab), by key."""
        return dict(self._views)

    def has_view(self, key: str) -> bool:
        return key in self._views or key in self._placeholders

    def add_view_tabs(self) -> None:
        """A tab for each view of this build, in the registry's order, holding an empty page until
        the view is made (`_make_view`)."""
        if self._views_built:
            return
        self.build_body()
        self._views_built = True
        for spec in VIEWS:
            if spec.key == TIMELINE or not spec.available():
                continue
            placeholder = QWidget(self._host)
            self._placeholders[spec.key] = placeholder
            earlier = VIEWS[: VIEWS.index(spec)]
            position = sum(1 for s in earlier if s.key in self._placeholders or s.key == TIMELINE)
            self.tabs.insertTab(position, placeholder, spec.title)
        self.tabs.currentChanged.connect(self._on_tab_shown)

    def import_first_view_modules(self) -> None:
        """The first view's modules, imported in a worker while the profile loads (once)."""
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
        if self._others_imported or self.trace is None or not self.painted:
            return
        self._others_imported = True
        self._import_views_in_worker(None)

    def _on_tab_shown(self, index: int) -> None:
        key = next((k for k, page in self._placeholders.items() if page is self.tabs.widget(index)), None)
        if key is not None:
            self._make_view(key)

    def _make_view(self, key: str) -> QWidget:
        """Makes view `key` in place of its tab's empty page (its module imported here if no worker
        did yet), wired to the router, and shows it the hub's trace if one is loaded already."""
        spec = next(s for s in VIEWS if s.key == key)
        view_class = spec.load()
        placeholder = self._placeholders.pop(key)
        if view_class is None:  # the module went missing since the tabs were added
            self.tabs.removeTab(self.tabs.indexOf(placeholder))
            placeholder.deleteLater()
            raise KeyError(key)
        view = view_class(self.hub, self._host)
        view.highlightRequested.connect(self.highlight_events)
        view.zoomRequested.connect(self.zoom_timeline)
        view.trackRequested.connect(self.timeline.scroll_to_track)
        view.openRequested.connect(self.open_view)
        view.eventPicked.connect(self.details.show_event)
        view.opsOutlined.connect(self.outline_ops)
        view.queryTracksChanged.connect(self.timeline.set_query_tracks)
        view.occurrenceShown.connect(self.show_occurrence)
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

    # ----- pages added later: Compare, History, the Pod tab ---------------------------------------

    def add_view(self, key: str, view: QWidget, title: str) -> None:
        """A view made elsewhere (Compare, History) as the last tab, named `key`: after the registry's
        tabs, which are added first if they are not there yet (`tpuscope --compare` at start). It
        belongs to the profile shown: opening another closes it (`close_view`)."""
        self.add_view_tabs()
        self._views[key] = view
        self.titles[key] = title
        self.tabs.addTab(view, title)
        if key not in self._added:
            self._added.append(key)

    def close_view(self, key: str) -> None:
        """Closes the page `add_view` added as `key` (its background work waited for); nothing when
        there is none."""
        if key not in self._added:
            return
        self._added.remove(key)
        view = self._views.pop(key, None)
        self.titles.pop(key, None)
        if view is None:
            return
        self.tabs.removeTab(self.tabs.indexOf(view))
        shutdown = getattr(view, "shutdown", None)
        if callable(shutdown):
            shutdown()
        view.setParent(None)  # out of the window at once, deleted when control returns to the loop
        view.deleteLater()

    def add_page(self, page: QWidget, title: str, index: int = -1) -> None:
        """A page that is no named view (the Pod tab), at tab `index` (-1: last)."""
        self.tabs.insertTab(index, page, title)

    def remove_page(self, page: QWidget) -> None:
        self.tabs.removeTab(self.tabs.indexOf(page))

    def bring_to_front(self, page: QWidget) -> None:
        """Shows the tabs (not the welcome page) with `page` in front."""
        self.stack.setCurrentWidget(self.tabs)
        self.tabs.setCurrentWidget(page)

    # ----- what is shown ------------------------------------------------------------------------

    def show_result(self, result: LoadResult, view: str | None = None, keep_pages: bool = False) -> None:
        """Shows a loaded profile in every view: the timeline at once, the analyses as they finish;
        `view` is the tab brought to the front (default the Overview: issue 7), the only view made now
        (`tpuscope screenshot --view timeline` makes no Overview). Nothing of the profile shown before
        stays (`_forget_the_shown_profile`); `keep_pages`: the pages `add_view` added stay open (the
        profile comes from one of them, Compare's BASE)."""
        trace = result.trace
        self._forget_the_shown_profile(keep_pages)
        self.trace = trace
        self.selected_range = None
        self.path = result.path
        self.timeline.set_trace(trace, result.lod, None, result.colours)
        self.search.set_trace(trace)
        self.notice.show_messages(trace.load_warnings)
        self._status_head = (
            f"{short_name(result.path)}: {trace.event_count:,} events, "
            f"{len(trace.planes)} planes, {len(trace.hosts)} host(s)"
        )
        self._status_clocks = _clock_words(result)
        self.say(self._status_head + self._status_clocks)
        self.add_view_tabs()
        self.hub.set_analysis(result.analysis)
        self.stack.setCurrentWidget(self.tabs)
        shown = (view,) if view is not None else FIRST_VIEWS
        first = next(key for key in (*shown, TIMELINE) if self.has_view(key))
        self.show(first)  # the timeline takes the keys (W/A/S/D work at once)
        self.resultShown.emit(result)

    def show_no_trace(self) -> None:
        """Empties every view: a pod page shows before any host's events are loaded."""
        self._forget_the_shown_profile(keep_pages=False)
        self.trace = None
        self.selected_range = None
        self.path = None
        self.timeline.set_trace(None)
        self.search.set_trace(None)
        self.notice.show_messages([])
        self.say("")  # the status line named the profile shown
        self.hub.set_trace(None)

    def _forget_the_shown_profile(self, keep_pages: bool) -> None:
        """What the window shows of a profile outside its views, emptied before another is shown (the
        views reset themselves when the hub shows the new trace: `View.reset`): the Details dock, the
        ops outlined (their names are the old profile's), and, unless `keep_pages`, the pages
        `add_view` added (Compare and History were about the profile shown)."""
        self.details.clear_details()
        if self._outlined_ops:
            self.outline_ops(set())
        if not keep_pages:
            for key in list(self._added):
                self.close_view(key)

    def shown_result(self) -> LoadResult | None:
        """The profile shown, as its loader made it (its analyses too: a comparison reuses them)."""
        from tpuscope.ui.loader import LoadResult

        if self.trace is None or self.path is None or self.timeline.lod is None or self.hub.analysis is None:
            return None
        return LoadResult(self.path, self.trace, self.timeline.lod, self.hub.analysis, self.timeline.colours)

    def say(self, text: str) -> None:
        """The status line."""
        self.status_label.setText(text)

    def show_notices(self, messages: list[str]) -> None:
        """What of the profile shown could not be read, in the bar above the tabs ([] hides it)."""
        self.notice.show_messages(messages)

    def set_window_title(self, title: str) -> None:
        self._host.setWindowTitle(title)

    def _on_steps(self, steps: Steps) -> None:
        """The step band on the timeline and the step count in the status line, once steps are found."""
        self.timeline.set_steps(steps)
        if len(steps):
            self.say(f"{self._status_head}, {len(steps)} steps{self._status_clocks}")

    # ----- routing between views ------------------------------------------------------------------

    def show(self, key: str) -> bool:
        """Brings tab `key` to the front; False when this build has no such view."""
        view = self.views.get(key)
        if view is None:
            return False
        self.tabs.setCurrentWidget(view)
        if key == TIMELINE:
            self.timeline.setFocus()  # W/A/S/D work at once after Ctrl+2 or a click that led here
        return True

    def open_view(self, key: str, target: object = None) -> None:
        """Brings view `key` to the front (first, so a view that fills when shown has begun) and
        selects `target` there (a view's `openRequested`)."""
        from tpuscope.ui.views import View  # loaded with the views, after the first paint

        if self.show(key) and target is not None:
            view = self.views[key]
            if isinstance(view, View):
                view.select(target)

    def open_graph(self, name: str, program_id: int | None) -> None:
        """The Graph view around op `name` (the Details dock's "Show in graph")."""
        from tpuscope.ui.views import OpGraphAt  # loaded with the views, after the first paint

        self.open_view("graph", OpGraphAt(name, program_id))

    def highlight_events(self, matches: list[tuple[Track, np.ndarray]], source: object = None) -> None:
        """Outlines events picked in another view on the timeline.

        It neither switches tabs nor moves the timeline: views highlight when
        the user selects something there, and the user's place must not jump.
        zoomRequested does both.
        """
        import numpy as np

        from tpuscope.ui.timeline.view import PICKED_LAYER

        matches = [(t, np.asarray(i)) for t, i in matches if len(i)]
        self.timeline.set_highlight(matches, PICKED_LAYER)
        source = source if source is not None else self.sender()
        title = next((self.titles[k] for k, v in self._views.items() if v is source), "another view")
        count = sum(len(i) for _, i in matches)
        if count:
            self._host.statusBar().showMessage(
                f"{count:,} events outlined on the timeline, picked in {title} (Esc on the timeline clears).",
                OUTLINE_MESSAGE_MS,
            )

    def outline_events_at(self, matches: list[tuple[Track, np.ndarray]], t0_ps: int, t1_ps: int) -> None:
        """Shows the timeline outlining `matches` (scrolled to the first one's track), zoomed to t0..t1."""
        from tpuscope.ui.timeline.view import PICKED_LAYER

        if matches:
            self.timeline.set_highlight(matches, PICKED_LAYER)
            self.timeline.scroll_to_track(matches[0][0])
        self.zoom_timeline(t0_ps, t1_ps)

    def outline_ops(self, names: set[str]) -> None:
        """Marks the ops named (picked in one view, e.g. a source line's) in every view listing ops."""
        from tpuscope.ui.views import View  # loaded with the views, after the first paint

        self._outlined_ops = set(names)  # for the views made later
        for view in self._views.values():
            if isinstance(view, View):
                view.outline_ops(names)

    def zoom_timeline(self, t0_ps, t1_ps) -> None:
        self.show(TIMELINE)
        self.timeline.zoom_to_range(float(t0_ps), float(t1_ps), margin=0.0)

    def show_occurrence(self, track: Track, index: int, t0_ps, t1_ps) -> None:
        """One occurrence stepped to in a view (Previous/Next): the timeline's selected event (drawn
        apart from the op's other, outlined occurrences) and moved there, and the event in Details,
        without leaving the view the user steps in (issue 37); the Timeline tab shows it when chosen."""
        self.timeline.zoom_to_range(float(t0_ps), float(t1_ps), margin=0.0)
        self.timeline.scroll_to_track(track)
        self.timeline.select_event(track, index)  # eventSelected: Details follows

    def show_event_details(self, track: Track | None, index: int) -> None:
        if track is None:
            self.details.clear_details()
        else:
            self.details.show_event(track, index)

    def jump_to_event(self, track: Track, index: int) -> None:
        """The other end of a flow: select it, zoom to it and show its details."""
        self.show(TIMELINE)
        self.timeline.scroll_to_track(track)
        self.timeline.zoom_to_event(track, index)
        self.timeline.select_event(track, index)
        self.details.show_event(track, index)

    def summarize_range(self, t0_ps: float, t1_ps: float) -> None:
        """Summarizes the range in a worker: over millions of events it takes seconds."""
        self.selected_range = (int(t0_ps), int(t1_ps))
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
        if run is not None and self.show("query"):
            run(query)

    def focus_search(self) -> None:
        """View > Find: the timeline's search box, its text selected."""
        self.show(TIMELINE)
        self.search.line.setFocus()
        self.search.line.selectAll()

    def _on_matches(self, results: SearchResults) -> None:
        from tpuscope.ui.timeline.view import SEARCH_LAYER

        self.timeline.set_highlight_lods(results.outlines, SEARCH_LAYER)

    def _on_current_match(self, track: Track, index: int) -> None:
        self.timeline.select_event(track, index)
        self.timeline.zoom_to_event(track, index)

    # ----- closing ------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Waits for every worker thread of the views (before the window closes)."""
        for job in self._view_imports:
            job.wait()
        if not self._body_built:
            return  # nothing else ever ran
        self.search.shutdown()
        self.jobs.wait()
        self.details.wait_for_code()
        self.hub.wait(deliver=False)
        for view in self._views.values():  # views never made have nothing to wait for
            shutdown = getattr(view, "shutdown", None)
            if callable(shutdown):
                shutdown()


def short_name(path: Path | str) -> str:
    """The last part of a path or URL, for the title bar and the status line."""
    return path.rstrip("/").rsplit("/", 1)[-1] if isinstance(path, str) else path.name


def _clock_words(result: LoadResult) -> str:
    """ "; clocks aligned: worker2 -1.3 ms" when the load moved hosts onto the others' clock."""
    from tpuscope.analysis.pod.clocks import APPLIED_SHIFTS
    from tpuscope.model.clock_shift import describe_shifts

    if not result.analysis.has(APPLIED_SHIFTS):
        return ""
    words = describe_shifts(result.analysis.get(APPLIED_SHIFTS))
    return f"; {words}" if words else ""


class _ViewsByKey(MutableMapping[str, QWidget]):
    """`ViewRouter.views`: the tabs by key; looking a view up makes it if its tab has not been shown
    yet (iterating lists the keys without making anything)."""

    def __init__(self, router: ViewRouter):
        self._router = router

    def _keys(self) -> list[str]:
        router = self._router
        keys = [s.key for s in VIEWS if router.has_view(s.key)]
        return keys + [k for k in router._views if k not in keys]

    def __getitem__(self, key: str) -> QWidget:
        router = self._router
        if key in router._views:
            return router._views[key]
        if key in router._placeholders:
            return router._make_view(key)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._router.has_view(key)

    def __setitem__(self, key: str, view: QWidget) -> None:
        self._router._views[key] = view

    def __delitem__(self, key: str) -> None:
        del self._router._views[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())
