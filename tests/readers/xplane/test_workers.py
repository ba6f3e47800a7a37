"""OrderedWorkers: jobs run on threads in order, results and errors come back at their own index."""

from __future__ import annotations

import threading
import time

import pytest

from tpuscope.readers.xplane.workers import OrderedWorkers, ResultNotReady


def test_results_come_back_in_job_order_from_several_threads():
    ran_on = set()

    def work(job: int, index: int) -> tuple[int, int]:
        ran_on.add(threading.current_thread().name)
        return index, job * job

    with OrderedWorkers(work, list(range(200)), 3, "test") as pool:
        results = [pool.result(i) for i in range(200)]
    assert results == [(i, i * i) for i in range(200)]
    assert ran_on <= {"test_0", "test_1", "test_2"}


def test_an_error_is_raised_for_its_own_job_only():
    def work(job: int, index: int) -> int:
        if job == 3:
            raise ValueError("job 3 is malformed")
        return job

    with OrderedWorkers(work, [0, 1, 2, 3, 4], 2, "test") as pool:
        assert [pool.result(i) for i in range(3)] == [0, 1, 2]
        with pytest.raises(ValueError, match="job 3 is malformed"):
            pool.result(3)
        assert pool.result(4) == 4


def test_a_result_not_ready_in_time_says_so():
    release = threading.Event()

    def work(job: int, index: int) -> int:
        release.wait(10)
        return job

    with OrderedWorkers(work, [7], 1, "test") as pool:
        with pytest.raises(ResultNotReady):
            pool.result(0, timeout=0.05)
        release.set()
        assert pool.result(0) == 7


def test_closing_lets_the_job_in_flight_finish_and_skips_the_others():
    gate = threading.Event()
    started = []

    def work(job: int, index: int) -> int:
        started.append(index)
        if index == 1:
            gate.wait(10)
        return job

    pool = OrderedWorkers(work, list(range(50)), 1, "test")
    assert pool.result(0) == 0
    closer = threading.Thread(target=pool.close)
    closer.start()
    while not pool._closed:
        time.sleep(0.001)
    gate.set()  # job 1, in flight when the pool closed, may finish now
    closer.join(10)
    assert started == [0, 1]
    assert all(not thread.is_alive() for thread in pool._threads)
