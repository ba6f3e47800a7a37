"""Program memory of a real JAX CPU recording, checked against what the program itself must hold.

`jit_spread` (tests/jax_recordings.py MEMORY_PROGRAM) takes one f32[512,512] (1 MiB), sorts a
scaled copy of it (a 1 MiB temporary: sort is not fused into its consumer) and returns f32[512]
(2 KiB). At its peak the parameter, the sorted copy and the result are all live.
"""

from __future__ import annotations

import json

import pytest

from tpuscope.analysis.memory.programs import HBM_SPACE
from tpuscope.analysis.memory.report import memory_report
from tpuscope.app.opener import open_trace
from tpuscope.cli import main

MIB = 1 << 20
PARAMETER_BYTES = 512 * 512 * 4
TEMPORARY_BYTES = 512 * 512 * 4
RESULT_BYTES = 512 * 4


@pytest.fixture(scope="module")
def spread(memory_recording):
    (program,) = [p for p in memory_report(open_trace(memory_recording)).program("jit_spread")]
    return program


def test_parameters_outputs_and_temporary_from_first_principles(spread):
    assert spread.memory_space == HBM_SPACE
    assert spread.parameter_bytes == PARAMETER_BYTES
    assert spread.output_bytes == RESULT_BYTES
    temporaries = [b for b in spread.buffers_at_peak if b.category == "Temporary"]
    assert [(b.bytes, b.shape) for b in temporaries] == [(TEMPORARY_BYTES, "f32[512,512]{1,0}")]
    constants = sum(b.bytes for b in spread.buffers_at_peak if b.category == "Constant")
    assert constants < 64  # a few scalars
    assert spread.peak_heap_bytes == PARAMETER_BYTES + TEMPORARY_BYTES + RESULT_BYTES + constants


def test_cpu_layouts_have_no_padding(spread):
    assert spread.peak_unpadded_heap_bytes == spread.peak_heap_bytes
    assert all(b.unpadded_bytes == b.bytes for b in spread.buffers_at_peak)


def test_buffers_name_their_defining_instruction(spread):
    by_category = {b.category: b for b in spread.buffers_at_peak}
    assert by_category["Parameter"].op_code == "parameter"
    assert by_category["Parameter"].shape == "f32[512,512]{1,0}"
    assert by_category["Output"].shape == "f32[512]{0}"
    assert by_category["Temporary"].defined_by  # the fusion that writes the sorted copy


def test_heap_curve_peaks_where_it_says(spread):
    assert int(spread.heap_bytes.max()) == spread.peak_heap_bytes
    assert int(spread.heap_bytes[spread.peak_position]) <= spread.peak_heap_bytes
    assert len(spread.position_instructions) == len(spread.heap_bytes)


def test_cli_json_shape(memory_recording, capsys):
    assert main(["memory", str(memory_recording), "--program", "jit_spread", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    (program,) = payload["programs"]
    assert program["name"].startswith("jit_spread(") and program["program_id"] is not None
    assert {
        "name",
        "program_id",
        "memory_space",
        "peak_heap_bytes",
        "peak_unpadded_heap_bytes",
        "capacity_bytes",
        "buffers_at_peak",
    } <= set(program)
    sizes = [b["bytes"] for b in program["buffers_at_peak"]]
    assert sizes == sorted(sizes, reverse=True)
    assert {"name", "bytes", "unpadded_bytes", "shape", "defined_by", "category"} <= set(
        program["buffers_at_peak"][0]
    )
    assert payload["allocators"] == []  # JAX on the CPU writes no allocator events


def test_cli_program_by_id_and_unknown_program(memory_recording, capsys):
    assert main(["memory", str(memory_recording), "--json"]) == 0
    programs = json.loads(capsys.readouterr().out)["programs"]
    chosen = programs[0]
    assert main(["memory", str(memory_recording), "--program", str(chosen["program_id"]), "--json"]) == 0
    assert [p["name"] for p in json.loads(capsys.readouterr().out)["programs"]] == [chosen["name"]]
    assert main(["memory", str(memory_recording), "--program", "no_such_program"]) == 2
    assert "no program named 'no_such_program'" in capsys.readouterr().err


def test_cli_text_names_the_peak(memory_recording, capsys):
    assert main(["memory", str(memory_recording), "--program", "jit_spread"]) == 0
    out = capsys.readouterr().out
    assert "jit_spread(" in out and "peak 2.00 MiB" in out and "f32[512,512]{1,0}" in out
