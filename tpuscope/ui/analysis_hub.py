"""The window's handle on the current trace's analyses: computed off the UI thread, shared by the views.

One `AnalysisHub` per window holds the `TraceAnalysis` of the trace on screen. A view says which
results it shows (`subscribe`) or asks for one when it needs it (`request`); the hub computes each
result once, in a worker thread, and calls every view waiting for it on the UI thread. When a new
trace is set, results still on their way for the old one are dropped as they arrive (each request
carries the hub's generation, as the window's loads do, after KDAB Hotspot's `src/jobtracker.h`),
so a slow analysis of the previous file can never show up in a view of the new one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from PySide6.QtCore import QCoreApplication, QObject, Signal

from tpuscope.analysis.session import Result, TraceAnalysis
from tpuscope.model.trace import Trace
from tpuscope.ui.jobs import Job

log = logging.getLogger(__name__)
T = TypeVar("T")
OnReady = Callable[[Any], None]
OnFailed = Callable[[Exception], None]


class AnalysisHub(QObject):
    """Results of the current trace for the views; see the module docstring."""

    traceChanged = Signal(object)  # the new Trace, or None: views clear and wait for their results
    resultReady = Signal(str, object)  # (result name, value), after its subscribers were called
    # No worker computes any more: every result asked for reached its views (the window then imports
    # the modules of the views not on screen, off the critical path of the first picture).
    idle = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.analysis: TraceAnalysis | None = None
        self.generation = 0
        self._subscriptions: list[tuple[Result[Any], OnReady, OnFailed | None]] = []
        self._waiting: dict[str, list[tuple[OnReady, OnFailed | None]]] = {}  # in flight, this generation
        self._running: set[Job] = set()

    @property
    def trace(self) -> Trace | None:
        return self.analysis.trace if self.analysis is not None else None

    def set_trace(self, trace: Trace | None) -> None:
        """Shows `trace` (None: nothing) in every view of this hub, with fresh analyses."""
        self.set_analysis(TraceAnalysis(trace) if trace is not None else None)

    def set_analysis(self, analysis: TraceAnalysis | None) -> None:
        """Like `set_trace`, with analyses that may be partly computed already (the loader's)."""
        self.generation += 1
        self.analysis = analysis
        self._waiting.clear()
        self.traceChanged.emit(self.trace)
        for result, on_ready, on_failed in list(self._subscriptions):
            self.request(result, on_ready, on_failed)

    def subscribe(self, result: Result[T], on_ready: Callable[[T], None], on_failed: OnFailed | None = None):
        """Calls `on_ready(value)` with `result` of every trace this hub shows (now and later)."""
        self._subscriptions.append((result, on_ready, on_failed))
        self.request(result, on_ready, on_failed)

    def request(self, result: Result[T], on_ready: Callable[[T], None], on_failed: OnFailed | None = None):
        """Calls `on_ready(value)` once with `result` of the current trace: at once when it is computed
        already, else on the UI thread when a worker has computed it; never when the trace changed
        first. Without `on_failed` an error is logged and the view keeps waiting."""
        analysis = self.analysis
        if analysis is None:
            return
        if analysis.has(result):
            on_ready(analysis.get(result))
            return
        waiting = self._waiting.get(result.name)
        if waiting is not None:  # already being computed: one more view to tell
            waiting.append((on_ready, on_failed))
            return
        self._waiting[result.name] = [(on_ready, on_failed)]
        # No parent: a job must outlive a hub deleted while the job's own deletion is still queued.
        job = Job(self.generation, lambda: _compute(analysis, result))
        job.done.connect(self._deliver)
        job.finished.connect(lambda j=job: self._forget(j))
        self._running.add(job)
        job.start()

    def is_busy(self) -> bool:
        """Whether any worker is still computing (for this trace or an older one)."""
        return bool(self._running)

    def wait(self, deliver: bool = True) -> None:
        """Blocks until no worker runs; with `deliver`, also until every result reached its views
        (results that make views ask for more are waited for too). For tests, screenshots and closing."""
        while self._running:
            for job in list(self._running):
                job.wait()
            if not deliver:
                return
            QCoreApplication.processEvents()

    def _forget(self, job: Job) -> None:
        self._running.discard(job)
        job.deleteLater()
        if not self._running:
            self.idle.emit()

    def _deliver(self, generation: int, payload: tuple[str, Any, Exception | None]) -> None:
        name, value, error = payload  # what `_compute` returns
        if generation != self.generation:
            return  # computed for a trace that is no longer shown
        callbacks = self._waiting.pop(name, [])
        for on_ready, on_failed in callbacks:
            if error is None:
                on_ready(value)
            elif on_failed is not None:
                on_failed(error)
            else:
                log.error("computing %s failed", name, exc_info=error)
        if error is None:
            self.resultReady.emit(name, value)


def _compute(analysis: TraceAnalysis, result: Result[Any]) -> tuple[str, Any, Exception | None]:
    """Runs in the worker: the result, or the error it raised (handed to the views, not the thread)."""
    try:
        return result.name, analysis.get(result), None
    except Exception as error:  # noqa: BLE001 - shown by the view that asked, never a crash
        return result.name, None, error
