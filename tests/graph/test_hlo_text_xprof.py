"""Custom calls' layout constraints and aliasing in the op text, against XProf's hlo_stats on a ROCm
JAX profile (the shared MI300X attention run): its four cuBLAS custom calls are given what Transformer
Engine's FFI custom calls carry (`constrain_layout` with each operand's shape, and output 0 aliasing
operand 0) in their HloProto, and XProf, which prints each op with XLA's own printer, must show
every op of the profile exactly as `tpuscope ops --json` does."""

from __future__ import annotations

import json

from tests.analysis.test_ops_code_xprof_oracle import xprof_hlo_stats
from tests.conftest import GPU_TRACE
from tpuscope.cli import main
from tpuscope.readers.xla_dialect import HLO_PROTO_STAT
from tpuscope.readers.xplane import hlo_pb2, xplane_pb2


def _constrain_custom_calls(path, out) -> int:
    """Writes `path` to `out` with each custom call of its HLO protos given operand layout
    constraints (its operands' own shapes) and output {0} aliasing operand 0; returns how many."""
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    edited = 0
    for plane in space.planes:
        names = {k: v.name for k, v in plane.stat_metadata.items()}
        for metadata in plane.event_metadata.values():
            for stat in metadata.stats:
                if names.get(stat.metadata_id) != HLO_PROTO_STAT:
                    continue
                proto = hlo_pb2.HloCodeProto.FromString(stat.bytes_value)
                module = proto.hlo_module
                by_id = {i.id: i for c in module.computations for i in c.instructions}
                for instruction in (i for c in module.computations for i in c.instructions):
                    if instruction.opcode != "custom-call":
                        continue
                    instruction.constrain_layout = True
                    for operand in instruction.operand_ids:
                        instruction.operand_shapes_with_layout.add().CopyFrom(by_id[operand].shape)
                    aliasing = instruction.output_operand_aliasing.add()
                    aliasing.output_shape_index.append(0)
                    aliasing.operand_index = 0
                    edited += 1
                stat.bytes_value = proto.SerializeToString()
    out.write_bytes(space.SerializeToString())
    return edited


def test_every_op_text_equals_xprofs_with_constrained_custom_calls(tmp_path, capsys):
    edited = tmp_path / "constrained.xplane.pb"
    assert _constrain_custom_calls(GPU_TRACE, edited) == 4
    (tmp_path / "xprof").mkdir()
    theirs = {
        (int(r["program_id"]), r["hlo_op_name"]): r["hlo_op_expression"]
        for r in xprof_hlo_stats(edited, tmp_path / "xprof")
        if r["hlo_op_expression"]
    }
    assert main(["ops", str(edited), "--json", "--no-cache"]) == 0
    ours = {(r["program_id"], r["name"]): r["hlo_text"] for r in json.loads(capsys.readouterr().out)["rows"]}
    assert len(theirs) >= 20
    constrained = [text for text in theirs.values() if "operand_layout_constraints={" in text]
    assert len(constrained) == 4
    assert all("output_to_operand_aliasing={{0}: (0, {})}" in text for text in constrained)
    for key, text in theirs.items():
        assert ours[key] == text, key
