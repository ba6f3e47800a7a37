"""`tpuscope sql PATH QUERY`: SQL over the profile's tables (events, tracks, args, flows, counters,
ops, steps, findings, memory_*), on DuckDB, read-only; `--schema` lists the tables.

Rows stream: they are fetched and printed a batch at a time, so a huge result never sits in
memory whole (text and CSV as they come; JSON as `{"columns": [...], "rows": [[...], ...]}`).
A query is bounded (`tpuscope.query.engine.QueryLimits`): `--timeout`, `--memory-limit` and
`--max-rows` change the defaults; Ctrl-C stops it (DuckDB's interrupt) with one sentence, exit 130
as every command's Ctrl-C (tpuscope/cli.py).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys

from tpuscope.commands import COMMANDS, UserFacingError
from tpuscope.commands._console import add_path_argument, load_for_cli
from tpuscope.query.cells import csv_cell, json_cell, text_cell

# Rows printed per aligned block of the text output.
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
    from tpuscope.query.engine import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_S, MEMORY_LIMIT_CEILING_BYTES

    parser.add_argument(
        "--timeout", type=_seconds, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
        help=f"stop the query after this long (default {DEFAULT_TIMEOUT_S:g}; 0: no limit)",
    )  # fmt: skip
    parser.add_argument(
        "--memory-limit", type=_size, default=None, metavar="SIZE",
        help=f"DuckDB's memory for the query, e.g. 2GB, 512MiB (default: a quarter of the RAM, "
        f"at most {MEMORY_LIMIT_CEILING_BYTES // 2**30} GiB)",
    )  # fmt: skip
    parser.add_argument(
        "--max-rows", type=_row_count, default=DEFAULT_MAX_ROWS, metavar="N",
        help=f"print at most N rows (default {DEFAULT_MAX_ROWS:,}; 0: all)",
    )  # fmt: skip
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
    from tpuscope.query.engine import QueryLimits

    limits = QueryLimits(args.timeout or None, args.memory_limit, args.max_rows or None)
    opening = OpeningConnection(
        imports=QUERY_MODULES if overlap else (), memory_limit_bytes=limits.memory_bytes()
    )
    try:
        from tpuscope.query.session import QueryError, QuerySession

        trace = load_for_cli(args)
    except BaseException:
        opening.close()
        raise
    # the analyses are made only if a table needs them
    session = QuerySession(trace, opening.result(), limits)
    run = None
    try:
        run = session.run(args.query)
        columns = run.columns
        batches = _rows(run)
        if args.json:
            _print_json_rows(columns, batches)
        elif args.csv:
            writer = csv.writer(sys.stdout, lineterminator="\n")
            writer.writerow(columns)
            for row in batches:
                writer.writerow([csv_cell(v) for v in row])
        else:
            _print_text(columns, batches)
        if run.cut:
            print(f"tpuscope: the first {run.rows:,} rows are printed; the result has more "
                  "(--max-rows to change).", file=sys.stderr)  # fmt: skip
    except QueryError as error:
        raise UserFacingError(str(error)) from None
    finally:
        if run is not None:
            run.close()  # stops the query first when printing was interrupted (Ctrl-C, a closed pipe)
        session.close()
    return 0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0: no limit).")
    return value


def _size(text: str) -> int:
    from tpuscope.query.engine import parse_size

    try:
        return parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _row_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of rows (0: all).")
    return value


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


def _rows(run):
    """The run's rows as Python values, a batch at a time (the result is never held whole)."""
    for batch in run.batches():
        yield from zip(*(column.to_pylist() for column in batch.columns), strict=True)


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
