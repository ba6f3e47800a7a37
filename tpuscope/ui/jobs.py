"""Computations in worker threads whose results are kept only when they answer the newest request.

The window and its views start a new generation for every request (a new trace, a new range) and
drop results of older ones, so a slow job never overwrites the answer to a newer question.
`LatestJobs` does that bookkeeping; `Job` is one computation.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

from PySide6.QtCore import QObject, QThread, Signal

Result = TypeVar("Result")


class Job(QThread):
    done = Signal(int, object)  # (generation, the function's result)
    failed = Signal(int, object)  # (generation, the exception the function raised)

    def __init__(self, generation: int, work: Callable[[], object], parent=None):
        super().__init__(parent)
        self.generation = generation
        self.work = work

    def run(self) -> None:
        try:
            result = self.work()
        except Exception as error:  # noqa: BLE001 - handed to the owner, which shows or reports it
            self.failed.emit(self.generation, error)
            return
        self.done.emit(self.generation, result)


class LatestJobs(QObject):
    """Runs jobs off the UI thread and hands the caller only the newest one's result or error.

    `start` supersedes every job started before it (and `supersede` does so without starting one):
    their results are dropped when they arrive. `len()` is the number of threads still running;
    `wait()` blocks until they are done (call it before the owner closes).
    """

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.generation = 0
        self._running: set[Job] = set()
        # The newest job's callback: only that job's result is ever handed to it.
        self._on_done: Callable[[Any], None] | None = None
        self._on_failed: Callable[[Exception], None] | None = None

    def start(
        self,
        work: Callable[[], Result],
        on_done: Callable[[Result], None],
        on_failed: Callable[[Exception], None] | None = None,
    ) -> None:
        """Runs `work()` in a thread; `on_done(result)` (or `on_failed(error)`) if nothing newer started.

        Without `on_failed`, an error is reported like any uncaught exception (`sys.excepthook`).
        """
        self.supersede()
        self._on_done, self._on_failed = on_done, on_failed
        job = Job(self.generation, work, self)
        job.done.connect(self._deliver_result)
        job.failed.connect(self._deliver_error)
        job.finished.connect(lambda j=job: self._forget(j))
        self._running.add(job)
        job.start()

    def supersede(self) -> None:
        """Drops the results of every job started so far."""
        self.generation += 1

    def wait(self) -> None:
        for job in list(self._running):
            job.wait()

    def __len__(self) -> int:
        return len(self._running)

    def _forget(self, job: Job) -> None:
        self._running.discard(job)
        job.deleteLater()

    def _deliver_result(self, generation: int, result: object) -> None:
        if generation == self.generation and self._on_done is not None:
            self._on_done(result)

    def _deliver_error(self, generation: int, error: Exception) -> None:
        if generation != self.generation:
            return
        if self._on_failed is None:
            sys.excepthook(type(error), error, error.__traceback__)
        else:
            self._on_failed(error)
