"""The pod passes' workers start before the first task and come up without the analysis imported.

`HostPool.start` starts the local worker processes at once (each importing what the tasks read
with), so that the caller's own work overlaps their start; a pass on a started pool gives the same
summaries as each host file read in this process. Importing `tpuscope.app.hosts` imports neither the
analysis nor numpy: a caller can start the workers first.
"""

from __future__ import annotations

import multiprocessing
import shutil
import subprocess
import sys

import numpy as np

from tests.paths import SHARED_TRACES
from tpuscope.app import hosts
from tpuscope.store import pod_results

HOST_FILES = ("tpu/tpu_v6e_inference_4chip.xplane.pb", "tensorflow/tf_keras_cpu_prefetch.xplane.pb")


def test_importing_the_passes_imports_no_analysis():
    code = (
        "import sys, tpuscope.app.hosts; "
        "print(sorted(m for m in sys.modules if m.startswith('tpuscope.analysis') or m == 'numpy'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_kinds_are_the_caches():
    assert (hosts.LIGHT, hosts.FULL) == (pod_results.LIGHT, pod_results.FULL)


def test_a_started_pool_summarizes_as_this_process_does(tmp_path, monkeypatch):
    monkeypatch.setenv("TPUSCOPE_NO_CACHE", "1")
    files = []
    for i, name in enumerate(HOST_FILES):
        files.append(str(tmp_path / f"host{i}.xplane.pb"))
        shutil.copy(SHARED_TRACES / name, files[-1])
    pool = hosts.HostPool("2")
    pool.start(len(files))
    try:
        assert len(multiprocessing.active_children()) == 2  # started before any task was given
        outcomes: list[hosts.HostOutcome] = []
        hosts.pass_over(pool, files, hosts.LIGHT, lambda: False, outcomes.append)
    finally:
        pool.close()
    by_index = {o.index: o for o in outcomes}
    assert sorted(by_index) == [0, 1]
    for index, path in enumerate(files):
        outcome = by_index[index]
        assert outcome.error is None and outcome.kind == hosts.LIGHT
        here, _ = hosts.read_host_file(path, hosts.LIGHT)
        for theirs, ours in zip(outcome.results, here, strict=True):
            assert theirs.host == ours.host and theirs.event_count == ours.event_count
            for part, values in ours.summary.parts.items():
                assert np.array_equal(theirs.summary.parts[part], values)
            assert theirs.summary.evidence == ours.summary.evidence
            assert theirs.summary.busiest_op == ours.summary.busiest_op
