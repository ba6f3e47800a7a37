"""The connection `tpuscope sql` opens in a thread beside the load is as locked as one opened inline."""

from __future__ import annotations

import duckdb
import pytest

from tpuscope.query.engine import OpeningConnection, open_locked


@pytest.mark.parametrize("opened_in_thread", [False, True], ids=["inline", "thread"])
def test_the_lockdown_holds_however_the_connection_was_opened(opened_in_thread, tmp_path):
    outside = tmp_path / "outside.csv"
    outside.write_text("a\n1\n")
    connection = OpeningConnection().result() if opened_in_thread else open_locked()
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
