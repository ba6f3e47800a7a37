"""A FIFO where a pod result or a run summary should be is no entry: the look-up answers at once
(None, as for any unreadable entry) instead of waiting for a writer forever."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tpuscope.store import pod_results, run_summaries

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")


@pytest.fixture
def cache_root(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TPUSCOPE_NO_CACHE", raising=False)
    monkeypatch.delenv("TPUSCOPE_CACHE_MAX", raising=False)
    return tmp_path / "cache"


def _answers_at_once(look_up) -> object:
    """`look_up()` run in a thread that must finish within a few seconds (a blocked open never does)."""
    answer: list[object] = []
    worker = threading.Thread(target=lambda: answer.append(look_up()), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "the look-up waited on a FIFO"
    return answer[0]


def test_a_fifo_in_place_of_a_pod_result_is_no_entry(cache_root, tmp_path):
    host_file = tmp_path / "host0.xplane.pb"
    host_file.write_bytes(b"not read: only its identity keys the entry")
    key = pod_results._key(host_file, pod_results.LIGHT)
    assert key is not None
    entry = pod_results.folder() / f"{key}.{pod_results.LIGHT}"
    entry.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(entry)
    assert _answers_at_once(lambda: pod_results.load(host_file, pod_results.LIGHT)) is None


def test_a_fifo_in_place_of_a_run_summary_is_no_entry(cache_root, tmp_path):
    where, stamp = str(tmp_path / "run"), "a stamp of the run's files"
    entry = run_summaries._path(where, stamp)
    entry.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(entry)
    assert _answers_at_once(lambda: run_summaries.load(where, stamp)) is None
