"""SQL that is interruptible and bounded (issue 39): Ctrl-C stops a real `tpuscope sql` process
within 2 s with one sentence, every time; a runaway query stops at its time or memory limit; the
row cap cuts with a note; DDL and DML are refused in one sentence; a Stop from another thread
(the app's) stops a query even when it comes before the query started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import SAMPLES
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.query.engine import QueryLimits, default_memory_limit_bytes, machine_ram_bytes, parse_size
from tpuscope.query.session import QueryError, QuerySession

SAMPLE = SAMPLES / "jax_cpu_healthy.xplane.pb"
# A query that runs for minutes and prints nothing until it ends ...
SILENT_RUNAWAY = "SELECT count(*) FROM range(1000000000000)"
# ... and one that prints rows all along (a process blocked writing them must stop too).
STREAMING_RUNAWAY = "SELECT range FROM range(1000000000000)"
# What the issue asks: Ctrl-C stops a running query within this long.
STOP_WITHIN_S = 2.0
# Generous bounds for a loaded machine: startup and load, and a time limit's overshoot.
STARTUP_BOUND_S = 60.0
OVERSHOOT_BOUND_S = 15.0


def _one_sentence(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.strip().splitlines() if "warning:" not in line]
    assert len(lines) == 1 and lines[0].startswith("tpuscope: "), stderr
    return lines[0]


def _start(query: str, *extra: str) -> subprocess.Popen:
    """`tpuscope sql` as a terminal runs it: SIGINT at its default (a shell's background job
    inherits it ignored), output unbuffered so the first row shows when it is printed."""
    return subprocess.Popen(
        [sys.executable, "-m", "tpuscope", "sql", str(SAMPLE), query, "--no-cache", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _interrupt(process: subprocess.Popen) -> tuple[float, str]:
    """Sends SIGINT; the seconds until the process ended, and its stderr."""
    drained: list[bytes] = []
    drain = threading.Thread(target=lambda: drained.append(process.stdout.read()), daemon=True)  # type: ignore[union-attr]
    drain.start()
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    try:
        process.wait(STARTUP_BOUND_S)
    finally:
        if process.poll() is None:
            process.kill()
    took = time.monotonic() - sent
    drain.join()
    return took, process.stderr.read().decode()  # type: ignore[union-attr]


def test_ctrl_c_stops_a_streaming_query_every_time():
    ready_times = []
    for extra_delay in (0.0, 0.2, 0.5, 1.0, 1.5):
        process = _start(STREAMING_RUNAWAY, "--csv", "--max-rows", "0")
        started = time.monotonic()
        assert process.stdout is not None
        header = process.stdout.readline()  # the query runs: its rows are coming
        assert header.strip() == b"range"
        ready_times.append(time.monotonic() - started)
        time.sleep(extra_delay)
        took, stderr = _interrupt(process)
        assert process.returncode == 130, stderr
        assert _one_sentence(stderr) == "tpuscope: interrupted."
        assert took < STOP_WITHIN_S, (extra_delay, took)


def test_ctrl_c_stops_a_silent_query_every_time():
    # The time to the first row of a streaming query, measured here, says when a query is running.
    process = _start(STREAMING_RUNAWAY, "--csv", "--max-rows", "0")
    started = time.monotonic()
    assert process.stdout is not None
    process.stdout.readline()
    ready = time.monotonic() - started
    _interrupt(process)
    for extra_delay in (0.5, 1.0, 2.0):
        process = _start(SILENT_RUNAWAY)
        time.sleep(ready * 1.5 + extra_delay)
        took, stderr = _interrupt(process)
        assert process.returncode == 130, stderr
        assert _one_sentence(stderr) == "tpuscope: interrupted."
        assert took < STOP_WITHIN_S, (extra_delay, took)


def test_a_runaway_query_stops_at_its_time_limit(capsys):
    started = time.monotonic()
    assert main(["sql", str(SAMPLE), SILENT_RUNAWAY, "--timeout", "1"]) == 2
    took = time.monotonic() - started
    captured = capsys.readouterr()
    line = _one_sentence(captured.err)
    assert "time limit of 1 s" in line and "--timeout" in line
    assert took < 1 + OVERSHOOT_BOUND_S


def test_a_runaway_query_stops_at_its_memory_limit(capsys):
    assert (
        main(["sql", str(SAMPLE), "SELECT list(range) FROM range(300000000)", "--memory-limit", "100MB"]) == 2
    )
    line = _one_sentence(capsys.readouterr().err)
    assert "memory limit of 95 MiB" in line and "--memory-limit" in line


def test_the_default_memory_limit_is_well_below_the_ram():
    ram = machine_ram_bytes()
    assert ram is None or default_memory_limit_bytes() <= ram // 4
    assert default_memory_limit_bytes() <= 4 * 2**30
    session = QuerySession(open_trace(SAMPLE))
    try:
        (setting,) = session.sql("SELECT current_setting('memory_limit')").fetchall()[0]
    finally:
        session.close()
    assert setting.endswith("iB") and not setting.startswith("0")


def test_the_row_cap_cuts_with_a_note(capsys):
    assert main(["sql", str(SAMPLE), "SELECT id FROM events", "--csv", "--max-rows", "5"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["id", "0", "1", "2", "3", "4"]
    assert "the first 5 rows" in _one_sentence(captured.err)
    assert main(["sql", str(SAMPLE), "SELECT id FROM events", "--csv", "--max-rows", "0"]) == 0
    assert len(capsys.readouterr().out.splitlines()) > 1000


@pytest.mark.parametrize("option, value", [("--timeout", "-1"), ("--timeout", "soon"), ("--max-rows", "-5"),
                                           ("--memory-limit", "lots"), ("--memory-limit", "0")])  # fmt: skip
def test_bad_limits_are_refused_by_the_parser(capsys, option, value):
    with pytest.raises(SystemExit) as exit_info:
        main(["sql", str(SAMPLE), "SELECT 1", option, value])
    assert exit_info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_sizes_parse():
    assert parse_size("4GB") == 4 * 10**9
    assert parse_size("512MiB") == 512 * 2**20
    assert parse_size("1000") == 1000
    with pytest.raises(ValueError):
        parse_size("99999999999999999999TB")


@pytest.mark.parametrize(
    "query, words",
    [
        ("CREATE TABLE t AS SELECT 1", "CREATE"),
        ("CREATE TABLE t (a INTEGER)", "CREATE"),
        ("CREATE VIEW long AS SELECT * FROM events", "CREATE"),
        ("CREATE OR REPLACE VIEW events AS SELECT 1", "CREATE"),
        ("CREATE TEMP TABLE t AS SELECT 1", "CREATE"),
        ("CREATE MACRO twice(x) AS 2 * x", "CREATE"),
        ("CREATE SEQUENCE s", "CREATE"),
        ("CREATE TYPE mood AS ENUM ('a', 'b')", "CREATE"),
        ("DROP VIEW events", "DROP"),
        ("DROP TABLE IF EXISTS events", "DROP"),
        ("INSERT INTO events (id) VALUES (1)", "INSERT"),
        ("UPDATE events SET name = 'x'", "UPDATE"),
        ("DELETE FROM events", "DELETE"),
        ("ALTER VIEW events RENAME TO old", "ALTER"),
        ("COMMENT ON VIEW events IS 'x'", "ALTER"),
        ("CALL pragma_version()", "CALL"),
        ("PRAGMA enable_profiling", "PRAGMA enable_profiling"),
        ("PREPARE p AS SELECT 1", "PREPARE"),
        ("BEGIN TRANSACTION", "transaction"),
        ("VACUUM", "VACUUM"),
        ("EXPLAIN ANALYZE CREATE TABLE t AS SELECT 1", "EXPLAIN of CREATE"),
        ("SELECT 1; DROP VIEW events", "DROP"),
    ],
)
def test_ddl_and_dml_are_refused_in_one_sentence(capsys, query, words):
    assert main(["sql", str(SAMPLE), query]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    line = _one_sentence(captured.err)
    assert words in line and "refused" in line and "profile's tables" in line


@pytest.mark.parametrize(
    "query",
    [
        "DESCRIBE events",
        "SUMMARIZE tracks",
        "SHOW TABLES",
        "WITH n AS (SELECT count(*) AS c FROM events) SELECT c FROM n",
        "PRAGMA table_info('events')",
        "PRAGMA version",
        "EXPLAIN SELECT count(*) FROM events",
        "EXPLAIN ANALYZE SELECT count(*) FROM events",
        "FROM tracks LIMIT 1",
    ],
)
def test_reads_run(capsys, query):
    assert main(["sql", str(SAMPLE), query, "--json"]) == 0
    assert capsys.readouterr().out.startswith('{"columns"')


def test_the_tables_survive_refused_writes():
    session = QuerySession(TraceAnalysis(open_trace(SAMPLE)))
    try:
        (before,) = session.sql("SELECT count(*) FROM events").fetchall()[0]
        for query in ("DROP VIEW events", "CREATE OR REPLACE VIEW events AS SELECT 1"):
            with pytest.raises(QueryError):
                session.sql(query)
        assert session.sql("SELECT count(*) FROM events").fetchall()[0] == (before,)
    finally:
        session.close()


@pytest.mark.parametrize("stop_before_start", [True, False])
def test_a_stop_from_another_thread_stops_the_query(stop_before_start):
    """The app's Stop: an Event set from the window's thread, before or while the query runs."""
    session = QuerySession(open_trace(SAMPLE), limits=QueryLimits(timeout_s=STARTUP_BOUND_S))
    cancel = threading.Event()
    if stop_before_start:
        cancel.set()
    else:
        threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    try:
        with pytest.raises(QueryError, match="cancelled"):
            run = session.run(SILENT_RUNAWAY, cancel=cancel)
            list(run.batches())
    finally:
        session.close()
    assert time.monotonic() - started < STARTUP_BOUND_S


def test_interrupt_stops_the_api_query():
    """`interrupt()` from another thread (sent until the query is seen stopped: one sent before
    `run` starts the query is dropped, as DuckDB drops it)."""
    session = QuerySession(open_trace(SAMPLE), limits=QueryLimits(timeout_s=STARTUP_BOUND_S))
    stopped = threading.Event()

    def interrupt_until_stopped() -> None:
        while not stopped.wait(0.2):
            session.interrupt()

    interrupter = threading.Thread(target=interrupt_until_stopped, daemon=True)
    interrupter.start()
    try:
        with pytest.raises(QueryError, match="cancelled"):
            session.sql(SILENT_RUNAWAY)
        stopped.set()
        interrupter.join()
        assert session.sql("SELECT 42").fetchall() == [(42,)]  # the session still works
    finally:
        stopped.set()
        interrupter.join()
        session.close()


def test_the_api_warns_when_it_cuts_rows():
    session = QuerySession(open_trace(SAMPLE), limits=QueryLimits(max_rows=3))
    try:
        with pytest.warns(UserWarning, match="cut at 3 rows"):
            relation = session.sql("SELECT id FROM events")
        assert relation.fetchall() == [(0,), (1,), (2,)]
        unbounded = QueryLimits(max_rows=None)
        assert len(session.sql("SELECT id FROM events", unbounded).fetchall()) > 1000
    finally:
        session.close()
