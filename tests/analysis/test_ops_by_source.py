"""Device time by source line and by framework op, on a real JAX CPU recording of a program run
from a file and on the real TPU profile: the rows add up to the per-op total exactly, and the line
that holds the biggest matmul comes first."""

from __future__ import annotations

import json

import pytest

from tests.conftest import TPU_TRACE
from tests.jax_recordings import record_source_profile
from tpuscope.analysis.ops import NO_SOURCE
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    program, profile = record_source_profile(tmp_path_factory.mktemp("by_source"))
    lines = program.read_text().splitlines()
    big_matmul = next(k for k, line in enumerate(lines, 1) if "BIG_MATMUL" in line)
    return program, profile, big_matmul


@pytest.mark.parametrize("by", ["source", "framework"])
def test_rows_add_up_to_the_per_op_total_exactly(recording, by):
    for trace in (open_trace(recording[1]), open_trace(TPU_TRACE)):
        analysis = TraceAnalysis(trace)
        per_op, grouped = analysis.op_table("op"), analysis.op_table(by)
        assert int(grouped.self_ps.sum()) == int(per_op.self_ps.sum()) == int(per_op.events.self_ps.sum())
        assert int(grouped.total_ps.sum()) == int(per_op.total_ps.sum())
        assert int(grouped.occurrences.sum()) == int(per_op.occurrences.sum())


def test_the_big_matmuls_line_comes_first(recording, capsys):
    program, profile, big_matmul = recording
    assert main(["ops", str(profile), "--by", "source", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    rows = payload["rows"]
    assert payload["by"] == "source"
    assert rows[0]["name"] == f"{program}:{big_matmul}"
    assert rows[0]["function"] == "layer"
    assert rows[0]["ops"], "a line folds in the ops it made"
    assert rows[0]["percent"] > 50.0
    ops = [op for r in rows for op in r["ops"]]
    assert len(ops) == len(set(ops)), "each op is on one line"
    assert all(r["name"].startswith(f"{program}:") for r in rows), "every op of this program has a line"

    assert main(["ops", str(profile), "--by", "source"]) == 0
    text = capsys.readouterr().out
    table = text.split("source ", 1)[1].splitlines()
    assert f"{program.name}:{big_matmul}" in table[1] and "layer" in table[1]


def test_ops_without_a_line_are_one_row(capsys):
    """The TPU profile's copies carry no source: they are the `(no source)` row."""
    assert main(["ops", str(TPU_TRACE), "--by", "source", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert NO_SOURCE in rows
    assert any(op.startswith("copy-done") for op in rows[NO_SOURCE]["ops"])
    lines = [name for name in rows if name != NO_SOURCE]
    assert any(name.endswith("host_offload_stress_test.py:29") for name in lines)


def test_by_framework_names_ops_from_their_program_code(recording, capsys):
    """XLA:CPU thunks carry no framework-op stat: their program's code names it."""
    assert main(["ops", str(recording[1]), "--by", "framework", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[0]["name"] == "jit(layer)/dot_general"
    assert "(none)" not in {r["name"] for r in rows}


def test_op_rows_carry_the_frame_index_stack(recording, capsys):
    program, profile, big_matmul = recording
    assert main(["ops", str(profile), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    first = rows[0]
    assert first["source"] == f"{program}:{big_matmul}"
    assert first["stack"][0].startswith(f"{program}:{big_matmul}:") and len(first["stack"]) == 3
    assert first["framework_op"] == "jit(layer)/dot_general"
    assert first["hlo_text"].startswith(f"%{first['name']} = ")
    assert isinstance(first["program_id"], int)
