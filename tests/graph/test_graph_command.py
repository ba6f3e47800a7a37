"""`tpuscope graph PATH OP` on real profiles: the operands an op's own HLO text names are its neighbours,
with edges operand -> user; --dot is DOT; fusions expand into what they fused; why-not-fused hints
name the rule; an unknown op or a profile without HLO is one sentence and exit 2."""

from __future__ import annotations

import json
import re
import warnings

import pytest

from tests.conftest import GPU_TRACE, SHARED_TRACES, TPU_TRACE
from tpuscope.app.opener import open_trace
from tpuscope.cli import main

OP = "broadcast_add_fusion.1"


def _graph(capsys, *args: str) -> dict:
    assert main(["graph", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _operands_in_event_name(path, op: str) -> list[str]:
    """The operands op's own event names, read independently of tpuscope's graph: on TPU each op's
    event is named by its full HLO instruction (`%x = shape fusion(shape %a, ...), kind=...`)."""
    trace = open_trace(path)
    texts = {
        track.event_name(int(i))
        for plane in trace.planes
        for track in plane.tracks
        for i in range(min(len(track), 2000))
        if track.event_name(int(i)).startswith(f"%{op} = ")
    }
    assert texts, f"no event of {op}"
    line = texts.pop()
    inside = re.search(r" fusion\((.*?)\), kind=", line)
    assert inside is not None, line
    return re.findall(r"%([\w.\-]+)", inside.group(1))


def test_the_operands_the_hlo_text_names_are_its_neighbours_with_edges(capsys):
    operands = _operands_in_event_name(TPU_TRACE, OP)
    assert operands == ["copy-done.2"]
    found = _graph(capsys, str(TPU_TRACE), OP)
    nodes = {n["name"]: n for n in found["nodes"]}
    assert found["op"] == OP and found["program"].startswith("jit_f(")
    assert nodes[OP]["distance"] == 0 and nodes[OP]["opcode"] == "fusion"
    assert nodes[OP]["fusion_kind"] == "kLoop"
    edges = {(e["from"], e["to"]) for e in found["edges"]}
    for operand in operands:
        assert nodes[operand]["distance"] == 1
        assert (operand, OP) in edges
    # Every edge joins two listed nodes, and the op's users are there too (one hop down).
    assert all(a in nodes and b in nodes for a, b in edges)
    users = [b for a, b in edges if a == OP]
    assert users and all(nodes[u]["distance"] == 1 for u in users)
    # Device time is the op table's self time of the same op.
    assert main(["ops", str(TPU_TRACE), "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert nodes[OP]["device_time_us"] == pytest.approx(rows[OP]["self_time_us"])
    assert nodes["copy-done.2"]["device_time_us"] == pytest.approx(rows["copy-done.2"]["self_time_us"])


def test_text_output_lists_operands_and_edges(capsys):
    assert main(["graph", str(TPU_TRACE), OP]) == 0
    out = capsys.readouterr().out
    assert f"HLO around {OP} in jit_f(" in out
    assert f"  copy-done.2 -> {OP}" in out
    assert "Not fused, and why:" in out and "copy-done" in out


def test_radius_widens_the_neighbourhood(capsys):
    alone = _graph(capsys, str(TPU_TRACE), OP, "--radius", "0")
    one = _graph(capsys, str(TPU_TRACE), OP, "--radius", "1")
    two = _graph(capsys, str(TPU_TRACE), OP, "--radius", "2")
    assert [n["name"] for n in alone["nodes"]] == [OP] and alone["edges"] == []
    names = [{n["name"] for n in g["nodes"]} for g in (alone, one, two)]
    assert names[0] < names[1] < names[2]
    assert max(n["distance"] for n in two["nodes"]) == 2


def test_expand_shows_the_fused_computation(capsys):
    found = _graph(capsys, str(TPU_TRACE), OP, "--expand", "--radius", "1")
    fused = [n for n in found["nodes"] if n["fused_into"] == OP]
    opcodes = {n["opcode"] for n in fused}
    assert {"parameter", "add"} <= opcodes
    edges = {(e["from"], e["to"]) for e in found["edges"]}
    parameter = next(n["name"] for n in fused if n["opcode"] == "parameter")
    assert ("copy-done.2", parameter) in edges  # the fusion's operand feeds its fused parameter
    roots = [a for a, b in edges if b == OP]
    assert len(roots) == 1 and roots[0] in {n["name"] for n in fused}


def test_dot_output_is_valid_dot(capsys):
    assert main(["graph", str(TPU_TRACE), OP, "--expand", "--dot"]) == 0
    text = capsys.readouterr().out
    statements = _check_dot(text)
    assert f'"copy-done.2" -> "{OP}"' not in text  # drawn through the fused parameter instead
    assert any(s.startswith('"add.') and "->" not in s for s in statements)
    if _has_pydot():  # a full DOT parser where it is installed (not a dependency of the tests)
        import pydot

        with warnings.catch_warnings():  # pydot's own use of pyparsing's old names
            warnings.simplefilter("ignore")
            (graph,) = pydot.graph_from_dot_data(text)
        names = {n.get_name().strip('"') for n in graph.get_nodes()}
        for sub in graph.get_subgraphs():
            names |= {n.get_name().strip('"') for n in sub.get_nodes()}
        assert OP in names and "copy-done.2" in names


def _has_pydot() -> bool:
    try:
        import pydot  # noqa: F401
    except ImportError:
        return False
    return True


_ID = r'"(?:[^"\\]|\\.)*"'
_ATTRS = rf"\[(?:\s*\w+\s*=\s*(?:{_ID}|[\w.#]+)\s*,?)*\s*\]"
_STATEMENT = re.compile(
    rf"^(?:{_ID}(?:\s*->\s*{_ID})?(?:\s*{_ATTRS})?|(?:node|edge|graph)\s*{_ATTRS}"
    rf"|\w+\s*=\s*(?:{_ID}|\w+)(?:\s*;\s*\w+\s*=\s*(?:{_ID}|\w+))*)$"
)


def _check_dot(text: str) -> list[str]:
    """A small check of the DOT grammar (https://graphviz.org/doc/info/lang.html) for what `--dot`
    writes: `digraph ID {`, statements ending in `;` (nodes, edges, attribute lists, `a=b`), quoted
    IDs with escapes, subgraphs `subgraph ID {` ... `}`, braces balanced. Returns the statements."""
    lines = [line.strip() for line in text.strip().splitlines()]
    assert re.fullmatch(rf"digraph {_ID} \{{", lines[0]), lines[0]
    assert lines[-1] == "}"
    depth, statements = 1, []
    for line in lines[1:-1]:
        if re.fullmatch(rf"subgraph {_ID} \{{", line):
            depth += 1
            continue
        if line == "}":
            depth -= 1
            assert depth >= 1
            continue
        assert line.endswith(";"), line
        statement = line[:-1].strip()
        assert _STATEMENT.fullmatch(statement), statement
        statements.append(statement)
    assert depth == 1
    return statements


def test_hints_on_a_gpu_profile_name_the_rule(capsys):
    found = _graph(capsys, str(GPU_TRACE), "loop_reduce_fusion", "--expand")
    reasons = {(h["producer"], h["consumer"]): h["reason"] for h in found["hints"]}
    reason = reasons[("gemm_fusion_dot_general.1", "loop_reduce_fusion")]
    assert "kCustom fusion" in reason
    called = _graph(capsys, str(GPU_TRACE), "custom-call.1", "--program", "19")
    assert called["program"] == "jit_matmul(19)"
    assert len(called["also_in_programs"]) == 0
    assert any("custom-call" in h["reason"] for h in called["hints"])


def test_an_op_named_in_several_programs_picks_the_one_with_most_time(capsys):
    found = _graph(capsys, str(GPU_TRACE), "custom-call.1")
    assert len(found["also_in_programs"]) == 3  # jit_matmul 19, 32, 73 and 98 all have one
    times = [n["device_time_us"] for n in found["nodes"] if n["name"] == "custom-call.1"]
    for other in found["also_in_programs"]:
        there = _graph(capsys, str(GPU_TRACE), "custom-call.1", "--program", str(other))
        theirs = next(n["device_time_us"] for n in there["nodes"] if n["name"] == "custom-call.1")
        assert theirs <= times[0]


def test_an_unknown_op_names_close_matches(capsys):
    assert main(["graph", str(TPU_TRACE), "broadcst_add_fusion.1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "No HLO op named 'broadcst_add_fusion.1'" in err and "close matches: broadcast_add_fusion.1" in err


def test_a_profile_without_hlo_says_so(capsys):
    kineto = sorted((SHARED_TRACES / "kineto").glob("cpu_only*.json.gz"))[0]
    assert main(["graph", str(kineto), "anything"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "keeps no compiled programs (no HLO)" in err


def test_a_radius_out_of_range_is_refused(capsys):
    assert main(["graph", str(TPU_TRACE), OP, "--radius", "-1"]) == 2
    assert "--radius must be 0 to" in capsys.readouterr().err
