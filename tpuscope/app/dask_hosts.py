"""A pod's host tasks on a Dask cluster (`dask.distributed`, the optional `pods` extra): the only
module of tpuscope that imports Dask.

`tpuscope.app.hosts` hands it its tasks when the hosts are to run on a cluster near the data (a
scheduler's address: `--workers tcp://10.0.0.5:8786` or TPUSCOPE_WORKERS). Each task is one host
file; only its small result travels back. Cancel cancels the cluster's futures and disconnects.

`local_cluster` starts a cluster of this machine's processes, for the tests and benchmarks to drive
the real Dask path; on one machine the engine's own worker processes do the same with less start-up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tpuscope.errors import LoadCancelled, ProfileError

CONNECT_TIMEOUT = "20s"


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ProfileError(None, "a Dask scheduler needs Dask (pip install 'tpuscope[pods]')") from None
    return distributed


class DaskHosts:
    """A connection to the Dask scheduler at `address`, made at once (ProfileError when it cannot be)."""

    def __init__(self, address: str) -> None:
        distributed = _distributed()
        self.address = address
        try:
            self._client: Any = distributed.Client(address, timeout=CONNECT_TIMEOUT)
        except (OSError, ValueError) as error:  # unreachable, timed out, or not an address
            raise ProfileError(None, f"the Dask scheduler {address} cannot be reached ({error})") from None

    def run(
        self, task: Callable[[Any], Any], jobs: list, cancelled: Callable[[], bool], poll_s: float
    ) -> Iterator:
        """`task(job)` of every job on the cluster's workers, each result as it comes (in any order).
        `cancelled()` is asked every `poll_s`: True cancels what is left (LoadCancelled)."""
        distributed = _distributed()
        futures = self._client.map(task, jobs, pure=False)
        pending = distributed.as_completed(futures)
        done = 0
        while done < len(futures):
            if cancelled():
                self._client.cancel(futures)
                raise LoadCancelled()
            batch = pending.next_batch(block=False)
            if not batch:
                time.sleep(poll_s)
                continue
            for future in batch:
                done += 1
                yield future.result()

    def close(self) -> None:
        self._client.close()


@contextmanager
def local_cluster(workers: int) -> Iterator[str]:
    """A Dask cluster of `workers` processes of this machine, one thread each; yields its address."""
    distributed = _distributed()
    import dask

    # Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_=65536 (distributed.yaml,
    # nanny.pre-spawn-environ), so glibc hands every freed block of the decoder back to the OS and
    # the next host faults it in again: measured here, 2.5-3.2 s per 1M-event host instead of
    # 1.3-2.1 s. The thread caps stay; these workers keep glibc's default trimming.
    environ = {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1}
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
        cluster = distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()
