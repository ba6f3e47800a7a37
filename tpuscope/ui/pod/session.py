"""The main window's handle on a run of many hosts: the pod page first, one host's trace at a time.

The window's loader runs `work` (`pod_open.open_profile`): a run of POD_PAGE_MIN_HOSTS host files or
more comes back as a `PodResult` (summaries only) and `accept` shows it on the Pod tab, with every
other tab emptied. Opening a host loads that host's file through the window's usual load (progress,
Cancel, the hub and its views); when it arrives, it replaces the host shown before, whose trace is
then collected, so the window holds the summaries plus one host's trace (two only while the next
host loads: a host that fails to load leaves the page and the host shown as they were, with the
window's one-sentence dialog). Any other profile opened closes the Pod tab.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from tpuscope.analysis.facts.evidence import evidence_events
from tpuscope.model._kernels import return_freed_memory_to_os
from tpuscope.ui.loader import LoadResult
from tpuscope.ui.pod.open_run import PodResult, open_profile
from tpuscope.ui.registry import TIMELINE
from tpuscope.ui.timeline.view import PICKED_LAYER

if TYPE_CHECKING:
    from tpuscope.ui.main_window import MainWindow
    from tpuscope.ui.pod.page import PodPage

POD_TITLE = "Pod"


@dataclass
class _HostRequest:
    host: str
    path: Path
    item: dict[str, Any] | None  # evidence in the host's own time, to show once it is loaded


class PodSession(QObject):
    """See the module docstring."""

    collectRequested = Signal()  # emitted by the loader thread after each host; collected here
    podShown = Signal(object)  # the PodResult on the Pod tab
    hostShown = Signal(str)  # the host whose trace the other tabs now show

    def __init__(self, window: MainWindow):
        super().__init__(window)
        self.window = window
        self.result: PodResult | None = None
        self.page: PodPage | None = None
        self.open_host_label: str | None = None
        self._pending: _HostRequest | None = None
        self.collectRequested.connect(_collect)
        window.loadFailed.connect(self._on_load_failed)

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
            self.window.set_result(result)
            self._show_host(result, pending)
            return True
        self.close()
        return False

    def close(self) -> None:
        """Drops the pod (its tab and summaries)."""
        if self.page is None:
            return
        tabs = self.window.tabs
        tabs.removeTab(tabs.indexOf(self.page))
        self.page.deleteLater()
        self.page = self.result = None
        self.open_host_label = None
        self._pending = None

    # ----- the pod page ----------------------------------------------------------------------------

    def _show(self, result: PodResult) -> None:
        self.close()
        window = self.window
        window.show_no_trace()  # the previous profile's events go before the pod page shows
        self.result = result
        from tpuscope.ui.pod.page import PodPage  # its heat map's charts: not before the first paint

        self.page = PodPage(result, window)
        self.page.hostRequested.connect(self.open_host)
        window.tabs.insertTab(0, self.page, POD_TITLE)
        window.stack.setCurrentWidget(window.tabs)
        window.tabs.setCurrentWidget(self.page)
        window.notice.show_messages(result.unreadable)
        name = _short_name(result.path)
        window.status_label.setText(
            f"{name}: {len(result.hosts)} hosts summarized host by host, {result.run.event_count:,} events; "
            "open a host to load its events"
        )
        window.setWindowTitle(f"{name} (pod) - tpuscope")
        window.path = result.path
        window._add_recent(str(result.path))
        _collect()
        self.podShown.emit(result)

    def open_host(self, host: str, item: dict[str, Any] | None = None) -> None:
        """Loads `host`'s file through the window's load; `item` (host time) is shown when it is in."""
        if self.result is None:
            return
        found = self.result.host(host)
        if found is None:
            return
        self._pending = _HostRequest(host, Path(found.source), item)
        self.window.open_path(found.source)

    def _show_host(self, result: LoadResult, request: _HostRequest) -> None:
        window = self.window
        self.open_host_label = request.host
        if self.page is not None:
            self.page.set_open_host(request.host)
        name = _short_name(self.result.path) if self.result is not None else ""
        window.setWindowTitle(f"{request.host} of {name} (pod) - tpuscope")
        window.show_view(TIMELINE)
        item = request.item
        if item is not None:
            trace = result.trace
            if len(trace.hosts) == 1:  # the pod's label of a host can differ from the name in its file
                item = dict(item, host=trace.hosts[0])
            matches = evidence_events(trace, [item])
            if matches:
                window.timeline.set_highlight(matches, PICKED_LAYER)
                window.timeline.scroll_to_track(matches[0][0])
            start = int(item["start_ps"])
            window.zoom_timeline(start, max(int(item["end_ps"]), start + 1))
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
