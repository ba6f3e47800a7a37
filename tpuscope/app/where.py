"""When and where a run's hosts are analysed host by host: from how many host files on a command
does it without being asked (`MANY_HOSTS`), and on what (`parse_where`: this process, local worker
processes or a Dask cluster).

Kept apart from the engine that runs the tasks (`tpuscope.app.hosts`) so that a command given one
trace reads its `--per-host`/`--workers` options, and decides it is not a pod, without importing the
engine and the pod pass (`tpuscope.analysis.pod_run`): ~3 ms of every `overview` and `diagnose`.
"""

from __future__ import annotations

import os

from tpuscope.model.records import record

# From this many host files on, the commands analyse a run host by host instead of as one trace
# (bounded memory). Our heuristic: a 16-host run of 100 MB files already needs ~20 GB as one trace.
MANY_HOSTS = 16

WORKERS_ENV = "TPUSCOPE_WORKERS"  # where the hosts are analysed when no --workers is given
IN_PROCESS = "here"


@record(frozen=True)
class Where:
    """Where a pod's host files are analysed: `processes` local workers (0: in this process), or the
    Dask cluster whose scheduler is at `scheduler`."""

    processes: int = 0
    scheduler: str = ""

    def __str__(self) -> str:
        if self.scheduler:
            return f"the Dask cluster at {self.scheduler}"
        if self.processes == 0:
            return "this process"
        return f"{self.processes} process{'es' if self.processes != 1 else ''}"


WHERE_HELP = (
    f"'{IN_PROCESS}' (this process, one host at a time), a number of local worker processes, or a Dask "
    "scheduler's address such as tcp://10.0.0.5:8786 (needs tpuscope[pods])"
)


def parse_where(text: str | None = None) -> Where:
    """`text` (a --workers value), else TPUSCOPE_WORKERS, else one worker process per core.
    ValueError names what is accepted."""
    spec = (text if text is not None else os.environ.get(WORKERS_ENV, "")).strip()
    if not spec:
        return Where(default_workers())
    if spec in (IN_PROCESS, "0"):
        return Where(0)
    if spec.isdigit():
        return Where(int(spec))
    if ":" in spec:
        return Where(scheduler=spec)
    raise ValueError(f"where to analyse the hosts is {WHERE_HELP}, not {spec!r}")


def default_workers() -> int:
    """The cores this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # macOS, Windows
        return max(os.cpu_count() or 1, 1)
