"""The op breakdown agrees with XProf's own hlo_stats tool on the real TPU v6e profile.

XProf's converter (the `xprof` package) is an independent implementation; the test compares every
op XProf lists with tpuscope's `--device all` rows: occurrences exactly, total and self time within 1%.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import TPU_TRACE
from tpuscope.analysis.ops import op_breakdown
from tpuscope.app.opener import open_trace
from tpuscope.cli import main

TIME_TOLERANCE = 0.01  # the acceptance bound: total and self time within 1%


@pytest.fixture(scope="module")
def xprof_rows(tmp_path_factory):
    """XProf's hlo_stats rows for a copy of the TPU profile (XProf writes a cache beside its input)."""
    from xprof.convert.raw_to_tool_data import xspace_to_tool_data

    copy = tmp_path_factory.mktemp("xprof") / TPU_TRACE.name
    shutil.copyfile(TPU_TRACE, copy)
    data, content_type = xspace_to_tool_data([str(copy)], "hlo_stats", {})
    assert content_type == "application/json"
    table = json.loads(data)
    columns = [c["id"] for c in table["cols"]]
    rows = [dict(zip(columns, [cell.get("v") for cell in row["c"]], strict=True)) for row in table["rows"]]
    assert rows, "XProf listed no ops; the oracle would be empty"
    return rows


def _key(program_label: str, op_name: str) -> tuple[str, str]:
    """(program id, op name): our program label is `<module>(<id>)`."""
    return program_label.rsplit("(", 1)[1].rstrip(")"), op_name


def _compare(ours_rows, xprof_rows):
    ours = {_key(r["program"], r["name"]): r for r in ours_rows}
    assert len(ours) == len(ours_rows), "op rows must be unique per (program, op)"
    for theirs in xprof_rows:
        key = (theirs["program_id"], theirs["hlo_op_name"])
        assert key in ours, f"XProf lists {key} but tpuscope does not"
        mine = ours[key]
        assert mine["occurrences"] == theirs["occurrences"], key
        assert mine["total_time_us"] == pytest.approx(theirs["total_time"], rel=TIME_TOLERANCE), key
        assert mine["self_time_us"] == pytest.approx(theirs["total_self_time"], rel=TIME_TOLERANCE), key
        assert mine["category"] == theirs["category"], key
    # Nothing extra either: every device op of ours is one XProf counts.
    assert len(ours) == len(xprof_rows)


def test_op_rows_match_xprof_hlo_stats(xprof_rows):
    table = op_breakdown(open_trace(TPU_TRACE), device="all", by="op")
    _compare(table.rows_json(), xprof_rows)


def test_cli_json_matches_xprof_hlo_stats(xprof_rows, capsys):
    assert main(["ops", str(TPU_TRACE), "--device", "all", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["device"] == "all" and payload["by"] == "op"
    selfs = [r["self_time_us"] for r in payload["rows"]]
    assert selfs == sorted(selfs, reverse=True), "rows must be sorted by self time"
    _compare(payload["rows"], xprof_rows)


def test_flop_rate_and_bound_by_agree_with_xprof(xprof_rows):
    table = op_breakdown(open_trace(TPU_TRACE), device="all", by="op")
    ours = {_key(r["program"], r["name"]): r for r in table.rows_json()}
    for theirs in xprof_rows:
        mine = ours[(theirs["program_id"], theirs["hlo_op_name"])]
        assert (mine["flop_rate_gflops"] or 0.0) == pytest.approx(theirs["model_flop_rate"], rel=1e-3)
        # XProf names the bottleneck memory ("HBM", ...) or compute; every op here is memory bound.
        assert mine["bound_by"] == ("compute" if theirs["bound_by"] == "Compute" else "memory")
