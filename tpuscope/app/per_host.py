"""A pod's host files analysed one at a time, in this process or on Dask workers.

Each host file is opened alone, analysed into a small `HostResult`
(`tpuscope.analysis.pod_run.analyze_host`) and dropped before the next, so memory stays at one host's
model plus the results, whatever the number of hosts. The same per-host function runs in this
process (in turn) or on Dask workers (`dask.distributed`, the optional `pods` extra: a local cluster
of N processes, or an existing scheduler near the data); `combine` is a pure function of the
per-host results, so both ways give the same answer. This module sits above the readers and the
analyses, beside `tpuscope.app.opener`: it reads files, the analysis it runs does not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from tpuscope.analysis.pod_run import HostResult, PodRun, analyze_host, combine
from tpuscope.errors import LoadCancelled, ProfileError
from tpuscope.readers import ProgressCallback, host_from_filename

# progress(hosts_done, hosts_total, host) -> False to cancel; in process, hosts_done grows by fractions
# of a host while one is read, so a caller can show steady progress and a Cancel takes effect mid-host.
HostProgress = Callable[[float, int, str], bool | None]


def analyze_host_file(path: str | Path, progress: ProgressCallback | None = None) -> list[HostResult]:
    """Opens one host file, analyses each host in it, and lets the trace go.

    `progress(fraction, message)` follows the file's load (False cancels it: LoadCancelled)."""
    from tpuscope.app.opener import open_trace  # the readers load where the files are read

    trace = open_trace(path, progress=progress)
    results = [analyze_host(trace, host, str(path)) for host in (trace.hosts or [""])]
    if len(results) == 1:
        results[0].file_host = host_from_filename(Path(path))
    return results


def analyze_hosts(
    files: Sequence[str | Path],
    workers: int = 0,
    scheduler: str | None = None,
    progress: HostProgress | None = None,
    unreadable: list[str] | None = None,
) -> PodRun:
    """Every host file analysed on its own: in turn here (workers=0), or on Dask.

    `workers` > 0 starts a local Dask cluster of that many processes; `scheduler` (an address such
    as tcp://10.0.0.5:8786) uses an existing cluster instead. Only HostResults travel back.
    With an `unreadable` list (here or on Dask), a host file that cannot be read is left out and
    its one-sentence reason appended there, so one broken host does not hide the other 63; without
    it, the first such file ends the analysis (ProfileError). The run's `unreadable` lists them too.
    """
    names = [str(f) for f in files]
    errors: list[ProfileError] = []
    if workers > 0 or scheduler:
        results = _on_dask(names, workers, scheduler, progress, errors)
    else:
        results = []
        for done, name in enumerate(names):
            if progress is not None and progress(done, len(names), name) is False:
                raise LoadCancelled()
            try:
                results.extend(analyze_host_file(name, _within_host(progress, done, len(names), name)))
            except ProfileError as error:
                errors.append(error)
    if errors and unreadable is None:
        raise errors[0]
    if not results and errors:
        raise ProfileError(
            Path(names[0]).parent,
            f"none of its {len(names)} host files can be read (the first one: {errors[0].cause})",
        )
    run = combine(results)
    run.unreadable = [str(e) for e in errors]
    if unreadable is not None:
        unreadable.extend(run.unreadable)
    return run


def host_file_or_error(path: str) -> tuple[list[HostResult], tuple[str, str] | None]:
    """`analyze_host_file(path)`, or (the file, why it cannot be read): what a Dask worker sends back,
    so one broken host file does not end the others' analysis (a ProfileError does not pickle)."""
    try:
        return analyze_host_file(path), None
    except ProfileError as error:
        return [], (str(error.path if error.path is not None else path), error.cause)


def _within_host(progress: HostProgress | None, done: int, total: int, name: str) -> ProgressCallback | None:
    """A file's load progress as a fraction of one host of the run's."""
    if progress is None:
        return None
    return lambda fraction, _message: progress(done + fraction, total, name)


def _on_dask(
    names: list[str],
    workers: int,
    scheduler: str | None,
    progress: HostProgress | None,
    errors: list[ProfileError],
) -> list[HostResult]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ProfileError(None, "--workers needs Dask (pip install 'tpuscope[pods]')") from None
    import dask

    cluster = None
    if scheduler:
        client = Client(scheduler, timeout="20s")
    else:
        # Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_=65536 (distributed.yaml,
        # nanny.pre-spawn-environ), so glibc hands every freed block of the decoder back to the OS and
        # the next host faults it in again: measured here, 2.5-3.2 s per 1M-event host instead of
        # 1.3-2.1 s. The thread caps stay; our workers keep glibc's default trimming.
        environ = {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1}
        with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
            # One thread per worker process: the decoder and numpy already use the cores they get.
            cluster = LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
        client = Client(cluster)
    try:
        futures = client.map(host_file_or_error, names, pure=False)
        by_future = dict(zip(futures, names, strict=True))
        results_of: dict[str, tuple[list[HostResult], tuple[str, str] | None]] = {}
        for done, future in enumerate(as_completed(futures), start=1):
            results_of[by_future[future]] = future.result()
            if progress is not None:
                progress(done, len(names), by_future[future])
        errors.extend(ProfileError(*e) for name in names if (e := results_of[name][1]) is not None)
        return [r for name in names for r in results_of[name][0]]
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
