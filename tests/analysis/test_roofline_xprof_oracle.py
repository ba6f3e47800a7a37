"""The roofline's dots agree with XProf's roofline_model tool on the real TPU v6e profile.

XProf's converter (the `xprof` package) is the oracle, as for the op table: every op XProf places
(FLOP rate and operational intensity above zero) is a dot of ours with the same FLOP rate and
intensity, the ridge point is XProf's HBM ridge point, and no dot is one XProf does not have.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from tests.conftest import TPU_TRACE
from tpuscope.analysis.ops import roofline_points
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace

RATE_TOLERANCE = 0.01  # as the op table's times: within 1%


@pytest.fixture(scope="module")
def xprof_roofline(tmp_path_factory):
    from xprof.convert.raw_to_tool_data import xspace_to_tool_data

    copy = tmp_path_factory.mktemp("xprof") / TPU_TRACE.name
    shutil.copyfile(TPU_TRACE, copy)
    data, content_type = xspace_to_tool_data([str(copy)], "roofline_model", {})
    assert content_type == "application/json"
    table = json.loads(data)[0]
    columns = [c["id"] for c in table["cols"]]
    rows = [dict(zip(columns, [cell.get("v") for cell in row["c"]], strict=True)) for row in table["rows"]]
    return table["p"], [r for r in rows if r["step"] == "Total" and r["category"] != "Program"]


def test_dots_match_xprof_roofline_model(xprof_roofline):
    properties, rows = xprof_roofline
    table = TraceAnalysis(open_trace(TPU_TRACE)).op_table("op")
    assert table is not None
    points = roofline_points(table)
    ours = {
        (table.label(table.program[r]).rsplit("(", 1)[1].rstrip(")"), table.label(table.name[r])): (i, f)
        for r, i, f in zip(points.rows, points.intensity, points.flop_rate, strict=True)
    }
    placed = [r for r in rows if r["measured_flop_rate"] > 0 and r["operational_intensity"] > 0]
    assert placed, "XProf placed no op; the oracle would be empty"
    for theirs in placed:
        key = (theirs["hlo_module_id"], theirs["operation"])
        assert key in ours, f"XProf places {key} but tpuscope does not"
        intensity, flop_rate = ours[key]
        assert intensity == pytest.approx(theirs["operational_intensity"], rel=1e-6), key
        assert flop_rate / 1e9 == pytest.approx(theirs["measured_flop_rate"], rel=RATE_TOLERANCE), key
    # XProf lists an op once per core group it ran on; each listing has the same rates (checked above).
    assert set(ours) == {(r["hlo_module_id"], r["operation"]) for r in placed}
    assert table.peaks is not None
    assert table.peaks.ridge_flops_per_byte == pytest.approx(float(properties["hbm_ridge_point"]), rel=1e-4)
    assert table.peaks.teraflops_per_second * 1e3 == pytest.approx(float(properties["peak_flop_rate"]))


def test_dots_of_one_program():
    table = TraceAnalysis(open_trace(TPU_TRACE)).op_table("op")
    assert table is not None
    every = roofline_points(table)
    assert every.programs[0].startswith("jit_f(")
    one = roofline_points(table, every.programs[0])
    assert 0 < len(one) < len(every)
    assert np.all(table.program[one.rows] == table.labels.index(every.programs[0]))
    assert len(roofline_points(table, "no such program")) == 0
    with pytest.raises(ValueError):
        roofline_points(TraceAnalysis(open_trace(TPU_TRACE)).op_table("category"))
