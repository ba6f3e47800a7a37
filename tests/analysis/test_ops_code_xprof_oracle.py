"""Each op's code (program id, framework op, HLO text, source line, stack) agrees with XProf's hlo_stats.

XProf (the `xprof` package) is an independent implementation: on every real profile it lists
device ops for (the TPU v6e and MI300X ones; it lists none for CPU-only runs), each op row of
`tpuscope ops --json` must name the same program id, framework op, op text, source line and
stack as XProf's row of that op. XProf's `source_info` cell is HTML: the `file:line` as its text
and the stack, one frame a line, as its `title`.
"""

from __future__ import annotations

import html
import json
import re
import shutil

import pytest

from tests.conftest import ALL_SHARED_TRACES, GPU_TRACE, TPU_TRACE
from tpuscope.cli import main

_SOURCE_CELL = re.compile(r"^<div class='source-info-cell' title='(.*)'>(.*)</div>$", re.S)


def xprof_hlo_stats(path, folder) -> list[dict]:
    """XProf's hlo_stats rows for a copy of `path` (XProf writes a cache beside its input)."""
    from xprof.convert.raw_to_tool_data import xspace_to_tool_data

    copy = folder / path.name
    shutil.copyfile(path, copy)
    data, content_type = xspace_to_tool_data([str(copy)], "hlo_stats", {})
    assert content_type == "application/json"
    table = json.loads(data)
    columns = [c["id"] for c in table["cols"]]
    return [dict(zip(columns, [cell.get("v") for cell in row["c"]], strict=True)) for row in table["rows"]]


def xprof_source(cell: str) -> tuple[str, list[str]]:
    """(`file:line`, stack frames) of an XProf source_info cell; ("", []) for an empty one."""
    if not cell:
        return "", []
    m = _SOURCE_CELL.match(cell)
    assert m, f"unexpected source_info cell {cell!r}"
    return html.unescape(m.group(2)), [f for f in html.unescape(m.group(1)).split("\n") if f]


def _our_rows(path, capsys) -> list[dict]:
    assert main(["ops", str(path), "--device", "all", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["rows"]


def _compare(ours_rows: list[dict], theirs_rows: list[dict]) -> None:
    ours = {(str(r["program_id"]), r["name"]): r for r in ours_rows}
    for theirs in theirs_rows:
        key = (theirs["program_id"], theirs["hlo_op_name"])
        assert key in ours, f"XProf lists {key} but tpuscope does not"
        mine = ours[key]
        # XProf's framework op is `name:type` (TfOp full name); JAX's ops have no type.
        assert mine["framework_op"] == theirs["tf_op_name"].removesuffix(":"), key
        assert mine["hlo_text"] == theirs["hlo_op_expression"], key
        source, stack = xprof_source(theirs["source_info"])
        assert mine["source"] == source, key
        assert mine["stack"] == stack, key


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.name)
def test_op_code_matches_xprof_hlo_stats(path, tmp_path, capsys):
    theirs = xprof_hlo_stats(path, tmp_path)
    if path in (TPU_TRACE, GPU_TRACE):
        assert theirs, "XProf lists the ops of this profile; the oracle must not be empty"
    if not theirs:
        return  # a CPU-only run: XProf lists no device ops to compare with
    _compare(_our_rows(path, capsys), theirs)


def test_tpu_fusion_names_its_line_and_nine_frames(capsys):
    """The issue's example: `broadcast_add_fusion.1` is `jit(f)/jit(main)/add` at line 29 of the
    test script, with XLA:TPU's 9-frame stack, outermost first as the runtime wrote it."""
    rows = {r["name"]: r for r in _our_rows(TPU_TRACE, capsys)}
    fusion = rows["broadcast_add_fusion.1"]
    assert fusion["framework_op"] == "jit(f)/jit(main)/add"
    assert fusion["source"].endswith("host_offload_stress_test.py:29")
    assert len(fusion["stack"]) == 9 and fusion["stack"][-1].endswith("host_offload_stress_test.py:29:10")
    assert fusion["hlo_text"].startswith(
        "%broadcast_add_fusion.1 = f32[5,1024,1024,256]{3,2,1,0:T(8,128)} fusion("
    )
