"""`tpuscope sql PATH QUERY`: SQL over the profile's tables (events, tracks, args, flows, counters,
ops, steps, findings, memory_*), on DuckDB, read-only; `--schema` lists the tables.

Rows stream: they are fetched and printed a batch at a time, so a huge result never sits in
memory whole (text and CSV as they come; JSON as `{"columns": [...], "rows": [[...], ...]}`).
"""

from __future__ import annotations

import csv
import json
import os
import sys

from tpuscope.commands import COMMANDS, UserFacingError
from tpuscope.commands._console import add_path_argument, load_for_cli
from tpuscope.query.cells import csv_cell, json_cell, text_cell

# Rows fetched from DuckDB per batch while printing.
FETCH_ROWS = 10_000
# What a query imports beyond duckdb, in the order it needs them.
QUERY_MODULES = ("pyarrow", "tpuscope.query.session")
# Cores a first open's decode keeps busy: the XPlane decoder's pool (`_MAX_THREADS` in
# tpuscope/readers/xplane/decode.py). Only on a machine with more cores do the engine's imports
# run beside the decode instead of taking its cores: on 2 cores, importing in the thread cost 50 ms
# more CPU and gained no wall time; with a core left free it was 90-170 ms faster in two runs of
# three (benchmarks/README.md, the sql section; `bench_sql.py --overlap`).
DECODE_POOL_CORES = 4


def register(subparsers) -> None:
    parser = subparsers.add_parser("sql", help=COMMANDS["sql"])
    add_path_argument(parser)
    parser.add_argument(
        "query", nargs="?",
        help='the SQL query (DuckDB\'s dialect), e.g. "SELECT name, count(*), sum(dur_ps) FROM events '
        'GROUP BY name ORDER BY 3 DESC LIMIT 10"',
    )  # fmt: skip
    parser.add_argument("--schema", action="store_true", help="list the tables and their columns")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help='print {"columns": [...], "rows": [[...], ...]}')
    output.add_argument("--csv", action="store_true", help="print CSV")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from tpuscope.query.session import schema_rows

    if args.schema:
        rows = schema_rows()
        if args.json:
            _print_json_rows(["table", "column", "type", "meaning"],
                             ([r.table, r.column, r.type, r.meaning] for r in rows))  # fmt: skip
            return 0
        _print_schema(rows)
        return 0
    if not args.query:
        raise UserFacingError("give a QUERY (or --schema to list the tables).")
    from tpuscope.query.engine import OpeningConnection

    # DuckDB starts in a thread while the profile loads; on a first open (a decode, which releases
    # the GIL) with a core the decode leaves free, the thread imports it and the query modules too.
    overlap = _free_core_beside_decode() and _decodes_first(args)
    opening = OpeningConnection(imports=QUERY_MODULES if overlap else ())
    try:
        from tpuscope.query.session import QueryError, QuerySession, describe_error

        trace = load_for_cli(args)
    except BaseException:
        opening.close()
        raise
    session = QuerySession(trace, opening.result())  # the analyses are made only if a table needs them
    try:
        relation = session.sql(args.query)
        if relation is None:
            return 0
        columns = list(relation.columns)
        batches = _batches(relation, describe_error)
        if args.json:
            _print_json_rows(columns, batches)
        elif args.csv:
            writer = csv.writer(sys.stdout, lineterminator="\n")
            writer.writerow(columns)
            for row in batches:
                writer.writerow([csv_cell(v) for v in row])
        else:
            _print_text(columns, batches)
    except QueryError as error:
        raise UserFacingError(str(error)) from None
    finally:
        session.close()
    return 0


def _decodes_first(args) -> bool:
    """The store's cache probe for this command's path, run and --no-cache."""
    from tpuscope.store.probe import decodes_first

    return decodes_first(args.path, getattr(args, "run", None), not getattr(args, "no_cache", False))


def _free_core_beside_decode() -> bool:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cores = os.cpu_count() or 1
    return cores > DECODE_POOL_CORES


def _batches(relation, describe_error):
    """The relation's rows as DuckDB produces them, FETCH_ROWS at a time (the result is never held
    whole); a failure while running is a QueryError."""
    import duckdb

    from tpuscope.query.session import QueryError

    try:
        for batch in relation.to_arrow_reader(FETCH_ROWS):  # DuckDB's streaming result
            yield from zip(*(column.to_pylist() for column in batch.columns), strict=True)
    except duckdb.Error as error:
        raise QueryError(describe_error(error)) from None


def _print_json_rows(columns: list[str], rows) -> None:
    out = sys.stdout
    out.write('{"columns": ' + json.dumps(columns) + ', "rows": [')
    first = True
    for row in rows:
        out.write(("\n  " if first else ",\n  ") + json.dumps([json_cell(v) for v in row]))
        first = False
    out.write("\n]}\n" if not first else "]}\n")


def _print_text(columns: list[str], rows) -> None:
    """Aligned columns, a batch at a time (each batch's widths from the header and the batch)."""
    count = 0
    batch: list[list[str]] = []

    def flush(header: bool) -> None:
        cells = [[text_cell(v) for v in row] for row in batch]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
        if header:
            print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
            print("  ".join("-" * w for w in widths))
        for r in cells:
            print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())

    for row in rows:
        batch.append(row)
        count += 1
        if len(batch) == FETCH_ROWS:
            flush(count == FETCH_ROWS)
            batch = []
    if batch or count == 0:
        flush(count <= FETCH_ROWS)
    print(f"({count:,} row{'s' if count != 1 else ''})")


def _print_schema(rows) -> None:
    from tpuscope.query.tables import TABLES

    width = max(len(r.column) for r in rows)
    type_width = max(len(r.type) for r in rows if len(r.type) < 20)
    for name, spec in TABLES.items():
        print(f"{name}: {spec.meaning}")
        for r in rows:
            if r.table == name:
                print(f"  {r.column:<{width}}  {r.type:<{type_width}}  {r.meaning}")
        print()
