"""The main window's handle on a run of many hosts: the pod page first, one host's trace at a time.

The window's loader runs `work` (`pod_open.open_profile`): a run of POD_PAGE_MIN_HOSTS host files or
more comes back as a `PodResult` (the light pass's summaries) and `accept` shows it on the Pod tab,
with every other tab emptied. Each host's full diagnosis then runs in the background on the same
worker processes (`HostDiagnosis`), the page filling in its findings as hosts come in; the page's
Stop button, another profile opened, or the window closing stops it (the workers are terminated).
Opening a host loads that host's file through the window's load controller (progress,
Cancel, the hub and its views); when it arrives, it replaces the host shown before, whose trace is
then collected, so the window holds the summaries plus one host's trace (two only while the next
host loads: a host that fails to load leaves the page and the host shown as they were, with the
window's one-sentence dialog). Any other profile opened closes the Pod tab.

It reaches the window only through the public APIs of its view router (tabs, the views, the status
line) and load controller (opening, recent files, failures).
"""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QThread, Signal

from tpuscope.analysis.facts.evidence import evidence_events
from tpuscope.app.hosts import HostOutcome, pass_over
from tpuscope.errors import LoadCancelled, ProfileError
from tpuscope.model._kernels import return_freed_memory_to_os
from tpuscope.model.records import record
from tpuscope.store import pod_results
from tpuscope.ui.loader import LoadResult
from tpuscope.ui.pod.open_run import PodResult, open_profile
from tpuscope.ui.registry import TIMELINE

if TYPE_CHECKING:
    from tpuscope.ui.load_controller import LoadController
    from tpuscope.ui.pod.page import PodPage
    from tpuscope.ui.view_router import ViewRouter

POD_TITLE = "Pod"
REFRESH_S = 0.5  # the page's findings are recombined at most this often while hosts come in
RECOMBINE_SHARE_INVERSE = 5  # ... and at most a fifth of the time (256 hosts: ~0.9 s a recombine)
STOP_WAIT_MS = 10_000  # how long closing waits for the stopped diagnosis thread (it stops in ~0.1 s)


class HostDiagnosis(QThread):
    """Each summarized host's full diagnosis, on the result's worker pool; the pod recombined as hosts
    come in (here, off the UI thread) and `updated` emitted, throttled to REFRESH_S."""

    updated = Signal()

    def __init__(self, result: PodResult, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.result = result
        self.stopping = False
        self.stopped = False  # stopped before every host was diagnosed
        self.error: str | None = None
        self._next = 0.0  # when the pod may be recombined next

    def stop(self) -> None:
        self.stopping = True

    def run(self) -> None:
        result, pool = self.result, self.result.pool
        try:
            if pool is not None and result.to_diagnose:
                pass_over(
                    pool,
                    result.files,
                    pod_results.FULL,
                    lambda: self.stopping,
                    self._take,
                    result.to_diagnose,
                )
        except LoadCancelled:
            self.stopped = True
        except ProfileError as error:  # the Dask cluster went away: the summaries stay
            self.error = str(error)
            self.stopped = True
        finally:
            result.close()
        if not self.stopped:
            result.recombine()
        self.updated.emit()

    def _take(self, outcome: HostOutcome) -> None:
        self.result.add(outcome)
        now = time.monotonic()
        if now >= self._next:
            self.result.recombine()
            done = time.monotonic()
            # Recombining is a pass over every host's summary: never more than a fifth of the time.
            self._next = done + max(REFRESH_S, RECOMBINE_SHARE_INVERSE * (done - now))
            self.updated.emit()


@record
class _HostRequest:
    host: str
    path: Path
    item: dict[str, Any] | None  # evidence in the host's own time, to show once it is loaded


class PodSession(QObject):
    """See the module docstring."""

    collectRequested = Signal()  # emitted by the loader thread after each host; collected here
    podShown = Signal(object)  # the PodResult on the Pod tab
    hostShown = Signal(str)  # the host whose trace the other tabs now show
    diagnosisFinished = Signal(object)  # the PodResult, every host diagnosed or the diagnosis stopped

    def __init__(self, router: ViewRouter, loads: LoadController, parent: QObject | None = None):
        super().__init__(parent)
        self.router = router
        self.loads = loads
        self.result: PodResult | None = None
        self.page: PodPage | None = None
        self.open_host_label: str | None = None
        self._pending: _HostRequest | None = None
        self.diagnosis: HostDiagnosis | None = None
        self.collectRequested.connect(_collect)
        loads.loadFailed.connect(self._on_load_failed)

    def work(self, path: Path | str, progress) -> LoadResult | PodResult:
        """What the window's loader thread runs for `path`."""
        return open_profile(path, progress, self.collectRequested.emit)

    def accept(self, result: LoadResult | PodResult) -> bool:
        """Takes a loaded result when it is a pod or a host of the pod shown; False: the window shows it
        (and the Pod tab closes)."""
        if isinstance(result, PodResult):
            self._show(result)
            return True
        pending = self._pending
        if pending is not None and _same(result.path, pending.path):
            self._pending = None
            self.router.show_result(result)
            self._show_host(result, pending)
            return True
        self.close()
        return False

    def close(self) -> None:
        """Drops the pod (its tab and summaries), stopping its diagnosis."""
        self.stop_diagnosis(wait=True)
        self.diagnosis = None  # its last signals, still queued, are dropped
        if self.page is None:
            return
        self.router.remove_page(self.page)
        self.page.deleteLater()
        self.page = self.result = None
        self.open_host_label = None
        self._pending = None

    # ----- the pod page ----------------------------------------------------------------------------

    def _show(self, result: PodResult) -> None:
        self.close()
        router = self.router
        router.show_no_trace()  # the previous profile's events go before the pod page shows
        self.result = result
        from tpuscope.ui.pod.page import PodPage  # its heat map's charts: not before the first paint

        self.page = PodPage(result)  # the router's tabs take it
        self.page.hostRequested.connect(self.open_host)
        router.add_page(self.page, POD_TITLE, index=0)
        router.bring_to_front(self.page)
        router.show_notices(result.unreadable)
        name = _short_name(result.path)
        router.say(
            f"{name}: {len(result.hosts)} hosts summarized host by host, {result.run.event_count:,} events; "
            "open a host to load its events"
        )
        router.set_window_title(f"{name} (pod) - tpuscope")
        router.path = result.path
        self.loads.add_recent(result.path)
        _collect()
        self.podShown.emit(result)
        self._start_diagnosis(result)

    # ----- the full diagnosis, in the background ---------------------------------------------------

    def _start_diagnosis(self, result: PodResult) -> None:
        page = self.page
        if not result.to_diagnose or result.pool is None:
            if page is not None:
                page.show_diagnosis("done")
            self.diagnosisFinished.emit(result)
            return
        thread = HostDiagnosis(result, self)
        thread.updated.connect(lambda t=thread: self._on_diagnosis_update(t))
        thread.finished.connect(lambda t=thread: self._on_diagnosis_finished(t))
        self.diagnosis = thread
        if page is not None:
            page.stopRequested.connect(self.stop_diagnosis)
            page.show_diagnosis("running", result.pool.where)
        thread.start()

    def stop_diagnosis(self, wait: bool = False) -> None:
        """Stops the full diagnosis (its workers are terminated); the summaries and the hosts already
        diagnosed stay on the page."""
        thread = self.diagnosis
        if thread is None:
            return
        thread.stop()
        if wait:
            thread.wait(STOP_WAIT_MS)

    def shutdown(self) -> None:
        """Before the window closes: the diagnosis stopped and its thread done."""
        self.stop_diagnosis(wait=True)

    def _on_diagnosis_update(self, thread: HostDiagnosis) -> None:
        if thread is self.diagnosis and self.page is not None:
            self.page.refresh()
            pool = thread.result.pool
            self.page.show_diagnosis("running", pool.where if pool is not None else "")

    def _on_diagnosis_finished(self, thread: HostDiagnosis) -> None:
        if thread is not self.diagnosis:
            thread.deleteLater()
            return
        self.diagnosis = None
        thread.deleteLater()
        if self.page is not None:
            self.page.refresh()
            self.page.show_diagnosis("stopped" if thread.stopped else "done", error=thread.error)
            if thread.result.unreadable:
                self.router.show_notices(thread.result.unreadable)
        self.diagnosisFinished.emit(thread.result)

    def open_host(self, host: str, item: dict[str, Any] | None = None) -> None:
        """Loads `host`'s file through the window's load controller; `item` (host time) is shown when it
        is in."""
        if self.result is None:
            return
        found = self.result.host(host)
        if found is None:
            return
        self._pending = _HostRequest(host, Path(found.source), item)
        self.loads.open_path(found.source)

    def _show_host(self, result: LoadResult, request: _HostRequest) -> None:
        router = self.router
        self.open_host_label = request.host
        if self.page is not None:
            self.page.set_open_host(request.host)
        name = _short_name(self.result.path) if self.result is not None else ""
        router.set_window_title(f"{request.host} of {name} (pod) - tpuscope")
        router.show(TIMELINE)
        item = request.item
        if item is not None:
            trace = result.trace
            if len(trace.hosts) == 1:  # the pod's label of a host can differ from the name in its file
                item = dict(item, host=trace.hosts[0])
            start = int(item["start_ps"])
            end = max(int(item["end_ps"]), start + 1)
            router.outline_events_at(evidence_events(trace, [item]), start, end)
        _collect()  # the host shown before: its planes and tracks refer to each other
        self.hostShown.emit(request.host)

    def _on_load_failed(self, _message: str) -> None:
        self._pending = None


def _collect() -> None:
    """A full collection on the UI thread (automatic collection is off: tpuscope.gc_policy), and the
    freed heap handed back to the OS, so RSS shows what the window holds, not the hosts already let go."""
    gc.collect()
    return_freed_memory_to_os()


def _same(a: Path | str, b: Path | str) -> bool:
    try:
        return Path(str(a)).resolve() == Path(str(b)).resolve()
    except OSError:
        return str(a) == str(b)


def _short_name(path: Path | str) -> str:
    return str(path).rstrip("/").rsplit("/", 1)[-1]
