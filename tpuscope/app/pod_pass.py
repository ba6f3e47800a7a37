"""A run's host files read on every core: a light pass for the first picture, then the full one.

The pod page first needs, per host, what comparing hosts needs: the steps, the time in collectives,
the device busy time and the input wait (`summarize_host`, a few hundred numbers). That light pass
is one decode and one summary per host; each host's whole diagnosis (its 20-odd rules and its op
table) costs several times more, so it follows, host by host, while the page is already shown.

Both passes run the same way: each host file is one task, read in a worker process of this machine
(one per core: `multiprocessing`, spawned, so a worker never inherits the window's threads) or on
a Dask cluster when a scheduler is given; only the small `HostResult`s come back, so the caller
holds the summaries and each worker one host at a time. `HostPool.run` polls for Cancel between
results and a Cancel terminates the workers at once (a host half read is dropped, not finished).

Results are cached per host file (`tpuscope.store.pod_results`), never the host's trace: a host file's
trace is opened without the trace cache here.

Starting the workers is most of a short pass's fixed cost (each is a fresh interpreter that imports
the readers and the analysis): `HostPool.start` starts them before the first task is known, and this
module imports the analysis only where a task needs it, so that a caller can start the workers first
and do its own work (imports, the cache look-ups) while they come up.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpuscope.errors import LoadCancelled, ProfileError
from tpuscope.readers import host_from_filename

if TYPE_CHECKING:  # imported where a task runs: a worker starts without the analysis
    from tpuscope.analysis.pod_run import HostResult

LIGHT = "light"  # pod_results.LIGHT and FULL, without importing the cache (and through it the analysis)
FULL = "full"

POLL_S = 0.1  # how often a running pass looks at its cancel flag
SCHEDULER_ENV = "TPUSCOPE_DASK_SCHEDULER"  # the app's passes run on this Dask cluster when set


@dataclass
class HostOutcome:
    """What one task gives back: the host file's results, or one sentence saying why it has none."""

    index: int  # the file's place in the run
    results: list[HostResult] = field(default_factory=list)
    error: str | None = None
    kind: str = LIGHT


def default_workers() -> int:
    """The cores this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # macOS, Windows
        return max(os.cpu_count() or 1, 1)


# ----- the tasks (run in a worker: module-level, picklable) ------------------------------------------


def summarize_file(job: tuple[int, str]) -> HostOutcome:
    """The light pass of one host file: each host's summary, no diagnosis (cached)."""
    return _task(job, LIGHT)


def diagnose_file(job: tuple[int, str]) -> HostOutcome:
    """The full pass of one host file: each host's summary, own diagnosis and op rows (cached)."""
    return _task(job, FULL)


def prepare_worker() -> None:
    """A worker's start: the modules every task reads with, imported before the first task comes."""
    import tpuscope.analysis.pod.summary  # noqa: F401
    import tpuscope.analysis.session  # noqa: F401
    import tpuscope.app.opener  # noqa: F401
    import tpuscope.readers.xplane.assemble  # noqa: F401
    import tpuscope.store.pod_results  # noqa: F401


def _task(job: tuple[int, str], kind: str) -> HostOutcome:
    index, path = job
    try:
        results, found = read_host_file(path, kind)
        return HostOutcome(index, results, None, found)
    except ProfileError as error:
        return HostOutcome(index, [], str(error), kind)
    except MemoryError:
        return HostOutcome(index, [], f"Cannot open {path}: there is not enough memory to load it.", kind)


def read_host_file(path: str | Path, kind: str) -> tuple[list[HostResult], str]:
    """One host file's results of `kind` (or fuller) and their kind, from the cache or read now (and
    then cached)."""
    from tpuscope.analysis.pod_run import analyze_host
    from tpuscope.app.opener import open_trace  # the readers load where the files are read
    from tpuscope.store import pod_results

    stored = _cached(path, kind)
    if stored is not None:
        return stored
    trace = open_trace(path, use_cache=False)  # the summaries are cached, not every host's columns
    hosts = trace.hosts or [""]
    if kind == FULL:
        results = [analyze_host(trace, host, str(path)) for host in hosts]
    else:
        results = [summarize(trace, host, str(path)) for host in hosts]
    if len(results) == 1:
        results[0].file_host = host_from_filename(Path(path))
    pod_results.store(path, kind, results)
    return results, kind


def _cached(path: str | Path, kind: str) -> tuple[list[HostResult], str] | None:
    """The stored results that serve a pass of `kind`: a full result serves the light pass too."""
    from tpuscope.store import pod_results

    found = pod_results.load_best(path)
    if found is None or (kind == FULL and found[1] != FULL):
        return None
    return found


def summarize(trace, host: str, source: str) -> HostResult:
    """The light result of `host`: its summary and what labels it, with no diagnosis and no op rows."""
    from tpuscope.analysis.pod_run import analyze_host

    return analyze_host(trace, host, source, light=True)


# ----- the pool ---------------------------------------------------------------------------------------


class HostPool:
    """Worker processes of this machine (or a Dask cluster) that read host files, one per task.

    Made once per run and used by both passes, so the workers start once; `close()` terminates
    them (also what Cancel does)."""

    def __init__(self, workers: int | None = None, scheduler: str | None = None) -> None:
        self.workers = workers or default_workers()
        self.scheduler = scheduler if scheduler is not None else (os.environ.get(SCHEDULER_ENV) or None)
        self._pool: Any = None
        self._client: Any = None
        self.closed = False

    @property
    def where(self) -> str:
        """Where the tasks run, in words."""
        if self.scheduler:
            return f"the Dask cluster at {self.scheduler}"
        return f"{self.workers} process{'es' if self.workers != 1 else ''}"

    def run(
        self,
        task: Callable[[tuple[int, str]], HostOutcome],
        jobs: Sequence[tuple[int, str]],
        cancelled: Callable[[], bool],
        on_outcome: Callable[[HostOutcome], None],
    ) -> None:
        """Runs `task` on every job, calling `on_outcome` (in the caller's thread) as each finishes,
        in any order. `cancelled()` is asked every POLL_S: True terminates the workers (LoadCancelled)."""
        if not jobs:
            return
        if self.closed:
            raise LoadCancelled()
        outcomes = self._dask(task, jobs, cancelled) if self.scheduler else self._local(task, jobs, cancelled)
        for outcome in outcomes:
            on_outcome(outcome)

    def start(self, jobs: int | None = None) -> None:
        """Starts the local workers now (at most `jobs` of them), each importing what the tasks read
        with, while the caller goes on; the first `run` would otherwise start them. Nothing to start
        on a Dask cluster (its workers run already) or once started."""
        if self.scheduler or self._pool is not None or self.closed:
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawn, not fork: the app's process has Qt and analysis threads a forked child would
        # inherit locked. Each worker process reads one host file at a time.
        count = min(self.workers, max(jobs or self.workers, 1))
        self._pool = ProcessPoolExecutor(
            max_workers=count, mp_context=multiprocessing.get_context("spawn"), initializer=prepare_worker
        )
        # A spawning executor starts a worker per task submitted while none is idle: one no-op each
        # starts them all now.
        for _ in range(count):
            self._pool.submit(int)

    def _local(self, task, jobs, cancelled) -> Iterable[HostOutcome]:
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        self.start(len(jobs))
        pending = {self._pool.submit(task, job): job for job in jobs}
        while pending:
            if cancelled():
                self.close()
                raise LoadCancelled()
            done, _ = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
            for future in done:
                index, path = pending.pop(future)
                try:
                    yield future.result()
                except BrokenProcessPool:  # a worker died (killed, out of memory): the pass cannot go on
                    self.close()
                    raise ProfileError(
                        path, "a worker process reading the host files died (out of memory?)"
                    ) from None

    def _dask(self, task, jobs, cancelled) -> Iterable[HostOutcome]:
        try:
            from distributed import Client, as_completed
        except ImportError:
            raise ProfileError(None, "a Dask scheduler needs Dask (pip install 'tpuscope[pods]')") from None
        if self._client is None:
            try:
                self._client = Client(self.scheduler, timeout="20s")
            except OSError as error:
                raise ProfileError(
                    None, f"the Dask scheduler {self.scheduler} cannot be reached ({error})"
                ) from None
        futures = self._client.map(task, list(jobs), pure=False)
        pending = as_completed(futures)
        done = 0
        while done < len(futures):
            if cancelled():
                self._client.cancel(futures)
                self.close()
                raise LoadCancelled()
            batch = pending.next_batch(block=False)
            if not batch:
                time.sleep(POLL_S)
                continue
            for future in batch:
                done += 1
                yield future.result()

    def close(self) -> None:
        """Stops the workers now (a task under way is dropped)."""
        self.closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            _terminate(pool)
        client, self._client = self._client, None
        if client is not None:
            client.close()


def pass_over(
    pool: HostPool,
    files: Sequence[str | Path],
    kind: str,
    cancelled: Callable[[], bool],
    on_outcome: Callable[[HostOutcome], None],
    indices: Iterable[int] | None = None,
) -> None:
    """One pass (`kind`) over `files` (those at `indices`, default all): results already cached
    are handed over first without a worker, the rest computed on `pool`, whose workers start at
    the first file not cached (the look-ups of the others overlap their start)."""
    task = diagnose_file if kind == FULL else summarize_file
    wanted = range(len(files)) if indices is None else list(indices)
    jobs: list[tuple[int, str]] = []
    for position, index in enumerate(wanted):
        stored = _cached(files[index], kind)
        if stored is not None:
            on_outcome(HostOutcome(index, stored[0], None, stored[1]))
        else:
            if not jobs:
                pool.start(len(wanted) - position)
            jobs.append((index, str(files[index])))
    pool.run(task, jobs, cancelled, on_outcome)


def _terminate(pool) -> None:
    """Stops a ProcessPoolExecutor's workers now, a task under way included (Python 3.14 has
    `terminate_workers`; before it, the executor's processes are terminated one by one)."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(5)
