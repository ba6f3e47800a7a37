"""The host-by-host engine is chosen one way and Dask is driven from one module.

`--workers WHERE` (else TPUSCOPE_WORKERS, else one process per core) says where a pod's hosts are
analysed, for the CLI, the app's pod page and scripts alike; a value it cannot read is one sentence
(exit 2). Only `tpuscope.app.dask_hosts` imports Dask, so the rest of tpuscope runs without it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import tpuscope
from tpuscope.app.hosts import HostPool
from tpuscope.app.where import WORKERS_ENV, Where, default_workers, parse_where

PACKAGE = Path(tpuscope.__file__).parent


def test_where_reads_the_option_then_the_environment_then_the_cores(monkeypatch):
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    assert parse_where(None) == Where(default_workers())
    assert parse_where("here") == parse_where("0") == Where(0)
    assert parse_where("3") == Where(3)
    assert parse_where("tcp://10.0.0.5:8786") == Where(scheduler="tcp://10.0.0.5:8786")
    monkeypatch.setenv(WORKERS_ENV, "here")
    assert parse_where(None) == Where(0)
    assert parse_where("2") == Where(2)  # the option wins
    assert HostPool().where == "this process"
    for wrong in ("-1", "many", "2.5"):
        with pytest.raises(ValueError, match="Dask scheduler"):
            parse_where(wrong)


def test_only_one_module_imports_dask():
    importers = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            if any(name.split(".")[0] in ("dask", "distributed") for name in names):
                importers.add(path.relative_to(PACKAGE).as_posix())
    assert importers == {"app/dask_hosts.py"}


def test_a_where_the_cli_cannot_read_is_one_sentence(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "tpuscope", "overview", str(tmp_path), "--workers", "lots"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert "--workers" in result.stderr and "'lots'" in result.stderr and "Traceback" not in result.stderr
