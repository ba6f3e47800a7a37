"""`tpuscope sql` end to end on real profiles: the tables hold what an independent reader and the other
commands' --json say, a query reads nothing but the profile, and bad queries are one sentence (exit 2)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from jax.profiler import ProfileData

from tests.conftest import ALL_SHARED_TRACES, SAMPLES, TPU_TRACE, require_shared_traces
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.model.vocabulary import Stat, TrackKind
from tpuscope.query.session import QuerySession
from tpuscope.query.tables import TABLES, TRACE_COLUMNS

SAMPLE = SAMPLES / "tpu_v6e_inference_4chip.xplane.pb"
CPU_SAMPLE = SAMPLES / "jax_cpu_healthy.xplane.pb"


def _sql(capsys, path, query, *extra) -> dict:
    assert main(["sql", str(path), query, "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def _refused(capsys, path, query) -> str:
    assert main(["sql", str(path), query]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tpuscope: "), captured.err
    return lines[0]


@pytest.mark.parametrize("path", [SAMPLE, *ALL_SHARED_TRACES[:6]], ids=lambda p: p.name)
def test_counts_per_track_equal_jax_reader(capsys, path):
    if path != SAMPLE:
        require_shared_traces()
    payload = _sql(
        capsys, path,
        "SELECT t.plane, t.line, count(e.id) FROM tracks t LEFT JOIN events e ON e.track_id = t.id "
        "GROUP BY t.id, t.plane, t.line ORDER BY t.id",
    )  # fmt: skip
    assert payload["columns"] == ["plane", "line", "count(e.id)"]
    theirs = [(plane.name, line.name, len(list(line.events)))
              for plane in ProfileData.from_file(str(path)).planes for line in plane.lines]  # fmt: skip
    assert [tuple(r) for r in payload["rows"]] == theirs


def test_names_and_durations_equal_the_model(capsys):
    payload = _sql(capsys, SAMPLE, "SELECT name, count(*), sum(dur_ps) FROM events GROUP BY name")
    trace = open_trace(SAMPLE)
    ours = {name: (count, total) for name, count, total in payload["rows"]}
    expected: Counter = Counter()
    totals: Counter = Counter()
    for track in trace.tracks():
        for name_id, dur in zip(track.name_id, track.duration_ps, strict=True):
            expected[trace.strings[int(name_id)]] += 1
            totals[trace.strings[int(name_id)]] += int(dur)
    assert ours == {name: (expected[name], totals[name]) for name in expected}


def test_op_columns_come_from_the_metadata(capsys):
    payload = _sql(
        capsys, SAMPLE,
        "SELECT category, count(*), sum(flops) FROM events e JOIN tracks t ON t.id = e.track_id "
        "WHERE t.kind = 'device_ops' GROUP BY category ORDER BY 2 DESC",
    )  # fmt: skip
    rows = {r[0]: r[1] for r in payload["rows"]}
    trace = open_trace(SAMPLE)
    expected: Counter = Counter()
    for track in trace.tracks():
        if track.kind == TrackKind.DEVICE_OPS:
            ids = track.stat_values(Stat.OP_CATEGORY, fill=-1)
            expected.update(trace.strings[int(i)] if i >= 0 else None for i in ids)
    assert rows == dict(expected) and rows["copy-done"] == 2400


def test_analysis_tables_hold_the_commands_json(capsys):
    assert main(["ops", str(SAMPLE), "--json"]) == 0
    ops = json.loads(capsys.readouterr().out)
    assert main(["diagnose", str(SAMPLE), "--json"]) == 0
    diagnose = json.loads(capsys.readouterr().out)
    assert main(["memory", str(SAMPLE), "--json"]) == 0
    memory = json.loads(capsys.readouterr().out)

    def records(table):
        payload = _sql(capsys, SAMPLE, f"SELECT * FROM {table}")
        return [dict(zip(payload["columns"], row, strict=True)) for row in payload["rows"]]

    assert records("ops") == ops["rows"]
    steps = records("steps")
    assert [{k: v for k, v in r.items() if k not in ("ts_ps", "dur_ps")} for r in steps] == ops["steps"][
        "rows"
    ]
    findings = records("findings")
    assert [f["id"] for f in findings] == [f["id"] for f in diagnose["findings"]]
    for ours, theirs in zip(findings, diagnose["findings"], strict=True):
        assert ours["impact"] == theirs["impact"] and ours["advice"] == theirs["advice"]
        assert json.loads(ours["metrics"]) == theirs["metrics"]
    live = [
        {"host": a["host"], "allocator": a["id"], **x}
        for a in memory["allocators"]
        for x in a["live_at_peak"]
    ]
    assert records("memory_allocations") == live and live


def test_a_table_without_data_is_empty_with_its_columns(capsys):
    payload = _sql(capsys, CPU_SAMPLE, "SELECT * FROM memory_allocations")
    assert payload == {"columns": [c.name for c in TABLES["memory_allocations"].columns], "rows": []}
    payload = _sql(capsys, CPU_SAMPLE, "SELECT * FROM flows")
    assert payload["columns"] == [c.name for c in TABLES["flows"].columns]


def test_only_the_columns_named_are_built():
    analysis = TraceAnalysis(open_trace(SAMPLE))
    session = QuerySession(analysis)
    session.sql("SELECT name, sum(dur_ps) FROM events GROUP BY name").fetchall()
    assert analysis.get(TRACE_COLUMNS).built() == {"name", "dur_ps"}
    assert "report" not in analysis.computed  # no table but events was named
    (count,) = session.sql("SELECT count(step) FROM events WHERE step IS NOT NULL").fetchall()[0]
    assert count > 0 and "step" in analysis.get(TRACE_COLUMNS).built()
    row = session.sql("SELECT * FROM events ORDER BY dur_ps DESC LIMIT 1").fetchall()[0]
    assert len(row) == len(TABLES["events"].columns) and row[0] is not None


def test_a_named_subquery_over_events_in_one_query(capsys):
    trace = open_trace(SAMPLE)
    payload = _sql(capsys, SAMPLE, "WITH long AS (SELECT * FROM events WHERE dur_ps > 1e6) "
                   "SELECT count(*) AS n FROM long")  # fmt: skip
    assert payload["rows"] == [[sum(int((t.duration_ps > 1e6).sum()) for t in trace.tracks())]]


def test_csv_and_text_outputs(capsys):
    assert main(["sql", str(SAMPLE), "SELECT id, severity FROM findings ORDER BY id", "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "id,severity" and len(lines) > 1
    assert main(["sql", str(SAMPLE), "SELECT 1 AS one WHERE false"]) == 0
    assert "(0 rows)" in capsys.readouterr().out


def test_schema_lists_every_table_with_meanings(capsys):
    assert main(["sql", str(SAMPLE), "--schema", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    tables = {row[0] for row in payload["rows"]}
    assert tables == set(TABLES)
    assert all(row[3] for row in payload["rows"])
    # Every documented type is the one DuckDB reads.
    session = QuerySession(TraceAnalysis(open_trace(SAMPLE)))
    for name in TABLES:
        described = {c: t for c, t, *_ in session.sql(f"DESCRIBE {name}").fetchall()}
        documented = {r[1]: r[2] for r in payload["rows"] if r[0] == name}
        assert described == documented, name


@pytest.mark.parametrize(
    "query, words",
    [
        ("COPY events TO 'out.csv'", "COPY"),
        ("COPY (SELECT 1) TO '/tmp/x.parquet'", "COPY"),
        ("ATTACH 'other.db'", "ATTACH"),
        ("INSTALL httpfs", "INSTALL/LOAD"),
        ("LOAD httpfs", "INSTALL/LOAD"),
        ("SELECT * FROM read_csv('/etc/passwd')", "disabled"),
        ("SELECT * FROM read_text('/etc/hostname')", "disabled"),
        ("SELECT * FROM 'https://example.com/x.parquet'", "disabled"),
        ("SELECT * FROM glob('/etc/*')", "disabled"),
        ("SELECT * FROM sniff_csv('/etc/passwd')", "disabled"),
        ("SET enable_external_access = true", "SET"),
        ("SET threads = 1", "SET"),
        ("RESET threads", "SET"),
        ("PRAGMA threads = 1", "SET"),
        ("SELECT current_setting('threads'); SET memory_limit = '1GB'", "SET"),
        ("EXPORT DATABASE 'dump'", "EXPORT"),
        ("SELECT version(); SELECT * FROM read_blob('/etc/hostname')", "disabled"),
    ],
)
def test_refused_with_one_sentence(capsys, query, words):
    line = _refused(capsys, SAMPLE, query)
    assert words in line
    assert "profile" in line or "settings" in line


def test_python_variables_are_not_tables(capsys):
    secret = {"x": [1]}  # noqa: F841  (a replacement scan would find it by name)
    line = _refused(capsys, SAMPLE, "SELECT * FROM secret")
    assert "secret" in line


def test_parse_errors_say_where(capsys):
    line = _refused(capsys, SAMPLE, "SELECT name,\n  count(*\nFROM events")
    assert "Parser Error" in line and "(line 3, column 1)" in line
    line = _refused(capsys, SAMPLE, "SELECT nope FROM events")
    assert "nope" in line
    line = _refused(capsys, SAMPLE, ";")
    assert "empty" in line


def test_missing_query_and_bad_path(capsys):
    assert main(["sql", str(SAMPLE)]) == 2
    assert "QUERY" in capsys.readouterr().err
    assert main(["sql", str(SAMPLE.with_name("missing.xplane.pb")), "SELECT 1"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_real_tpu_trace_counts(capsys):
    require_shared_traces()
    payload = _sql(capsys, TPU_TRACE, "SELECT count(*) FROM events")
    assert payload["rows"] == [[open_trace(TPU_TRACE).event_count]]
