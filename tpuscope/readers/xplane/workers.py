"""A few threads running a list of jobs in order, their results awaited in order: what the line
decoder needs of a thread pool, and no more.

Why not concurrent.futures.ThreadPoolExecutor: importing it (and the logging it imports) is ~8 ms
of every start of `tpuscope` (python -X importtime), and the decoder uses none of its generality.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

_Job = TypeVar("_Job")
_Result = TypeVar("_Result")


class ResultNotReady(Exception):
    """The job's result did not come within the timeout."""


class OrderedWorkers(Generic[_Job, _Result]):
    """Starts `threads` threads that take `jobs` in order and run `work(job, index)` on each.

    Use as a context manager: leaving it lets the jobs in flight finish, skips those not started
    and joins the threads (their thread-local memory goes with them).
    """

    def __init__(self, work: Callable[[_Job, int], _Result], jobs: Sequence[_Job], threads: int, name: str):
        self._work = work
        self._jobs = jobs
        self._next = 0
        self._closed = False
        self._lock = threading.Lock()
        self._done = [threading.Event() for _ in jobs]
        self._results: list[_Result | None] = [None] * len(jobs)
        self._errors: list[BaseException | None] = [None] * len(jobs)
        self._threads = [threading.Thread(target=self._run, name=f"{name}_{i}") for i in range(threads)]
        for thread in self._threads:
            thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._closed or self._next >= len(self._jobs):
                    return
                index = self._next
                self._next += 1
            try:
                self._results[index] = self._work(self._jobs[index], index)
            except BaseException as error:  # handed to the thread that asks for this result
                self._errors[index] = error
            finally:
                self._done[index].set()

    def result(self, index: int, timeout: float | None = None) -> _Result:
        """Job `index`'s result, or its exception raised here; ResultNotReady after `timeout` seconds."""
        if not self._done[index].wait(timeout):
            raise ResultNotReady()
        error = self._errors[index]
        if error is not None:
            self._errors[index] = None  # raised once: no cycle through its traceback stays behind
            raise error
        result = self._results[index]
        self._results[index] = None  # the caller holds it now
        return result  # type: ignore[return-value]  # set: the job finished without an error

    def close(self) -> None:
        with self._lock:
            self._closed = True
        for thread in self._threads:
            thread.join()

    def __enter__(self) -> OrderedWorkers[_Job, _Result]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
