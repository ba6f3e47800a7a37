"""Opening a run of many hosts as a pod summary: what the loader thread does before any host's events.

From POD_PAGE_MIN_HOSTS host files on (the CLI's MANY_HOSTS), a run is not loaded into one trace:
each host file is opened alone, summarized (`tpuscope.per_host.analyze_hosts`, the CLI's
`--per-host`) and dropped before the next, so the window holds only the small summaries until the
user opens one host. Smaller runs and single files load as before (`loader.prepare`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tpuscope.analysis.pod_run import MANY_HOSTS, HostResult, PodRun
from tpuscope.errors import LoadCancelled
from tpuscope.per_host import analyze_hosts
from tpuscope.runs import host_file_count, host_files
from tpuscope.ui.loader import LoadResult, prepare
from tpuscope.urls import is_url

POD_PAGE_MIN_HOSTS = MANY_HOSTS
# A bucket's run: downloading reports this share of the progress, the summaries the rest.
DOWNLOAD_SHARE = 0.5


@dataclass
class PodResult:
    """A run summarized host by host: no host's events, only what comparing the hosts needs."""

    path: Path | str  # what the user opened: run folder, logdir or URL
    run: PodRun
    unreadable: list[str] = field(default_factory=list)  # one sentence per host file left out

    @property
    def hosts(self) -> list[str]:
        return [h.host for h in self.run.hosts]

    def host(self, label: str) -> HostResult | None:
        return next((h for h in self.run.hosts if h.host == label), None)

    def offset_ps(self, label: str) -> int:
        """How far `label`'s own time origin is after the run's: run times minus this are the host's."""
        origin = min(h.origin_ns for h in self.run.hosts)
        found = self.host(label)
        return 0 if found is None else (found.origin_ns - origin) * 1000


def open_profile(
    path: Path | str, progress=None, collect: Callable[[], None] | None = None
) -> LoadResult | PodResult:
    """`prepare(path)`, or the pod summary when the run has POD_PAGE_MIN_HOSTS host files or more.

    `collect()` is called after each host (it asks the UI thread to collect the host's garbage:
    a trace's planes and tracks refer to each other, and only the UI thread may run the collector).
    """
    if host_file_count(path) < POD_PAGE_MIN_HOSTS:
        return prepare(path, progress)
    remote = is_url(path)
    share = DOWNLOAD_SHARE if remote else 0.0

    def fetching(fraction: float, message: str):
        return progress(share * fraction, message) if progress is not None else None

    files = host_files(path, progress=fetching if remote else None)
    last = [-1]

    def summarizing(done: float, total: int, name: str):
        if int(done) != last[0]:
            last[0] = int(done)
            if collect is not None and done > 0:
                collect()
        if progress is None:
            return None
        host = min(int(done) + 1, total)
        fraction = share + (1.0 - share) * done / max(total, 1)
        return progress(fraction, f"summarizing host {host} of {total}: {Path(name).name}")

    unreadable: list[str] = []
    run = analyze_hosts(files, progress=summarizing, unreadable=unreadable)
    if collect is not None:
        collect()
    if progress is not None and progress(1.0, "pod summary ready") is False:
        raise LoadCancelled()
    return PodResult(path if remote else Path(path), run, unreadable)
