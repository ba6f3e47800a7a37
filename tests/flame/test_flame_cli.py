"""`tpuscope flame` on real JAX CPU recordings: the fused branch ranks first by scope, the counts add
up to the op table's total, the heaviest source line is on the heaviest stack, and the speedscope
export passes speedscope's own schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import SHARED_TRACES, TPU_TRACE, require_shared_traces
from tpuscope.analysis.scope_tree import ESTIMATE_MARK
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main

SCHEMA = Path(__file__).with_name("speedscope_file_format_schema.json")


def _folded(capsys, *args: str) -> list[tuple[list[str], int]]:
    assert main(["flame", *args, "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    found = []
    for line in lines:
        path, _, count = line.rpartition(" ")
        found.append((path.split(";"), int(count)))
    return found


def _ops_total_ns(capsys, path: Path) -> float:
    assert main(["ops", str(path), "--json", "--no-cache"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    return sum(r["self_time_us"] for r in rows) * 1000


def _by_top_scope(lines, depth: int) -> dict[str, int]:
    found: dict[str, int] = {}
    for path, count in lines:
        if len(path) > depth:
            found[path[depth]] = found.get(path[depth], 0) + count
    return found


def test_scope_ranks_the_fused_branch_first(capsys, scoped_profile):
    lines = _folded(capsys, str(scoped_profile), "--by", "scope")
    below_jit = _by_top_scope(lines, 1)
    assert {path[0] for path, _ in lines} == {"jit(model_step)"}
    assert max(below_jit, key=below_jit.__getitem__) == "blocks"
    assert below_jit["blocks"] > 5 * below_jit["head"]
    # The two matmuls lead, each share marked as the fusion's estimate.
    heaviest = max(lines, key=lambda line: line[1])[0]
    assert heaviest[1:5] == ["blocks", "block_1", "mlp", heaviest[4]] and heaviest[5] == "dot_general"
    assert heaviest[-1] == ESTIMATE_MARK.format("ynn_fusion")
    total = sum(count for _, count in lines)
    assert total == pytest.approx(_ops_total_ns(capsys, scoped_profile), abs=1)
    table = TraceAnalysis(open_trace(scoped_profile)).op_table("op")
    assert table is not None and total == round(table.total_self_ps / 1000)


def test_root_attribution_puts_the_fusion_on_its_root_scope(capsys, scoped_profile):
    lines = _folded(capsys, str(scoped_profile), "--by", "scope", "--fusion", "root")
    assert [path for path, _ in lines] == [["jit(model_step)", "head", "reduce_sum"]]
    assert lines[0][1] == pytest.approx(_ops_total_ns(capsys, scoped_profile), abs=1)


def test_stack_puts_the_heaviest_line_on_the_heaviest_stack(capsys, source_profile):
    program, profile = source_profile
    big_line = next(n for n, text in enumerate(program.read_text().splitlines(), 1) if "BIG_MATMUL" in text)
    assert main(["ops", str(profile), "--by", "source", "--json", "--no-cache"]) == 0
    heaviest_source = json.loads(capsys.readouterr().out)["rows"][0]["name"]
    assert heaviest_source.endswith(f"model.py:{big_line}")
    for fusion in ("split", "root"):
        lines = _folded(capsys, str(profile), "--by", "stack", "--fusion", fusion)
        heaviest = max(lines, key=lambda line: line[1])[0]
        assert f"layer (model.py:{big_line})" in heaviest, (fusion, heaviest)
        assert heaviest[0].startswith("<module> (model.py:")
        assert sum(c for _, c in lines) == pytest.approx(_ops_total_ns(capsys, profile), abs=1)


def test_speedscope_export_passes_speedscope_schema(capsys, scoped_profile, tmp_path):
    out = tmp_path / "flame.speedscope.json"
    assert main(["flame", str(scoped_profile), "--format", "speedscope", "-o", str(out), "--no-cache"]) == 0
    document = json.loads(out.read_text())
    jsonschema.validate(document, json.loads(SCHEMA.read_text()))
    (profile,) = document["profiles"]
    frames = document["shared"]["frames"]
    assert all(0 <= k < len(frames) for sample in profile["samples"] for k in sample)
    assert profile["endValue"] == sum(profile["weights"])
    assert profile["endValue"] == pytest.approx(_ops_total_ns(capsys, scoped_profile), abs=1)
    heaviest = profile["samples"][profile["weights"].index(max(profile["weights"]))]
    assert [frames[k]["name"] for k in heaviest][1] == "blocks"


def test_json_marks_estimates_and_adds_up(capsys, scoped_profile):
    assert main(["flame", str(scoped_profile), "--format", "json", "--by", "scope", "--no-cache"]) == 0
    payload = json.loads(capsys.readouterr().out)
    nodes = payload["nodes"]
    assert payload["estimated"] and "HloCostAnalysis" in payload["estimate_note"]
    assert nodes[0]["total_time_us"] == pytest.approx(payload["total_self_time_us"])
    assert sum(n["self_time_us"] for n in nodes) == pytest.approx(payload["total_self_time_us"])
    blocks = next(n for n in nodes if n["name"] == "blocks")
    assert blocks["estimated"] and blocks["percent"] > 80


def test_narrowing_options(capsys, scoped_profile):
    require_shared_traces()
    tpu = str(TPU_TRACE)
    everything = sum(c for _, c in _folded(capsys, tpu, "--device", "0"))
    steps = [sum(c for _, c in _folded(capsys, tpu, "--device", "0", "--steps", str(n))) for n in range(3)]
    three = sum(c for _, c in _folded(capsys, tpu, "--device", "0", "--steps", "0:2"))
    assert 0 < min(steps) and three < everything
    assert sum(steps) == pytest.approx(three, abs=3)  # each step's ops once (rounded per step)
    whole = sum(c for _, c in _folded(capsys, str(scoped_profile)))
    program = sum(c for _, c in _folded(capsys, str(scoped_profile), "--program", "jit_model_step"))
    assert program == whole
    by_op = _folded(capsys, str(scoped_profile), "--by", "op")
    assert [path[1:] for path, _ in by_op] == [["fusion", "ynn_fusion"]]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--steps", "99"], "matches no step"),
        (["--steps", "a:b"], "step numbers"),
        (["--program", "nope"], "matches no program"),
        (["--device", "7"], "matches no device"),
    ],
)
def test_bad_choices_are_one_sentence(capsys, scoped_profile, args, words):
    assert main(["flame", str(scoped_profile), *args, "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_ops_by_scope_cuts_the_tree_at_depth(capsys, scoped_profile):
    assert main(["ops", str(scoped_profile), "--by", "scope", "--json", "--no-cache"]) == 0
    payload = json.loads(capsys.readouterr().out)
    rows = payload["rows"]
    assert payload["depth"] == 3 and rows[0]["name"] == "jit(model_step)/blocks/block_1"
    assert rows[0]["estimated"] and rows[0]["percent"] > 80
    assert {r["name"] for r in rows[1:]} == {"jit(model_step)/head/mul", "jit(model_step)/head/reduce_sum"}
    total_ns = sum(r["self_time_us"] for r in rows) * 1000
    assert total_ns == pytest.approx(_ops_total_ns(capsys, scoped_profile), abs=1)
    assert main(["ops", str(scoped_profile), "--by", "scope", "--depth", "1", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "~ jit(model_step) " in text and "holds an estimate" in text
    assert main(["ops", str(scoped_profile), "--by", "scope", "--depth", "0", "--no-cache"]) == 2
    assert "--depth must be a positive" in capsys.readouterr().err


def test_pytorch_scope_is_the_module_tree(capsys):
    require_shared_traces()
    bert = SHARED_TRACES / "kineto" / "tracelens__h100__gaunernst_bert-small-uncased__1016001.json.gz"
    lines = _folded(capsys, str(bert), "--by", "scope")
    assert {path[0] for path, _ in lines} == {"BertLMHeadModel_0"}
    below_model = _by_top_scope([(p, c) for p, c in lines if p[1:2] == ["BertModel_0"]], 2)
    assert max(below_model, key=below_model.__getitem__) == "BertEncoder_0"
    heaviest = max(lines, key=lambda line: line[1])[0]
    assert heaviest[-3:] == ["Linear_25", "aten::linear", "aten::addmm"]  # the LM head's projection
    layers = _by_top_scope([(p, c) for p, c in lines if p[2:3] == ["BertEncoder_0"]], 3)
    assert sorted(layers) == [f"BertLayer_{k}" for k in range(4)]
    assert sum(c for _, c in lines) == pytest.approx(_ops_total_ns(capsys, bert), abs=1)
