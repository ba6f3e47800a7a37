"""The locked DuckDB connection a query session runs on, and opening it beside other work.

Opening DuckDB's database is C++ that releases the GIL (20-35 ms on the 2-core benchmark machine:
benchmarks/README.md, the sql section), so `tpuscope sql` opens it in a thread while the main
thread imports pyarrow, loads the profile and builds the events table, all of which hold the GIL.
On a first open the load is mostly a decode whose C loops release the GIL, and then the thread
imports DuckDB and the query modules too (`imports`): Python under the GIL, run while the decode
does not need it. From the cache the load holds the GIL throughout and the imports stay on the
caller's thread (a thread there only adds hand-offs: benchmarks/README.md). This module imports
duckdb only when asked, so the thread can start before that import.

The lockdown is DuckDB's own settings (https://duckdb.org/docs/stable/operations_manual/
securing_duckdb/overview), set when the database opens, then `lock_configuration` so no query
changes any of it. DuckDB's own cap on memory is 80% of RAM (https://duckdb.org/docs/stable/
configuration/overview, `memory_limit`): one query could take most of the machine from the app and
everything beside it, so the connection opens with `DEFAULT_MEMORY_LIMIT_BYTES` instead, and
without a temporary directory, so a query past the limit stops instead of spilling files into the
working folder. `QueryLimits` carries that limit with a query's time limit and row cap.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tpuscope.model.records import record

if TYPE_CHECKING:
    import duckdb

# DuckDB's lockdown (see the module docstring); every option is one DuckDB documents.
LOCKED_CONFIG: dict[str, str | bool] = {
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "python_enable_replacements": False,
}

# DuckDB's memory for one session: at most this (our heuristic: a query over a 60M-event profile's
# events needs well under it, benchmarks/README.md, the sql section) ...
MEMORY_LIMIT_CEILING_BYTES = 4 * 2**30
# ... and at most this share of the machine's RAM (our heuristic: the app, its analyses and the
# rest of the machine keep the other three quarters).
MEMORY_LIMIT_RAM_SHARE = 0.25
# A query's wall-clock limit by default (our heuristic: the slowest query in the benchmarks takes
# seconds, benchmarks/README.md; a runaway one stops in minutes, not never). 0 or None: no limit.
DEFAULT_TIMEOUT_S = 300.0
# Rows a query returns by default, the rest cut with a note (our heuristic: a million rows is past
# what anyone reads; CSV exports past it pass --max-rows). 0 or None: no cap.
DEFAULT_MAX_ROWS = 1_000_000


def machine_ram_bytes() -> int | None:
    """Physical memory from POSIX sysconf; None where it is not known (Windows)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def default_memory_limit_bytes() -> int:
    """min(MEMORY_LIMIT_CEILING_BYTES, MEMORY_LIMIT_RAM_SHARE of the RAM)."""
    ram = machine_ram_bytes()
    if ram is None:
        return MEMORY_LIMIT_CEILING_BYTES
    return max(1, min(MEMORY_LIMIT_CEILING_BYTES, int(ram * MEMORY_LIMIT_RAM_SHARE)))


@record(frozen=True)
class QueryLimits:
    """A query's bounds: wall-clock seconds, DuckDB's memory limit in bytes, rows returned
    (None: unbounded). The memory limit is the connection's, set when it opens."""

    timeout_s: float | None = DEFAULT_TIMEOUT_S
    memory_limit_bytes: int | None = None  # None: default_memory_limit_bytes()
    max_rows: int | None = DEFAULT_MAX_ROWS

    def memory_bytes(self) -> int:
        return self.memory_limit_bytes or default_memory_limit_bytes()


def format_bytes(count: int) -> str:
    """`count` bytes for a sentence: 4.0 GiB, 512 MiB."""
    if count >= 2**30:
        return f"{count / 2**30:.1f} GiB"
    return f"{count / 2**20:.0f} MiB" if count >= 2**20 else f"{count:,} bytes"


_SIZE_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
               "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}  # fmt: skip


def parse_size(text: str) -> int:
    """'4GB', '512MiB', '1000000' -> bytes; ValueError with one sentence otherwise."""
    cleaned = text.strip().upper().replace(" ", "")
    number = cleaned.rstrip("KMGTIB")
    unit = cleaned[len(number) :]
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if unit not in _SIZE_UNITS or not value > 0 or value * _SIZE_UNITS[unit] > 2**62:
        raise ValueError(f"{text!r} is not a memory size (e.g. 2GB, 512MiB).")
    return max(1, int(value * _SIZE_UNITS[unit]))


def open_locked(memory_limit_bytes: int | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory database that reads what is registered on it and nothing else, within
    `memory_limit_bytes` (None: `default_memory_limit_bytes()`)."""
    import duckdb

    memory = memory_limit_bytes or default_memory_limit_bytes()
    config: dict[str, str | bool | int | float | list[str]] = {
        **LOCKED_CONFIG,
        "memory_limit": f"{memory}B",
        "temp_directory": "",
    }
    connection = duckdb.connect(":memory:", config=config)
    connection.sql("SET lock_configuration = true")
    return connection


class OpeningConnection:
    """`open_locked()` running in a thread from construction; `result()` waits for it (and raises
    what it raised). A connection never asked for is closed by `close()`.

    With `imports` (module names), the thread imports duckdb and those modules before it opens the
    database; without, duckdb is imported on the caller's thread before the thread starts."""

    def __init__(self, imports: Sequence[str] = (), memory_limit_bytes: int | None = None) -> None:
        self._memory_limit_bytes = memory_limit_bytes
        self._connection: duckdb.DuckDBPyConnection | None = None
        self._error: BaseException | None = None
        self._taken = False
        self._imports = ("duckdb", *imports) if imports else ()
        if not imports:
            import duckdb  # noqa: F401  # on this thread: see the module docstring
        self._thread = threading.Thread(target=self._open, name="duckdb_open", daemon=True)
        self._thread.start()

    def _open(self) -> None:
        try:
            for module in self._imports:
                importlib.import_module(module)
            self._connection = open_locked(self._memory_limit_bytes)
        except BaseException as error:  # raised in the thread that asks for the connection
            self._error = error

    def result(self) -> duckdb.DuckDBPyConnection:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._connection is not None  # set: the thread finished without an error
        self._taken = True
        return self._connection

    def close(self) -> None:
        """Closes the connection unless `result()` handed it out."""
        self._thread.join()
        if self._connection is not None and not self._taken:
            self._connection.close()
