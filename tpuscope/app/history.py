"""The runs of a history and their summaries, read once and kept (`tpuscope history`, the History view).

Each run of the given logdirs, run folders, profile files or bucket URLs is listed in order (a
logdir's runs oldest first, as their capture-time folder names order them; several paths in the
order given). Each run is analysed once: its summary (`analysis.compare.history.RunSummary`, a few
kilobytes of JSON) is kept by the store (`tpuscope.store.run_summaries`, keyed by the identity of the
run's files), so the history of 50 runs after one new run reads 49 summaries and analyses one run.
A run that cannot be read is named with its error and skipped; the history goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from pathlib import Path

from tpuscope.analysis.compare.history import (
    HistoryEntry,
    RunSummary,
    build_history,
    summarize,
)
from tpuscope.analysis.compare.runs import analyze_run
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.errors import ProfileError
from tpuscope.model.records import record
from tpuscope.readers.files import list_runs
from tpuscope.store import run_summaries
from tpuscope.urls import is_url


@record(frozen=True)
class RunRef:
    """One run of a history: its name, what opens it (a path or URL), and what its files are now."""

    name: str
    where: str
    stamp: str  # the run's files as they are now (`run_summaries.local_stamp`, `.remote_stamp`)


def list_history_runs(paths: list[str]) -> list[RunRef]:
    """Every run of each path, in order. Raises ProfileError when a path holds no run at all."""
    found: list[RunRef] = []
    for path in paths:
        found.extend(_remote_runs(path) if is_url(path) else _local_runs(path))
    return found


def _local_runs(path: str) -> list[RunRef]:
    refs = []
    for run in list_runs(path):
        where = str(run.files[0]) if len(run.files) == 1 and Path(path).is_file() else str(run.folder)
        refs.append(RunRef(run.name, where, run_summaries.local_stamp(run.files)))
    return refs


def _remote_runs(url: str) -> list[RunRef]:
    from tpuscope.store.remote import list_remote_runs  # the cloud clients: remote runs only

    refs = []
    for run in list_remote_runs(url):
        stamp = run_summaries.remote_stamp((f.url, f.size, f.version) for f in run.files)
        refs.append(RunRef(run.name, run.folder, stamp))
    return refs


def _cached(ref: RunRef) -> RunSummary | None:
    summary = run_summaries.load(ref.where, ref.stamp)
    if summary is not None:
        summary.run = ref.name  # as this history names the run
    return summary


@record
class History:
    """The entries of a history and which runs had to be analysed (the others came from the cache)."""

    entries: list[HistoryEntry]
    analysed: list[str] = field(default_factory=list)
    refs: list[RunRef] = field(default_factory=list)  # each entry's run: what opens it

    def where(self, run: str) -> str | None:
        """What opens the run named `run` (to compare two runs of the history)."""
        return next((ref.where for ref in self.refs if ref.name == run), None)


def read_history(
    paths: list[str],
    use_cache: bool = True,
    noise_floor_percent: float | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> History:
    """The history of every run of `paths` (`progress(done, total, run)` after each run)."""
    refs = list_history_runs(paths)
    analysed: list[str] = []
    rows: list[tuple[str, RunSummary | None, str | None]] = []
    for k, ref in enumerate(refs):
        summary = _cached(ref) if use_cache else None
        error = None
        if summary is None:
            try:
                trace = open_trace(ref.where, use_cache=use_cache)
                summary = summarize(ref.name, analyze_run(TraceAnalysis(trace)))
            except ProfileError as exc:
                error = str(exc)
            else:
                analysed.append(ref.name)
                if use_cache:
                    run_summaries.store(ref.where, ref.stamp, summary)
        rows.append((ref.name, summary, error))
        if progress is not None:
            progress(k + 1, len(refs), ref.name)
    return History(build_history(rows, noise_floor_percent), analysed, refs)
