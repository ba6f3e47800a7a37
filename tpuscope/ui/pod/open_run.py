"""Opening a run of many hosts as a pod summary: what the loader thread does before any host's events.

From POD_PAGE_MIN_HOSTS host files on (the CLI's MANY_HOSTS), a run is not loaded into one trace:
the page first shows what the light pass finds (`tpuscope.app.hosts`: each host file decoded and
summarized, on every core, then dropped), so the window holds only the small summaries until the
user opens one host; each host's full diagnosis follows in the background (`PodResult.add` takes
each host's result as it comes, `session.PodSession` runs that pass). Smaller runs and single files
load as before (`loader.prepare`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import field
from pathlib import Path

from tpuscope.analysis.pod_run import HostResult, PodRun, combine
from tpuscope.app.hosts import HostOutcome, HostPool, pass_over
from tpuscope.app.runs import host_file_count, host_files
from tpuscope.app.where import MANY_HOSTS
from tpuscope.errors import LoadCancelled, ProfileError
from tpuscope.model.records import record
from tpuscope.readers import host_from_filename
from tpuscope.store import pod_results
from tpuscope.ui.loader import LoadResult, prepare
from tpuscope.urls import is_url

POD_PAGE_MIN_HOSTS = MANY_HOSTS
# A bucket's run: downloading reports this share of the progress, the summaries the rest.
DOWNLOAD_SHARE = 0.5


@record
class PodResult:
    """A run summarized host by host: no host's events, only what comparing the hosts needs.

    `run` is the pod of every readable host's result so far: after the light pass each host's
    summary only (the pod's own findings, from comparing hosts), and as the full pass brings each
    host's diagnosis (`add`, then `recombine`), the grouped findings of the hosts diagnosed."""

    path: Path | str  # what the user opened: run folder, logdir or URL
    run: PodRun
    unreadable: list[str] = field(default_factory=list)  # one sentence per host file left out
    files: list[str] = field(default_factory=list)  # the run's host files, in order
    per_file: dict[int, list[HostResult]] = field(default_factory=dict)  # file index -> its hosts
    diagnosed: set[int] = field(default_factory=set)  # files whose hosts are fully diagnosed
    pool: HostPool | None = field(default=None, repr=False, compare=False)

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

    def add(self, outcome: HostOutcome) -> None:
        """One host file's results (or the sentence saying why it has none) into the run."""
        name = Path(self.files[outcome.index]).name if outcome.index < len(self.files) else "?"
        if outcome.error is not None:
            if outcome.index in self.per_file:  # summarized, but its full diagnosis failed
                self.unreadable.append(f"{outcome.error} (the pod page keeps {name}'s summary)")
                self.diagnosed.add(outcome.index)  # nothing more to wait for
            else:
                self.unreadable.append(outcome.error)
            return
        self.per_file[outcome.index] = outcome.results
        if outcome.kind == pod_results.FULL:
            self.diagnosed.add(outcome.index)

    def recombine(self) -> None:
        """`run` again from every host file's results so far (a pure function of them: `combine`)."""
        self.run = combine(self._results())

    def _results(self) -> list[HostResult]:
        return [r for index in sorted(self.per_file) for r in self.per_file[index]]

    @property
    def to_diagnose(self) -> list[int]:
        """The files summarized but not yet diagnosed, in order."""
        return [index for index in sorted(self.per_file) if index not in self.diagnosed]

    @property
    def diagnosed_hosts(self) -> int:
        diagnosed = tuple(self.diagnosed)  # a snapshot: the diagnosis thread adds to it
        return sum(len(self.per_file.get(i, ())) for i in diagnosed)

    def close(self) -> None:
        """Stops the workers (both passes); the summaries stay."""
        if self.pool is not None:
            self.pool.close()


def open_profile(
    path: Path | str, progress=None, collect: Callable[[], None] | None = None
) -> LoadResult | PodResult:
    """`prepare(path)`, or the pod summary when the run has POD_PAGE_MIN_HOSTS host files or more.

    `collect()` is called after each host (it asks the UI thread to collect the host's garbage:
    a trace's planes and tracks refer to each other, and only the UI thread may run the collector).
    """
    remote = is_url(path)
    missing: list[str] = []
    if remote:
        if host_file_count(path) < POD_PAGE_MIN_HOSTS:
            return prepare(path, progress)
    else:
        local = host_files(path)
        missing = _missing_host_files(local)
        if len(local) + len(missing) < POD_PAGE_MIN_HOSTS:
            return prepare(path, progress)
    share = DOWNLOAD_SHARE if remote else 0.0

    def fetching(fraction: float, message: str):
        return progress(share * fraction, message) if progress is not None else None

    pool = HostPool()
    if remote:  # the workers come up (interpreters, numpy, the readers) while the host files download
        pool.start()
    try:
        files = [str(f) for f in (host_files(path, progress=fetching) if remote else local)]
    except BaseException:
        pool.close()
        raise
    outcomes: list[HostOutcome] = []

    def cancelled() -> bool:
        if progress is None:
            return False
        fraction = share + (1.0 - share) * len(outcomes) / max(len(files), 1)
        message = f"summarizing host files on {pool.where}: {len(outcomes)} of {len(files)} done"
        return progress(fraction, message) is False

    try:
        pass_over(pool, files, pod_results.LIGHT, cancelled, outcomes.append)
        read = [o for o in sorted(outcomes, key=lambda o: o.index) if o.error is None]
        if not read:
            first = next((o.error for o in outcomes if o.error), missing[0] if missing else "no file read")
            raise ProfileError(
                path, f"none of its {len(files)} host files can be read (the first: {first.rstrip('.')})"
            )
        result = PodResult(
            path if remote else Path(path),
            combine([r for o in read for r in o.results]),
            files=files,
            pool=pool,
        )
        result.unreadable.extend(missing)
        for outcome in sorted(outcomes, key=lambda o: o.index):
            result.add(outcome)
        if progress is not None and progress(1.0, "pod summary ready") is False:
            raise LoadCancelled()
    except BaseException:
        pool.close()
        raise
    if not result.to_diagnose:  # every host's diagnosis was cached: no worker is needed
        pool.close()
    if collect is not None:
        collect()
    return result


def _missing_host_files(files: list[Path]) -> list[str]:
    """One sentence per host file of the run's folder that is a link to nothing (its file removed or
    not copied): the run listing skips it, and the page names it with the hosts it could not read."""
    folders = {f.parent for f in files}
    sentences = []
    for folder in sorted(folders):
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink() and not entry.exists() and host_from_filename(entry) != entry.name:
                target = os.readlink(entry)
                sentences.append(
                    str(
                        ProfileError(
                            entry, f"the file is missing (it links to {target}, which does not exist)"
                        )
                    )
                )
    return sentences
