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
(`duckdb.extract_statements`): reading (SELECT, EXPLAIN, DESCRIBE, PRAGMA of the catalog) and
in-memory views, tables and macros of the session's own; anything else is refused before it runs.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from tpuscope.model.trace import Trace
from tpuscope.query.engine import open_locked
from tpuscope.query.tables import TABLES, TRACE_COLUMNS, TableSpec, TraceColumns

if TYPE_CHECKING:
    from tpuscope.analysis.session import TraceAnalysis

_ALL_EVENT_COLUMNS = frozenset(c.name for c in TABLES["events"].columns)

# Statement kinds a query may be: reading, and the session's own in-memory objects.
# Parse-tree nodes that read every column of a table.
_WHOLE_ROW_NODES = frozenset({"STAR", "POSITIONAL_REFERENCE"})
ALLOWED_STATEMENTS = frozenset({"SELECT", "EXPLAIN", "CREATE", "DROP", "PRAGMA", "CALL"})
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
    "ALTER": "ALTER",
    "TRANSACTION": "transaction control",
}
_LINE = re.compile(r"LINE (\d+): [^\n]*\n( *)\^")


class QueryError(Exception):
    """A query that was refused, did not parse, or failed: one sentence for the user."""


@dataclass(frozen=True)
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

    def __init__(self, source: TraceAnalysis | Trace, connection: duckdb.DuckDBPyConnection | None = None):
        self._analysis: TraceAnalysis | None = None if isinstance(source, Trace) else source
        self.trace: Trace = source if isinstance(source, Trace) else source.trace
        self._own_columns: TraceColumns | None = None
        self.connection = open_locked() if connection is None else connection
        self._registered: set[str] = set()
        self._lock = threading.Lock()

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
    def sql(self, query: str) -> duckdb.DuckDBPyRelation | None:
        """The result of the query's last statement as a DuckDB relation (None when it returns no rows:
        a CREATE); `QueryError` when refused or failing."""
        statements = self._statements(query)
        try:
            trees = [self._tree(s) for s in statements]
            names = set().union(*(self._tables_named(s, t) for s, t in zip(statements, trees, strict=True)))
            self.register(names, _columns_named(trees) if "events" in names else None)
        except duckdb.Error as error:
            raise QueryError(describe_error(error)) from None
        try:
            for statement in statements[:-1]:  # a SELECT's rows are fetched; others run when made
                earlier = self.connection.sql(statement.query)
                if earlier is not None:
                    earlier.fetchall()
            return self.connection.sql(statements[-1].query)
        except duckdb.Error as error:
            raise QueryError(describe_error(error)) from None

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
            kind = statement.type.name
            if kind not in ALLOWED_STATEMENTS:
                what = _STATEMENT_WORDS.get(kind, f"a {kind} statement")
                raise QueryError(f"{what} is refused: a query reads the profile's tables and nothing else.")
        return statements


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


def describe_error(error: duckdb.Error) -> str:
    """DuckDB's message in one sentence: its first line, and where a parse error is (line, column)."""
    text = str(error)
    first = text.split("\n", 1)[0].strip()
    where = _LINE.search(text)
    if where is not None:
        line, caret = int(where.group(1)), where.group(2)
        column = len(caret) - len(f"LINE {line}: ") + 1
        first = f"{first.rstrip('.')} (line {line}, column {max(column, 1)})"
    if isinstance(error, duckdb.OutOfMemoryException):
        return f"the query ran out of memory ({first}); add a LIMIT or aggregate first."
    if isinstance(error, duckdb.InterruptException):
        return "the query was cancelled."
    if isinstance(error, duckdb.PermissionException):
        return f"{first.rstrip('.')}: a query reads the profile's tables and nothing else."
    if "configuration has been locked" in first:
        return f"{first.rstrip('.')}: settings cannot be changed by a query."
    return first if first.endswith(".") else first + "."
