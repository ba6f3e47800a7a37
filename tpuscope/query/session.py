"""SQL over one trace: a DuckDB connection that can read the trace's tables and nothing else.

DuckDB (https://duckdb.org) runs in-process and scans the Arrow tables of `tables.py` where they
lie. A table is built the first time a query names it (DuckDB's own parser lists the names), so a
query over `events` never computes the diagnosis, and one over `findings` never concatenates the
events.

Safety comes from DuckDB's own settings (`engine.py`; https://duckdb.org/docs/stable/
operations_manual/securing_duckdb/overview), locked before any query runs: no external access
(no COPY, ATTACH, file or network table functions, no extension installs), no extension
autoloading, no replacement scans of Python variables, and `lock_configuration` so no query
changes any of it. The statement kinds a query may be are checked by DuckDB's parser too
(`duckdb.extract_statements`, `duckdb.tokenize`): reading only (SELECT with WITH, DESCRIBE,
SUMMARIZE, SHOW; EXPLAIN of a SELECT; the PRAGMAs that read the catalog). Anything else, a
CREATE, DROP or INSERT into the session's own memory included, is refused before it runs: a query
that replaced `events` would break every later query and the app's query tracks.

A query is bounded (`QueryLimits`): it runs in a worker thread while the caller's thread waits in
short slices, so Ctrl-C (KeyboardInterrupt in the caller's thread), `interrupt()` from another
thread, or the time limit interrupts it through DuckDB's `connection.interrupt()`, repeated until
the worker has stopped; DuckDB's `memory_limit` is set when the connection opens (`engine.py`),
and at most `max_rows` rows are fetched.
"""

from __future__ import annotations

import json
import queue
import re
import threading
import time
import warnings
from collections.abc import Generator, Iterable, Iterator
from dataclasses import field
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from tpuscope.model.records import record
from tpuscope.model.trace import Trace
from tpuscope.query.engine import QueryLimits, format_bytes, open_locked
from tpuscope.query.tables import TABLES, TRACE_COLUMNS, TableSpec, TraceColumns

if TYPE_CHECKING:
    from tpuscope.analysis.session import TraceAnalysis

_ALL_EVENT_COLUMNS = frozenset(c.name for c in TABLES["events"].columns)

# Parse-tree nodes that read every column of a table.
_WHOLE_ROW_NODES = frozenset({"STAR", "POSITIONAL_REFERENCE"})
# Statement kinds a query may be (DuckDB's StatementType names): SELECT covers WITH, DESCRIBE,
# SUMMARIZE, SHOW and VALUES; EXPLAIN only of a SELECT; PRAGMA only of READ_PRAGMAS.
ALLOWED_STATEMENTS = frozenset({"SELECT", "EXPLAIN", "PRAGMA"})
# The PRAGMAs that only read the catalog or the build (https://duckdb.org/docs/stable/configuration/
# pragmas): the others change settings (refused by the lock) or run work (checkpoints, profiling).
READ_PRAGMAS = frozenset({
    "table_info", "show", "show_tables", "show_tables_expanded", "show_databases", "database_list",
    "database_size", "version", "platform", "functions", "collations", "user_agent", "metadata_info",
    "storage_info",
})  # fmt: skip
_REFUSED_WHY = "a query reads the profile's tables and nothing else."
_STATEMENT_WORDS = {
    "COPY": "COPY (writing or reading files)",
    "ATTACH": "ATTACH (opening other databases)",
    "DETACH": "DETACH",
    "LOAD": "INSTALL/LOAD (extensions)",
    "SET": "SET/RESET (settings)",
    "VARIABLE_SET": "SET VARIABLE",
    "EXPORT": "EXPORT DATABASE",
    "INSERT": "INSERT",
    "UPDATE": "UPDATE",
    "DELETE": "DELETE",
    "MERGE_INTO": "MERGE",
    "ALTER": "ALTER",
    "CREATE": "CREATE (tables, views, macros, types)",
    "DROP": "DROP",
    "CALL": "CALL",
    "MULTI": "PIVOT without an IN list (it creates types)",
    "TRANSACTION": "transaction control",
    "PREPARE": "PREPARE",
    "EXECUTE": "EXECUTE",
    "VACUUM": "VACUUM/ANALYZE",
}
# How often the caller's thread wakes while a query runs, to pass on Ctrl-C, a Stop or the time
# limit (our heuristic: well under the 2 s a Ctrl-C must take, negligible CPU).
POLL_S = 0.1
# Rows DuckDB hands over per Arrow batch.
FETCH_ROWS = 10_000
# Batches the worker may run ahead of the caller (a bounded queue: the result never sits whole).
QUEUED_BATCHES = 2
_LINE = re.compile(r"LINE (\d+): [^\n]*\n( *)\^")


class QueryError(Exception):
    """A query that was refused, did not parse, or failed: one sentence for the user."""


@record
class QueryRun:
    """A running query's result: its columns and types, then its rows as Arrow batches
    (`batches()`, iterated once); `cut` is true after the iteration when rows past the cap were
    left. A failure while running is a QueryError; Ctrl-C a KeyboardInterrupt, after the query
    stopped."""

    columns: list[str]
    types: list[str]
    schema: pa.Schema
    _batches: Iterator[pa.RecordBatch] = field(default_factory=lambda: iter(()), repr=False)
    cut: bool = False
    rows: int = 0

    def batches(self) -> Iterator[pa.RecordBatch]:
        return self._batches

    def close(self) -> None:
        """Stops the query if it still runs (the rest of its rows are not wanted)."""
        close = getattr(self._batches, "close", None)
        if close is not None:
            close()


@record(frozen=True)
class SchemaRow:
    table: str
    column: str
    type: str
    meaning: str


class QuerySession:
    """One trace's tables behind a locked DuckDB connection (see the module docstring).

    Not for concurrent queries from several threads; `interrupt()` may be called from any thread
    to cancel the query running now.

    `connection`, when given, is one `engine.open_locked()` made (the CLI opens it beside the load).
    Made over a `TraceAnalysis`, its tables share the analysis's results (the app's tabs, the API);
    made over a bare `Trace` (the CLI), the analysis is made when a table other than `events` and
    its `step` need it, so a query over events never imports the analyses.
    """

    def __init__(
        self,
        source: TraceAnalysis | Trace,
        connection: duckdb.DuckDBPyConnection | None = None,
        limits: QueryLimits | None = None,
    ):
        self._analysis: TraceAnalysis | None = None if isinstance(source, Trace) else source
        self.trace: Trace = source if isinstance(source, Trace) else source.trace
        self._own_columns: TraceColumns | None = None
        self.limits = limits or QueryLimits()
        self.connection = open_locked(self.limits.memory_bytes()) if connection is None else connection
        self._registered: set[str] = set()
        self._lock = threading.Lock()
        self._stop_requested = threading.Event()

    @property
    def analysis(self) -> TraceAnalysis:
        """The trace's analyses (made now when the session was made over a bare trace)."""
        if self._analysis is None:
            from tpuscope.analysis.session import TraceAnalysis

            self._analysis = TraceAnalysis(self.trace)
        return self._analysis

    def _event_columns(self) -> TraceColumns:
        if self._analysis is not None and self._own_columns is None:
            return self._analysis.get(TRACE_COLUMNS)
        if self._own_columns is None:
            self._own_columns = TraceColumns(self.trace, lambda: self.analysis.steps)
        return self._own_columns

    # -- tables --------------------------------------------------------------------------------
    def register(self, names: Iterable[str], event_columns: set[str] | None = None) -> None:
        """Builds and registers the named tables not registered yet (unknown names are left alone);
        of `events`, the columns in `event_columns` (None: all), re-registered when it lacks some."""
        with self._lock:
            for name in names:
                key = name.lower()
                if key == "events":
                    columns = self._event_columns()
                    if key not in self._registered or not (
                        (event_columns or _ALL_EVENT_COLUMNS) <= columns.built()
                    ):
                        self.connection.register(key, columns.table(event_columns))
                        self._registered.add(key)
                elif key in TABLES and key not in self._registered:
                    self.connection.register(key, TABLES[key].build(self.analysis))
                    self._registered.add(key)

    def arrow(self, name: str):
        """The table `name` as a pyarrow Table."""
        if name not in TABLES:
            raise QueryError(f"there is no table {name!r}; the tables are {', '.join(TABLES)}.")
        self.register([name])
        return self.connection.table(name).to_arrow_table()

    # -- queries -------------------------------------------------------------------------------
    def sql(self, query: str, limits: QueryLimits | None = None) -> duckdb.DuckDBPyRelation:
        """The result of the query's last statement, run within the limits (the session's unless
        given; the memory limit is always the connection's), as a DuckDB relation over its rows
        (at most `max_rows` of them, with a UserWarning when more were left); `QueryError` when
        refused, failing or past a limit."""
        run = self.run(query, limits)
        table = pa.Table.from_batches(list(run.batches()), schema=run.schema)
        if run.cut:  # a notebook sees the cut: no row count is ever silently short
            warnings.warn(
                f"the result was cut at {run.rows:,} rows; pass limits=QueryLimits(max_rows=None) "
                "(tpuscope.query.engine) for all of them, or add a LIMIT or aggregate.",
                stacklevel=2,
            )
        return self.connection.from_arrow(table)

    def run(
        self, query: str, limits: QueryLimits | None = None, cancel: threading.Event | None = None
    ) -> QueryRun:
        """Checks and starts the query (see the module docstring); its rows come as they are made.
        `cancel`, set from any thread (before the query starts or while it runs), stops it as
        `interrupt()` does: the app passes one per Run, so a Stop that comes before the worker
        reached the query is not lost."""
        limits = limits or self.limits
        stop_requested = (
            self._stop_requested if cancel is None else _EitherEvent(self._stop_requested, cancel)
        )
        statements = self._statements(query)
        try:
            trees = [self._tree(s) for s in statements]
            names = set().union(*(self._tables_named(s, t) for s, t in zip(statements, trees, strict=True)))
            self.register(names, _columns_named(trees) if "events" in names else None)
        except duckdb.Error as error:
            raise QueryError(describe_error(error, limits)) from None
        self._stop_requested.clear()
        messages: queue.Queue = queue.Queue(maxsize=QUEUED_BATCHES)
        stop = threading.Event()
        work = (statements, messages, stop, limits.max_rows)
        worker = threading.Thread(target=self._work, args=work, name="duckdb_query", daemon=True)
        deadline = time.monotonic() + limits.timeout_s if limits.timeout_s else None
        worker.start()
        waiting = self._wait(worker, messages, stop, deadline, limits, stop_requested)
        kind, payload = next(waiting)
        assert kind == "columns"
        columns, types, schema = payload
        run = QueryRun(columns, types, schema)
        run._batches = self._rows(run, waiting)
        return run

    def _rows(
        self, run: QueryRun, waiting: Generator[tuple[str, Any], None, None]
    ) -> Iterator[pa.RecordBatch]:
        try:
            for kind, payload in waiting:
                if kind == "batch":
                    run.rows += payload.num_rows
                    yield payload
                elif kind == "cut":
                    run.cut = True
        finally:
            waiting.close()  # stops the query when the caller stops early

    def _work(
        self, statements: list, messages: queue.Queue, stop: threading.Event, max_rows: int | None
    ) -> None:
        """The worker: runs the statements, puts ("columns", ...), each ("batch", ...), ("cut", None)
        when rows were left, then ("done", None) or ("error", exception)."""

        def put(item: tuple[str, Any]) -> bool:
            while not stop.is_set():
                try:
                    messages.put(item, timeout=POLL_S)
                    return True
                except queue.Full:
                    continue
            return False

        try:
            for statement in statements[:-1]:  # run for their errors; only the last one's rows show
                self.connection.execute(statement.query)
            relation = self.connection.sql(statements[-1].query)
            reader = relation.to_arrow_reader(FETCH_ROWS)  # DuckDB's streaming result
            schema = reader.schema
            if not put(("columns", (list(relation.columns), [str(t) for t in relation.types], schema))):
                return
            taken = 0
            for batch in reader:
                if max_rows and taken + batch.num_rows > max_rows:
                    if put(("batch", batch.slice(0, max_rows - taken))):
                        put(("cut", None))
                    break
                taken += batch.num_rows
                if not put(("batch", batch)):
                    return
            put(("done", None))
        except BaseException as error:  # handed to the caller's thread, which raises it
            put(("error", error))

    def _wait(
        self, worker: threading.Thread, messages: queue.Queue, stop: threading.Event,
        deadline: float | None, limits: QueryLimits, stop_requested: threading.Event | _EitherEvent,
    ) -> Generator[tuple[str, Any], None, None]:  # fmt: skip
        """The worker's messages in the caller's thread, which wakes every POLL_S to interrupt the
        query on a Stop or at the deadline; on Ctrl-C or when the caller stops early, the query is
        interrupted and the worker waited for."""
        timed_out = False
        try:
            while True:
                try:
                    kind, payload = messages.get(timeout=POLL_S)
                except queue.Empty:
                    if deadline is not None and time.monotonic() > deadline:
                        timed_out = True
                    if timed_out or stop_requested.is_set():
                        self.connection.interrupt()  # again each slice: one sent before it ran is lost
                    continue
                if kind == "error":
                    if isinstance(payload, duckdb.InterruptException) and not timed_out:
                        if stop_requested.is_set():
                            raise QueryError("the query was cancelled.")
                    if isinstance(payload, duckdb.Error):
                        raise QueryError(describe_error(payload, limits, timed_out)) from None
                    if isinstance(payload, MemoryError):
                        raise QueryError(_memory_sentence(limits, "")) from None
                    raise payload
                if kind == "done":
                    return
                yield kind, payload
        finally:
            stop.set()
            self._stop_worker(worker)

    def _stop_worker(self, worker: threading.Thread) -> None:
        """Interrupts the query until its worker ends (a second Ctrl-C meanwhile is swallowed: the
        first one is already being carried out)."""
        while worker.is_alive():
            try:
                self.connection.interrupt()
                worker.join(POLL_S)
            except KeyboardInterrupt:
                continue

    def _tree(self, statement) -> dict | None:
        """A SELECT's parse tree as DuckDB serializes it (None for other statements or on error)."""
        if statement.type.name != "SELECT":
            return None
        serialized = self.connection.sql("SELECT json_serialize_sql(?)", params=[statement.query])
        tree = json.loads(serialized.fetchall()[0][0])
        return None if tree.get("error") else tree

    def _tables_named(self, statement, tree: dict | None) -> set[str]:
        """The tables a statement reads: a SELECT's from its parse tree; of another statement (CREATE
        VIEW ..., EXPLAIN), every table whose name it contains as a word (DuckDB's `get_table_names`
        binds them, so it fails on a table not registered yet, and the connection's keeps what it
        bound, so a re-registered `events` would not be seen)."""
        if tree is None:
            return {name for name in TABLES if re.search(rf"\b{name}\b", statement.query, re.IGNORECASE)}
        return _base_tables(tree)

    def interrupt(self) -> None:
        """Stops the query running now, from any thread (repeated by the waiting thread until the
        query has stopped: DuckDB drops an interrupt that comes before the query starts)."""
        self._stop_requested.set()
        self.connection.interrupt()

    def close(self) -> None:
        self.connection.close()

    def _statements(self, query: str) -> list:
        try:  # the session's connection parses: the module's functions would start a second database
            statements = self.connection.extract_statements(query)
        except duckdb.Error as error:
            raise QueryError(describe_error(error)) from None
        if not statements:
            raise QueryError("the query is empty.")
        for statement in statements:
            refused = self._refusal(statement)
            if refused is not None:
                raise QueryError(f"{refused} is refused: {_REFUSED_WHY}")
        return statements

    def _refusal(self, statement) -> str | None:
        """What the statement is, when it is not a read (None when it is)."""
        kind = statement.type.name
        if kind == "SELECT":
            return None
        if kind == "PRAGMA":
            name = _pragma_name(statement.query)
            return None if name in READ_PRAGMAS else f"PRAGMA {name}"
        if kind == "EXPLAIN":
            explained = self._explained(statement.query)
            if explained is None or explained.type.name == "SELECT":
                return None
            what = self._refusal(explained)
            return f"EXPLAIN of {what}" if what else None
        return _STATEMENT_WORDS.get(kind, f"a {kind} statement")

    def _explained(self, query: str):
        """The statement an EXPLAIN [ANALYZE] [(options)] explains, parsed by DuckDB from each of the
        EXPLAIN's token offsets in turn (None when none parses: DuckDB then fails the EXPLAIN)."""
        for offset, _kind in duckdb.tokenize(query)[1:]:
            try:
                inner = self.connection.extract_statements(query[offset:])
            except duckdb.Error:
                continue
            if len(inner) == 1 and inner[0].type.name != "EXPLAIN":
                return inner[0]
        return None


class _EitherEvent:
    """Set when either event is."""

    def __init__(self, first: threading.Event, second: threading.Event) -> None:
        self._events = (first, second)

    def is_set(self) -> bool:
        return any(event.is_set() for event in self._events)


def _pragma_name(query: str) -> str:
    """The name after PRAGMA, from DuckDB's tokens (lower case)."""
    tokens = duckdb.tokenize(query)
    if len(tokens) < 2:
        return ""
    start = tokens[1][0]
    end = tokens[2][0] if len(tokens) > 2 else len(query)
    return query[start:end].strip().lower()


def _memory_sentence(limits: QueryLimits, detail: str) -> str:
    detail = f" ({detail.rstrip('.')})" if detail else ""
    return (f"the query stopped at its memory limit of {format_bytes(limits.memory_bytes())}{detail}; "
            "add a LIMIT or aggregate first, or raise the memory limit (--memory-limit).")  # fmt: skip


def _columns_named(trees: list[dict | None]) -> set[str] | None:
    """The column names the query's SELECT statements reference, from DuckDB's own parse tree;
    None (every column) when any reads whole rows (`*`, COLUMNS(...), a table alias as a value,
    NATURAL joins, positional references) or is not a plain SELECT."""
    found: set[str] = set()
    for tree in trees:
        names = None if tree is None else _column_references(tree)
        if names is None:
            return None
        found |= names
    return found


def _base_tables(tree: Any) -> set[str]:
    """The table names (lower case) a serialized SELECT reads, in every subquery and CTE."""
    names: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if node.get("type") == "BASE_TABLE" and node.get("table_name"):
                names.add(str(node["table_name"]).lower())
            stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
    return names


def _column_references(tree: Any) -> set[str] | None:
    """Every column name a serialized statement references (all parts of each dotted name, so an
    over-estimate), or None when it reads whole rows."""
    names: set[str] = set()
    aliases: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        kind = node.get("class") or node.get("type")
        if (
            kind in _WHOLE_ROW_NODES
            or node.get("ref_type") == "NATURAL"
            or node.get("join_ref_type") == "NATURAL"
        ):
            return None
        if kind == "COLUMN_REF":
            names.update(str(n).lower() for n in node.get("column_names") or [])
        if kind == "BASE_TABLE":
            aliases.update(str(n).lower() for n in (node.get("alias"), node.get("table_name")) if n)
        for key in ("using_columns",):
            names.update(str(n).lower() for n in node.get(key) or [])
        stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
    if names & aliases:  # `SELECT e FROM events e`: the whole row as one value
        return None
    return names


def schema_rows() -> list[SchemaRow]:
    """Every table's columns with their SQL type and one line of meaning."""
    return [
        SchemaRow(spec.name, column.name, sql_type(column.type), column.meaning)
        for spec in TABLES.values()
        for column in spec.columns
    ]


def table_specs() -> list[TableSpec]:
    return list(TABLES.values())


def sql_type(arrow_type: pa.DataType) -> str:
    """The DuckDB type a column of `arrow_type` reads as (a dictionary reads as its values' type)."""
    if pa.types.is_dictionary(arrow_type):
        return sql_type(arrow_type.value_type)
    if pa.types.is_list(arrow_type):
        return sql_type(arrow_type.value_type) + "[]"
    if pa.types.is_struct(arrow_type):
        return "STRUCT(" + ", ".join(f"{f.name} {sql_type(f.type)}" for f in arrow_type) + ")"
    return _SQL_TYPES[str(arrow_type)]


_SQL_TYPES = {"int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT", "uint64": "UBIGINT",
              "double": "DOUBLE", "string": "VARCHAR", "bool": "BOOLEAN"}  # fmt: skip


def describe_error(error: duckdb.Error, limits: QueryLimits | None = None, timed_out: bool = False) -> str:
    """DuckDB's message in one sentence: its first line, and where a parse error is (line, column);
    an interrupt at the time limit (`timed_out`) and running out of memory name the limit."""
    text = str(error)
    first = text.split("\n", 1)[0].strip()
    where = _LINE.search(text)
    if where is not None:
        line, caret = int(where.group(1)), where.group(2)
        column = len(caret) - len(f"LINE {line}: ") + 1
        first = f"{first.rstrip('.')} (line {line}, column {max(column, 1)})"
    limits = limits or QueryLimits()
    if isinstance(error, duckdb.OutOfMemoryException):
        return _memory_sentence(limits, first)
    if isinstance(error, duckdb.InterruptException):
        if timed_out:
            return (f"the query stopped at its time limit of {limits.timeout_s:g} s; add a LIMIT or "
                    "aggregate first, or raise the time limit (--timeout).")  # fmt: skip
        return "the query was cancelled."
    if isinstance(error, duckdb.PermissionException):
        return f"{first.rstrip('.')}: {_REFUSED_WHY}"
    if "configuration has been locked" in first:
        return f"{first.rstrip('.')}: settings cannot be changed by a query."
    return first if first.endswith(".") else first + "."
