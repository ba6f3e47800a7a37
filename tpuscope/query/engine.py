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
changes any of it.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

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


def open_locked() -> duckdb.DuckDBPyConnection:
    """An in-memory database that reads what is registered on it and nothing else."""
    import duckdb

    connection = duckdb.connect(":memory:", config=dict(LOCKED_CONFIG))
    connection.sql("SET lock_configuration = true")
    return connection


class OpeningConnection:
    """`open_locked()` running in a thread from construction; `result()` waits for it (and raises
    what it raised). A connection never asked for is closed by `close()`.

    With `imports` (module names), the thread imports duckdb and those modules before it opens the
    database; without, duckdb is imported on the caller's thread before the thread starts."""

    def __init__(self, imports: Sequence[str] = ()) -> None:
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
            self._connection = open_locked()
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
