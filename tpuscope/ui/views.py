"""What the main window knows of a tab: the `View` interface every tab but the timeline implements.

Every tab but the timeline is a `View`: a widget made from the window's `AnalysisHub`, which shows
the results it subscribes to and talks to the rest of the window only through the signals
below. The window connects them for every view alike and never asks what a view can do. A new view
is one module with a `View` subclass plus one `ViewSpec` line in `tpuscope.ui.registry.VIEWS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QWidget

from tpuscope.model.trace import Trace
from tpuscope.ui.analysis_hub import AnalysisHub


@dataclass(frozen=True)
class OpRow:
    """A target for the op breakdown: row `row` of the op table by op over all devices."""

    row: int


@dataclass(frozen=True)
class FindingAt:
    """A target for the diagnostics: the finding at `position` in the diagnose report."""

    position: int


class View(QWidget):
    """A tab of the main window (see the module docstring).

    Signals carry timeline payloads and view keys, never widgets: `highlightRequested(matches)` asks
    the timeline to outline events (a list of (Track, indices)), `zoomRequested(t0_ps, t1_ps)` to
    show a time range, `trackRequested(track)` to scroll that track into view, `openRequested(key,
    target)` to bring view `key` to the front and `select` `target` there (None: just show it).
    """

    highlightRequested = Signal(object)
    zoomRequested = Signal(object, object)
    trackRequested = Signal(object)
    openRequested = Signal(str, object)

    def __init__(self, hub: AnalysisHub | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        # A view made on its own (tests, embedding) gets a hub of its own.
        self.hub = hub if hub is not None else AnalysisHub(self)

    def set_trace(self, trace: Trace | None) -> None:
        """Shows `trace` in this view and every other view sharing its hub."""
        self.hub.set_trace(trace)

    def select(self, target: object) -> None:
        """Selects `target` (an `OpRow`, a `FindingAt`, ...) if this view shows such things."""

    def shutdown(self) -> None:
        """Waits for this view's background work (call before the window closes)."""
        self.hub.wait(deliver=False)
