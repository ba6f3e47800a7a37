"""What the main window knows of a tab: the `View` interface every tab but the timeline implements.

Every tab but the timeline is a `View`: a widget made from the window's `AnalysisHub`, which shows
the results it subscribes to and talks to the rest of the window only through the signals
below. The window connects them for every view alike and never asks what a view can do. A new view
is one module with a `View` subclass plus one `ViewSpec` line in `tpuscope.ui.registry.VIEWS`.

A new profile resets every view (issue 33: no view may show the last profile's names): whenever the
hub shows another trace (or none), `View.reset` runs before any slot given to `follow_trace`. The
base scrolls every scroll area of the view to its start and empties every pyqtgraph chart in it
(items, custom axis ticks such as a bar chart's op names, the user's zoom): a view made from this
base gets that without doing anything. What only the view knows (its table models, lists, labels,
combo boxes) it empties in its `follow_trace` slot, or in an override of `reset` that calls
`super().reset()`. The window resets what is not a view (the Details dock, outlined ops, the
Compare and History tabs) in `ViewRouter`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QWidget

from tpuscope.analysis.session import Result
from tpuscope.model.records import record
from tpuscope.model.trace import Trace
from tpuscope.ui.analysis_hub import AnalysisHub, OnFailed
from tpuscope.ui.widgets.reset import reset_widgets


@record(frozen=True)
class OpRow:
    """A target for the op breakdown: row `row` of the op table by op over all devices."""

    row: int


@record(frozen=True)
class OpGraphAt:
    """A target for the Graph view: the HLO graph around op `name` (in program `program_id` when given)."""

    name: str
    program_id: int | None = None


@record(frozen=True)
class FindingAt:
    """A target for the diagnostics: the finding at `position` in the diagnose report."""

    position: int


class View(QWidget):
    """A tab of the main window (see the module docstring).

    Signals carry timeline payloads and view keys, never widgets: `highlightRequested(matches)` asks
    the timeline to outline events (a list of (Track, indices)), `zoomRequested(t0_ps, t1_ps)` to
    show a time range, `trackRequested(track)` to scroll that track into view, `openRequested(key,
    target)` to bring view `key` to the front and `select` `target` there (None: just show it),
    `eventPicked(track, index)` to show one event (an op the user picked) in the Details dock,
    `opsOutlined(names)` to mark ops (by name) in every view that lists ops (`outline_ops`),
    `queryTracksChanged(tracks)` to pin these query results on the timeline (a list of `QueryTrack`),
    `occurrenceShown(track, index, t0_ps, t1_ps)` to make one event the current one (Previous/Next):
    selected on the timeline and in Details, the timeline moved to t0..t1, the tab left as it is.
    """

    highlightRequested = Signal(object)
    eventPicked = Signal(object, int)
    opsOutlined = Signal(object)
    zoomRequested = Signal(object, object)
    trackRequested = Signal(object)
    openRequested = Signal(str, object)
    queryTracksChanged = Signal(object)
    occurrenceShown = Signal(object, int, object, object)

    def __init__(self, hub: AnalysisHub | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        # A view made on its own (tests, embedding) gets a hub of its own.
        self.hub = hub if hub is not None else AnalysisHub(self)
        self._when_shown: list[tuple[Result[Any], Callable[[Any], None], OnFailed | None]] = []
        self._asked_generation = -1  # the hub generation whose `_when_shown` results were asked for
        self._trace_slots: list[Callable[[Trace | None], None]] = []
        # Connected first, so it runs before every slot the subclass connects (the module docstring).
        self.hub.traceChanged.connect(self._on_new_trace)

    def _on_new_trace(self, _trace: Trace | None) -> None:
        self.reset()

    def reset(self) -> None:
        """Forgets the previous trace's pictures before the new one is shown: every scroll area of
        this view at its start, every chart empty with automatic ticks and ranges (see the module
        docstring). An override empties the view's own state too and calls `super().reset()`."""
        reset_widgets(self)

    def follow_trace(self, slot: Callable[[Trace | None], None]) -> None:
        """Calls `slot(trace)` with every trace the hub shows from now on (its `traceChanged`), and, in
        `catch_up`, with the one it shows already: the window makes a tab's view when the tab is first
        shown, usually after a profile was loaded."""
        self.hub.traceChanged.connect(slot)
        self._trace_slots.append(slot)

    def catch_up(self) -> None:
        """Shows the hub's trace in this view made after the hub was given it (what `traceChanged`
        would have done); its results are asked for when it is shown, as for any view."""
        if self.hub.analysis is not None:
            for slot in self._trace_slots:
                slot(self.hub.trace)

    def subscribe_when_shown(
        self, result: Result[Any], on_ready: Callable[[Any], None], on_failed: OnFailed | None = None
    ) -> None:
        """Like `hub.subscribe`, but asks for `result` of each trace only once this view is on screen.

        A tab nobody has opened does not compete for the workers with the one the user looks at:
        after a load the first tab's results come first, and a hidden tab asks when it is opened
        (getting the result at once when another view already had it computed)."""
        if not self._when_shown:
            self.hub.traceChanged.connect(self._ask_if_shown)
        self._when_shown.append((result, on_ready, on_failed))
        self._ask_if_shown()

    def _ask_if_shown(self, _trace: object = None) -> None:
        if not self.isVisible() or self._asked_generation == self.hub.generation:
            return
        self._asked_generation = self.hub.generation
        for result, on_ready, on_failed in self._when_shown:
            self.hub.request(result, on_ready, on_failed)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._when_shown:
            self._ask_if_shown()

    def set_trace(self, trace: Trace | None) -> None:
        """Shows `trace` in this view and every other view sharing its hub."""
        self.hub.set_trace(trace)

    def select(self, target: object) -> None:
        """Selects `target` (an `OpRow`, a `FindingAt`, ...) if this view shows such things."""

    def outline_ops(self, names: set[str]) -> None:
        """Marks the ops named (another view's `opsOutlined`) if this view lists ops."""

    def shutdown(self) -> None:
        """Waits for this view's background work (call before the window closes)."""
        self.hub.wait(deliver=False)
