"""Hosts in natural order (issue 37: a 16-host pod listed host0, host1, host10, ..., host2): the key,
and a run folder's files, hence its hosts, in that order."""

from __future__ import annotations

import os

from tests.conftest import SAMPLES
from tpuscope.model.hosts import natural_key
from tpuscope.readers.files import list_runs


def test_numbers_in_names_sort_as_numbers():
    names = ["host10", "host2", "host1", "host0", "host11", "host9"]
    assert sorted(names, key=natural_key) == ["host0", "host1", "host2", "host9", "host10", "host11"]
    assert sorted(["w-1-b", "w-1-a", "w-01-c"], key=natural_key) == ["w-1-a", "w-1-b", "w-01-c"]
    assert sorted(["B", "a", "10", "2"], key=natural_key) == [
        "2",
        "10",
        "a",
        "B",
    ]  # numbers first, no TypeError
    assert sorted(["tpu-host-10", "tpu-host-9"], key=natural_key) == ["tpu-host-9", "tpu-host-10"]


def test_a_runs_files_and_hosts_come_in_natural_order(tmp_path):
    run = tmp_path / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    for i in range(12):
        os.link(SAMPLES / "jax_cpu_pod_straggler" / "worker0.xplane.pb", run / f"host{i}.xplane.pb")
    (only,) = list_runs(tmp_path)
    assert only.hosts == [f"host{i}" for i in range(12)]
