"""The connection `tpuscope sql` opens in a thread beside the load is as locked as one opened inline."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import duckdb
import pytest

from tests.conftest import SAMPLES
from tpuscope.query.engine import OpeningConnection, open_locked
from tpuscope.store.traces import has_entry, wait_for_writes

SAMPLE = SAMPLES / "tpu_v6e_inference_4chip.xplane.pb"


def _opened(how: str):
    if how == "inline":
        return open_locked()
    if how == "thread":
        return OpeningConnection().result()
    return OpeningConnection(imports=("pyarrow", "tpuscope.query.session")).result()  # as on a first open


@pytest.mark.parametrize("how", ["inline", "thread", "thread, imports too"])
def test_the_lockdown_holds_however_the_connection_was_opened(how, tmp_path):
    outside = tmp_path / "outside.csv"
    outside.write_text("a\n1\n")
    connection = _opened(how)
    try:
        assert connection.execute("SELECT 40 + 2").fetchall() == [(42,)]
        with pytest.raises(duckdb.Error):
            connection.execute(f"SELECT * FROM read_csv('{outside}')").fetchall()
        with pytest.raises(duckdb.Error):
            connection.execute("SET enable_external_access = true")
    finally:
        connection.close()


def test_a_connection_never_asked_for_is_closed():
    opening = OpeningConnection()
    opening.close()
    with pytest.raises(duckdb.Error):
        opening._connection.execute("SELECT 1")  # type: ignore[union-attr]  # opened, then closed


def test_an_import_that_fails_in_the_thread_is_raised_by_result():
    opening = OpeningConnection(imports=("tpuscope.no_such_module",))
    with pytest.raises(ModuleNotFoundError, match="tpuscope.no_such_module"):
        opening.result()
    opening.close()  # nothing was opened: nothing to close, and no error


def _sql_process(path, query, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tpuscope", "sql", str(path), query, "--json"],
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip


def test_a_first_open_and_a_cached_open_answer_alike(tmp_path, monkeypatch):
    """In fresh processes, as a user runs it: the first `sql` of a profile decodes it (with DuckDB's
    imports in the connection's thread where a core is free beside the decode), the second reads the
    cache (the imports on the main thread)."""
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TPUSCOPE_NO_CACHE", raising=False)
    env = dict(os.environ)
    query = "SELECT name, count(*) AS n, sum(dur_ps) AS total FROM events GROUP BY name ORDER BY name"
    assert not has_entry([SAMPLE])
    first = _sql_process(SAMPLE, query, env)
    assert first.returncode == 0, first.stderr
    wait_for_writes()  # the first process's entry, finished by its detached writer
    assert has_entry([SAMPLE])
    second = _sql_process(SAMPLE, query, env)
    assert second.returncode == 0, second.stderr
    rows = json.loads(first.stdout)["rows"]
    assert rows and rows == json.loads(second.stdout)["rows"]


def test_a_missing_profile_is_one_sentence_on_either_path(tmp_path):
    missing = tmp_path / "nothing_here.xplane.pb"
    for extra in ({}, {"TPUSCOPE_NO_CACHE": "1"}):
        done = _sql_process(missing, "SELECT 1", dict(os.environ, **extra))
        assert done.returncode == 2 and done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tpuscope: "), done.stderr
        assert "nothing_here" in lines[0]
