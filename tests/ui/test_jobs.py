"""LatestJobs: only the newest job's result or error reaches the owner."""

from __future__ import annotations

import threading

from tpuscope.ui.jobs import LatestJobs

WAIT_MS = 10_000


def test_an_older_job_finishing_last_is_dropped(qtbot):
    jobs = LatestJobs()
    delivered: list[str] = []
    release_old = threading.Event()

    def old() -> str:
        release_old.wait(WAIT_MS / 1000)
        return "old"

    jobs.start(old, delivered.append)
    jobs.start(lambda: "new", delivered.append)
    qtbot.waitUntil(lambda: delivered == ["new"], timeout=WAIT_MS)
    release_old.set()
    qtbot.waitUntil(lambda: len(jobs) == 0, timeout=WAIT_MS)
    assert delivered == ["new"]


def test_errors_go_to_on_failed_and_superseded_ones_nowhere(qtbot):
    jobs = LatestJobs()
    errors: list[Exception] = []

    def fail() -> None:
        raise ValueError("broken profile")

    jobs.start(fail, lambda _result: None, errors.append)
    qtbot.waitUntil(lambda: len(errors) == 1, timeout=WAIT_MS)
    assert isinstance(errors[0], ValueError) and str(errors[0]) == "broken profile"

    release = threading.Event()

    def fail_late() -> None:
        release.wait(WAIT_MS / 1000)
        raise ValueError("stale")

    jobs.start(fail_late, lambda _result: None, errors.append)
    jobs.supersede()
    release.set()
    jobs.wait()
    qtbot.waitUntil(lambda: len(jobs) == 0, timeout=WAIT_MS)
    assert len(errors) == 1
