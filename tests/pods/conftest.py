"""Real multi-process JAX CPU pod runs (see recordings.py), each recorded once per test session."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.jax_recordings import record_training_profile
from tests.pods import recordings
from tpuscope.app.opener import open_trace
from tpuscope.app.where import MANY_HOSTS


@pytest.fixture(scope="session")
def pod_run(tmp_path_factory):
    """pod_run(scenario) -> the run folder of that scenario, recorded on first use."""
    runs: dict[str, object] = {}

    def get(scenario: str):
        if scenario not in runs:
            runs[scenario] = recordings.record_pod(scenario, tmp_path_factory.mktemp(f"pod_{scenario}"))
        return runs[scenario]

    return get


# A real Dask cluster in a process of its own, up until its stdin closes.
_DASK_CLUSTER = """
import sys
from tpuscope.app.dask_hosts import local_cluster
with local_cluster(2) as address:
    print(address, flush=True)
    sys.stdin.read()
"""


@pytest.fixture(scope="session")
def dask_scheduler():
    """The address of a real Dask cluster of 2 local worker processes, or None without Dask. It runs
    in a process of its own: its workers are no children of this one, which the pod page's tests
    count to see their own workers gone."""
    if importlib.util.find_spec("distributed") is None:
        yield None
        return
    cluster = subprocess.Popen(
        [sys.executable, "-c", _DASK_CLUSTER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert cluster.stdin is not None and cluster.stdout is not None
    address = cluster.stdout.readline().strip()
    assert address, "the Dask cluster did not start"
    yield address
    cluster.stdin.close()
    cluster.wait(60)


@pytest.fixture(scope="session")
def pod_trace(pod_run):
    """pod_trace(scenario) -> the loaded Trace of that run (all hosts, loaded once, without the cache)."""
    traces: dict[str, object] = {}

    def get(scenario: str):
        if scenario not in traces:
            traces[scenario] = open_trace(pod_run(scenario), use_cache=False)
        return traces[scenario]

    return get


@pytest.fixture(scope="session")
def jax_host_file(tmp_path_factory) -> Path:
    """A real JAX CPU recording: one host's profile (recorded once per session)."""
    return record_training_profile(tmp_path_factory.mktemp("pod_page_jax"), steps=4)


@pytest.fixture
def many_hosts(tmp_path, jax_host_file) -> Path:
    """A run folder of MANY_HOSTS host files (hard links to the recording, each with its own name)."""
    run = tmp_path / "plugins" / "profile" / "run_many"
    run.mkdir(parents=True)
    for i in range(MANY_HOSTS):
        os.link(jax_host_file, run / f"host{i:02d}.xplane.pb")
    return run


@pytest.fixture
def window(qtbot, tmp_path):
    """The main window with settings of its own, shown and exposed at 1500x1000."""
    from PySide6.QtCore import QSettings

    from tests.ui.widgets import show_exposed
    from tpuscope.ui.main_window import MainWindow

    settings = QSettings(str(tmp_path / "tpuscope.ini"), QSettings.IniFormat)
    win = show_exposed(qtbot, MainWindow(settings), 1500, 1000)
    yield win
    win.wait_for_background_work()
