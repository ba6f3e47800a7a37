"""The one engine that analyses a pod host by host: each host file is one task, run in this process,
on local worker processes or on a Dask cluster, and only its small `HostResult`s come back.

Every caller goes through it: the CLI's `overview`, `diagnose` and `ops` of a pod
(`tpuscope.commands._per_host`), the app's pod page (`tpuscope.ui.pod`) and scripts (`analyze_run`).
A task is one of two kinds, as the pod page has always run them:

* LIGHT: each host's summary (steps, collectives, device busy time, input wait: a few hundred
  numbers), no rule and no op table; the pod rules (straggler, collective-bound, clock offset) then
  run once over the summaries (`combine`). What `overview` and the pod page's first picture show.
* FULL: the summary plus the host's own diagnosis and op rows, several times the light cost; what
  `diagnose` and `ops` print and the pod page fills in afterwards.

Where the tasks run is chosen one way (`tpuscope.app.where.parse_where`): the commands'
`--workers WHERE`, else the TPUSCOPE_WORKERS environment variable (the app and scripts read it
too), else one local worker process per core:

* `here` (or 0): in this process, one host after another: the least memory (one host's load);
* N: N worker processes of this machine (`multiprocessing`: spawned for the app, so a worker never
  inherits the window's threads; forked for a command line on Linux, so a worker starts with what
  the command imported); each holds one host at a time;
* a Dask scheduler's address (`tcp://10.0.0.5:8786`): that cluster's workers, near the data
  (`tpuscope.app.dask_hosts`, the only module that drives Dask).

`combine` (`tpuscope.analysis.pod_run`) is a pure function of the results, so every place gives the
same answer. Results are cached per host file and kind (`tpuscope.store.pod_results`), never a host's
trace: a host file is opened without the trace cache here.

Starting worker processes is most of a short pass's fixed cost (each is a fresh interpreter that
imports the readers and the analysis): `HostPool.start` starts them before the first task is known,
and this module imports the analysis only where a task needs it, so that a caller can start the
workers first and do its own work (imports, the cache look-ups) while they come up.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpuscope.app.where import Where, parse_where
from tpuscope.errors import LoadCancelled, ProfileError
from tpuscope.model.records import record
from tpuscope.readers import host_from_filename

if TYPE_CHECKING:  # imported where a task runs: a worker starts without the analysis
    from tpuscope.analysis.pod_run import HostResult, PodRun

LIGHT = "light"  # pod_results.LIGHT and FULL, without importing the cache (and through it the analysis)
FULL = "full"

POLL_S = 0.1  # how often a running pass looks at its cancel flag
KEPT_BYTES = 1 << 30  # a worker's blocks up to this size come from (and stay in) its heap


# ----- the task (run in a worker: module-level, picklable) -----------------------------------------------


@record(frozen=True)
class HostJob:
    """One task: the host file at `index` of the run, read for `kind`."""

    index: int
    path: str
    kind: str
    use_cache: bool = True


@record
class HostOutcome:
    """What one task gives back: the host file's results, or one sentence saying why it has none."""

    index: int  # the file's place in the run
    results: list[HostResult] = field(default_factory=list)
    error: str | None = None
    kind: str = LIGHT
    failure: tuple[str, str] | None = None  # (file, cause) of `error`: a ProfileError does not pickle

    def profile_error(self) -> ProfileError:
        path, cause = self.failure or ("", self.error or "")
        return ProfileError(path or None, cause)


def run_job(job: HostJob, cancelled: Callable[[], bool] | None = None) -> HostOutcome:
    """The results of one host file, or why it has none. In this process, `cancelled()` is asked as
    the file loads (True: LoadCancelled); a worker process is terminated instead."""
    progress = None if cancelled is None else (lambda _fraction, _message: not cancelled())
    try:
        results, found = read_host_file(job.path, job.kind, job.use_cache, progress)
        return HostOutcome(job.index, results, None, found)
    except ProfileError as error:
        where = str(error.path) if error.path is not None else job.path
        return HostOutcome(job.index, [], str(error), job.kind, (where, error.cause))
    except MemoryError:
        cause = "there is not enough memory to load it"
        return HostOutcome(job.index, [], str(ProfileError(job.path, cause)), job.kind, (job.path, cause))


def import_task_modules(kind: str = LIGHT) -> None:
    """The modules every task reads with (a forking caller imports them once, before its workers);
    for FULL tasks also those a host's rules load on first use (the rules, the memory report, the
    HLO decoder: 0.1-0.2 s that each forked worker would otherwise import for itself)."""
    import tpuscope.analysis.pod.summary  # noqa: F401
    import tpuscope.analysis.session  # noqa: F401
    import tpuscope.app.opener  # noqa: F401
    import tpuscope.readers.xplane.assemble  # noqa: F401
    import tpuscope.store.pod_results  # noqa: F401

    if kind == FULL:
        import tpuscope.analysis.diagnose.engine  # noqa: F401
        import tpuscope.analysis.memory.report  # noqa: F401
        import tpuscope.readers.xplane.hlo  # noqa: F401


def prepare_worker() -> None:
    """A worker process's start, before the first task comes: the task modules imported, and the
    cyclic collector left to `run_in_worker`. Everything that exists now is frozen (`gc.freeze`: never
    traversed again, so a forked worker does not copy the pages of its parent's objects to write
    their collector headers), and automatic collection is off: during a host's decode and summary it
    ran over objects that stay alive; one collection after each host frees that host's trace."""
    import_task_modules()
    keep_freed_memory()
    gc.disable()
    gc.freeze()


def keep_freed_memory() -> None:
    """Where the C library is glibc: the memory of a host's freed arrays kept for the next host's,
    instead of handed back to the OS and faulted in again (half the page faults of a 1M-event host's
    light pass, 10-25 ms of system time of its ~200 ms). A worker holds one host at a time, so what it
    keeps is that host's peak (+22 MB measured). Large blocks come from the heap rather than their own
    mappings and the heap's top is not trimmed (mallopt: https://man7.org/linux/man-pages/man3/mallopt.3.html)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return
    m_trim_threshold, m_mmap_threshold = -1, -3  # malloc.h
    mallopt(m_mmap_threshold, KEPT_BYTES)
    mallopt(m_trim_threshold, KEPT_BYTES)


def run_in_worker(job: HostJob) -> HostOutcome:
    """`run_job(job)` in a worker process, then the host's trace collected (its planes and tracks
    refer to each other) before the next host is read."""
    outcome = run_job(job)
    gc.collect()
    return outcome


def read_host_file(
    path: str | Path, kind: str, use_cache: bool = True, progress: Callable[[float, str], Any] | None = None
) -> tuple[list[HostResult], str]:
    """One host file's results of `kind` (or fuller) and their kind, from the cache or read now (and
    then cached). `progress(fraction, message)` follows the load (False cancels it: LoadCancelled)."""
    from tpuscope.analysis.pod_run import analyze_host
    from tpuscope.app.opener import open_trace  # the readers load where the files are read
    from tpuscope.store import pod_results

    stored = cached(path, kind) if use_cache else None
    if stored is not None:
        return stored
    trace = open_trace(path, progress=progress, use_cache=False)  # the results are cached, not the columns
    hosts = trace.hosts or [""]
    results = [analyze_host(trace, host, str(path), light=kind == LIGHT) for host in hosts]
    if len(results) == 1:
        results[0].file_host = host_from_filename(Path(path))
    if use_cache:
        pod_results.store(path, kind, results)
    return results, kind


def cached(path: str | Path, kind: str) -> tuple[list[HostResult], str] | None:
    """The stored results that serve a pass of `kind`: a full result serves the light pass too."""
    from tpuscope.store import pod_results

    found = pod_results.load_best(path)
    if found is None or (kind == FULL and found[1] != FULL):
        return None
    return found


# ----- the pool ---------------------------------------------------------------------------------------


class HostPool:
    """Where the tasks of a run go (see `Where`): made once per run and used by both passes, so local
    workers start once; `close()` terminates them (also what Cancel does)."""

    def __init__(self, where: Where | str | None = None, use_cache: bool = True, fork: bool = False) -> None:
        self.place = where if isinstance(where, Where) else parse_where(where)
        self.use_cache = use_cache
        # A command line's process has no thread a child could inherit locked, so on Linux its
        # workers are forked: each starts with what the command imported instead of importing it again
        # (~0.5 s of CPU per worker). The app's window has threads: its workers are spawned.
        self.fork = fork and sys.platform == "linux"
        self._pool: Any = None  # a ProcessPoolExecutor
        self._dask: Any = None  # a dask_hosts.DaskHosts
        self.closed = False

    @property
    def where(self) -> str:
        """Where the tasks run, in words."""
        return str(self.place)

    @property
    def workers(self) -> int:
        """How many local worker processes run the tasks (0: this process, or a Dask cluster's)."""
        return self.place.processes

    def start(self, jobs: int | None = None, kind: str = LIGHT) -> None:
        """Starts the local workers now (at most `jobs` of them), each importing what the tasks (of
        `kind`) read with, while the caller goes on; the first `run` would otherwise start them.
        Nothing to start in process, on a Dask cluster (its workers run already) or once started."""
        if not self.place.processes or self.place.scheduler or self._pool is not None or self.closed:
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # Each worker process reads one host file at a time.
        count = min(self.place.processes, max(jobs or self.place.processes, 1))
        # Forked only while no other thread runs (a bucket's download may have left one).
        fork = self.fork and threading.active_count() == 1
        if fork:
            import_task_modules(kind)  # imported here once, what every forked worker then holds
        method = "fork" if fork else "spawn"
        self._pool = ProcessPoolExecutor(
            max_workers=count, mp_context=multiprocessing.get_context(method), initializer=prepare_worker
        )
        # A spawning executor starts a worker per task submitted while none is idle: one no-op each
        # starts them all now.
        for _ in range(count):
            self._pool.submit(int)

    def run(
        self,
        jobs: Sequence[HostJob],
        cancelled: Callable[[], bool],
        on_outcome: Callable[[HostOutcome], None],
    ) -> None:
        """Runs every job, calling `on_outcome` (in the caller's thread) as each finishes, in any
        order. `cancelled()` is asked every POLL_S: True stops the workers (LoadCancelled)."""
        if not jobs:
            return
        if self.closed:
            raise LoadCancelled()
        if self.place.scheduler:
            outcomes = self._on_dask(jobs, cancelled)
        elif self.place.processes:
            outcomes = self._local(jobs, cancelled)
        else:
            outcomes = self._here(jobs, cancelled)
        for outcome in outcomes:
            on_outcome(outcome)

    def _here(self, jobs: Sequence[HostJob], cancelled: Callable[[], bool]) -> Iterator[HostOutcome]:
        for job in jobs:
            if cancelled():
                raise LoadCancelled()
            yield run_job(job, cancelled)

    def _local(self, jobs: Sequence[HostJob], cancelled: Callable[[], bool]) -> Iterator[HostOutcome]:
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        self.start(len(jobs), jobs[0].kind)
        pending = {self._pool.submit(run_in_worker, job): job for job in jobs}
        while pending:
            if cancelled():
                self.close()
                raise LoadCancelled()
            done, _ = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
            for future in done:
                job = pending.pop(future)
                try:
                    yield future.result()
                except BrokenProcessPool:  # a worker died (killed, out of memory): the pass cannot go on
                    self.close()
                    raise ProfileError(
                        job.path, "a worker process reading the host files died (out of memory?)"
                    ) from None

    def _on_dask(self, jobs: Sequence[HostJob], cancelled: Callable[[], bool]) -> Iterator[HostOutcome]:
        if self._dask is None:
            from tpuscope.app.dask_hosts import DaskHosts

            self._dask = DaskHosts(self.place.scheduler)
        try:
            yield from self._dask.run(run_job, list(jobs), cancelled, POLL_S)
        except LoadCancelled:
            self.close()
            raise

    def close(self) -> None:
        """Stops the workers now (a task under way is dropped)."""
        self.closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            _terminate(pool)
        dask, self._dask = self._dask, None
        if dask is not None:
            dask.close()


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
    wanted = range(len(files)) if indices is None else list(indices)
    jobs: list[HostJob] = []
    for position, index in enumerate(wanted):
        stored = cached(files[index], kind) if pool.use_cache else None
        if stored is not None:
            on_outcome(HostOutcome(index, stored[0], None, stored[1]))
        else:
            if not jobs:
                pool.start(len(wanted) - position, kind)
            jobs.append(HostJob(index, str(files[index]), kind, pool.use_cache))
    pool.run(jobs, cancelled, on_outcome)


# ----- a whole run, for the commands and scripts -----------------------------------------------------------

# progress(hosts_done, hosts_total) -> False to cancel
RunProgress = Callable[[int, int], bool | None]


def analyze_run(
    files: Sequence[str | Path],
    kind: str = FULL,
    where: Where | str | None = None,
    progress: RunProgress | None = None,
    unreadable: list[str] | None = None,
    use_cache: bool = True,
    fork: bool = False,
) -> PodRun:
    """Every host file analysed on its own (`kind`: LIGHT or FULL) where `where` says, then combined.

    A LIGHT run holds each host's summary alone, even where the cache has its full result, so that
    what it says does not depend on what was cached: the pod table and the pod rules' findings.
    With an `unreadable` list, a host file that cannot be read is left out and its one-sentence
    reason appended there, so one broken host does not hide the other 63; without it, the first
    such file ends the analysis (ProfileError). The run's `unreadable` lists them too. `fork`: the
    caller has no thread running (a command line), so local workers may be forked (`HostPool`).
    """
    names = [str(f) for f in files]
    outcomes: list[HostOutcome] = []
    waited: list[bool] = []

    def cancelled() -> bool:
        if not waited:  # asked first once the tasks are handed out: the workers run, this process waits
            waited.append(True)
            import_combine_modules()
        return progress is not None and progress(len(outcomes), len(names)) is False

    pool = HostPool(where, use_cache, fork)
    try:
        pass_over(pool, names, kind, cancelled, outcomes.append)
    finally:
        pool.close()
    ordered = sorted(outcomes, key=lambda o: o.index)
    failed = [o for o in ordered if o.error is not None]
    if failed and unreadable is None:
        raise failed[0].profile_error()
    results = [r for o in ordered for r in o.results]
    if not results:
        first = failed[0].failure[1] if failed and failed[0].failure else "no host in them"
        raise ProfileError(
            Path(names[0]).parent if names else None,
            f"none of its {len(names)} host files can be read (the first one: {first})",
        )
    if kind == LIGHT:
        results = [as_light(r) for r in results]
    from tpuscope.analysis.pod_run import combine

    run = combine(results)
    run.unreadable = [o.error for o in failed if o.error is not None]
    if unreadable is not None:
        unreadable.extend(run.unreadable)
    return run


def import_combine_modules() -> None:
    """What `combine` reads with (the pod rules, the rules' engine: ~0.2 s of imports), imported while
    the workers analyse the hosts rather than after the last one, when nothing else is left to do."""
    import tpuscope.analysis.diagnose.across_hosts  # noqa: F401
    from tpuscope.analysis.diagnose import RULES  # noqa: F401


def as_light(result: HostResult) -> HostResult:
    """`result` as the light pass makes it: its summary and labels, no diagnosis and no op rows."""
    if not result.report and not result.op_rows and result.peaks is None:
        return result
    return replace(result, report={}, op_rows=[], peaks=None)


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
