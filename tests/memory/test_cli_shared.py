"""`tpuscope memory` on the real profiles and on paths that are not profiles."""

from __future__ import annotations

import json

from tests.conftest import PTXLA_TRACE, TF_TRACE, TPU_TRACE
from tpuscope.cli import main


def test_tpu_allocators_in_json(capsys):
    assert main(["memory", str(TPU_TRACE), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    allocators = {a["id"]: a for a in payload["allocators"]}
    assert sorted(allocators) == ["0", "1", "2", "3"]
    for allocator in allocators.values():
        assert {"id", "peak_bytes_in_use", "peak_time_ps", "capacity_bytes", "samples"} <= set(allocator)
        assert allocator["samples"] > 0 and allocator["capacity_bytes"] == 33_550_237_696
    assert payload["capacity_bytes"] == 33_550_237_696


def test_profile_without_memory_data_says_so(capsys):
    # The PyTorch/XLA CPU sample has HLO protos (programs) but no allocator events; TF CPU the reverse.
    assert main(["memory", str(PTXLA_TRACE)]) == 0
    assert "SyncTensorsGraph" in capsys.readouterr().out
    assert main(["memory", str(TF_TRACE)]) == 0
    assert "allocator mklcpu" in capsys.readouterr().out


def test_no_memory_data_is_one_sentence_exit_0(tmp_path, capsys):
    from tpuscope.readers.xplane import xplane_pb2

    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=1, name="/host:CPU")
    plane.lines.add(id=1, name="main")
    path = tmp_path / "empty.xplane.pb"
    path.write_bytes(space.SerializeToString())
    assert main(["memory", str(path)]) == 0
    assert capsys.readouterr().out.strip() == (
        "This profile has no memory data (no buffer assignments in its HLO protos, no allocator events)."
    )


def test_bad_path_exits_2(tmp_path, capsys):
    assert main(["memory", str(tmp_path / "missing.xplane.pb")]) == 2
    assert capsys.readouterr().err.startswith("tpuscope: ")
