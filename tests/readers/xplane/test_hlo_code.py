"""Each instruction's code (framework op, source, stack, text) decoded from the real HLO protos.

Expected values come from independent sources: the XLA:TPU op text and source stats the same
profile carries on its device plane, the recording's own program file (its lines and function
names), and mutations of real protos whose effect is known by construction.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import GPU_TRACE, TPU_TRACE, require_shared_traces
from tests.jax_recordings import record_source_profile
from tests.model.test_fuzz_loader import _mutate, edits_strategy
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.model.code import program_code
from tpuscope.model.programs import hlo_proto_blobs
from tpuscope.readers.xla_dialect import HLO_PROTO_STAT
from tpuscope.readers.xplane import hlo_pb2, xplane_pb2
from tpuscope.readers.xplane.hlo_code import decode_program_code


@pytest.fixture(scope="module")
def tpu_trace():
    require_shared_traces()
    return open_trace(TPU_TRACE, use_cache=False)


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """(program file, profile) of a JAX 0.10 CPU run of a program from a file."""
    return record_source_profile(tmp_path_factory.mktemp("source_program"))


def _tpu_op_metadata(trace):
    """(program id, op name, full HLO text, stats) of every XLA:TPU op the device plane describes."""
    plane = next(p for p in trace.planes if p.is_device)
    table = plane.metadata
    for row in range(len(table.name_ids)):
        text = trace.strings[int(table.name_ids[row])]
        if " = " in text:
            stats = table.stats.row(row, trace.strings, trace.blobs)
            yield stats["program_id"], text.split(" = ", 1)[0].lstrip("%"), text, stats


def test_tpu_instruction_text_is_the_device_planes_own(tpu_trace):
    """XLA:TPU names each op event by its full text: ours, printed from the proto, is the same."""
    code = program_code(tpu_trace)
    compared = 0
    for program_id, name, text, stats in _tpu_op_metadata(tpu_trace):
        instruction = code[program_id].get(name)
        assert instruction is not None, name
        assert instruction.text == text
        source = stats.get("source")
        if source:  # XLA:TPU's source stat and the proto's metadata name the same line
            assert f"{instruction.source_file}:{instruction.source_line}" == source
            assert instruction.framework_op == stats["tf_op"].removesuffix(":")
            # The proto's stack is the runtime's, read the other way round (innermost first).
            assert instruction.stack_locations == stats["source_stack"].strip("\n").split("\n")[::-1]
        compared += 1
    assert compared >= 17  # every op XProf lists on this profile, and the metadata's extras
    assert not any(c.notes for c in code.values())


def test_a_fusion_and_each_instruction_it_fused(tpu_trace):
    code = program_code(tpu_trace)
    program = next(c for c in code.values() if c.get("broadcast_add_fusion.1"))
    fusion = program.get("broadcast_add_fusion.1")
    assert fusion.opcode == "fusion" and "calls=%fused_computation.1" in fusion.text
    assert fusion.fused, "a fusion lists the instructions it fused"
    for name in fusion.fused:
        inner = program.get(name)
        assert inner is not None and inner.computation == "fused_computation.1"
        assert inner.text.startswith(f"%{name} = ")
    # The fused add is what the framework op names; it has the fusion's line.
    adds = [program.get(n) for n in fusion.fused if program.get(n).opcode == "add"]
    assert adds and adds[0].framework_op == "jit(f)/jit(main)/add"
    assert adds[0].source == fusion.source


def test_jax_cpu_recording_has_only_the_frame_index(recording):
    program, profile = recording
    lines = program.read_text().splitlines()
    big_matmul = next(k for k, line in enumerate(lines, 1) if "BIG_MATMUL" in line)
    trace = open_trace(profile, use_cache=False)
    blobs = dict(hlo_proto_blobs(trace))
    code = program_code(trace)
    module = next(c for c in code.values() if c.module_name == "jit_layer")
    assert blobs[module.program_id].count(str(program).encode()) == 1, "the file is named once, in the index"
    assert module.has_stack_index and not module.notes
    instructions = list(module.instructions.values())
    assert not any(i.source_file for i in instructions), "JAX 0.10 on the CPU writes no source_file"
    dots = [i for i in instructions if i.framework_op.endswith("dot_general") and i.stack]
    assert dots
    lines_of_dots = {i.source.line for i in dots}
    assert big_matmul in lines_of_dots
    first = next(i for i in dots if i.source.line == big_matmul)
    assert first.source.file == str(program) and first.source.function == "layer"
    # Innermost first: the matmul's line, then main's call of the jitted function, then the script.
    assert [f.function for f in first.stack] == ["layer", "main", "<module>"]
    assert first.stack_locations[0].startswith(f"{program}:{big_matmul}:")


# ---- bad input: real protos, mutated ----


def _cpu_proto(recording) -> hlo_pb2.HloCodeProto:
    trace = open_trace(recording[1], use_cache=False)
    code = program_code(trace)
    program_id = next(pid for pid, c in code.items() if c.module_name == "jit_layer")
    return hlo_pb2.HloCodeProto.FromString(dict(hlo_proto_blobs(trace))[program_id])


def _with_stack(proto):
    return [i for c in proto.hlo_module.computations for i in c.instructions if i.metadata.stack_frame_id]


def test_a_proto_without_the_index_gives_no_stacks(recording):
    proto = _cpu_proto(recording)
    proto.hlo_module.ClearField("stack_frame_index")
    code = decode_program_code(proto.SerializeToString(), 1)
    assert code is not None and not code.has_stack_index
    assert all(not i.stack and i.source is None for i in code.instructions.values())
    assert any("no stack-frame index" in note for note in code.notes)
    assert all(i.text for i in code.instructions.values()), "everything else is still there"


def test_a_frame_id_pointing_nowhere(recording):
    proto = _cpu_proto(recording)
    victim = _with_stack(proto)[0]
    victim.metadata.stack_frame_id = 10**6
    code = decode_program_code(proto.SerializeToString(), 1)
    assert code.get(victim.name).stack == () and code.get(victim.name).source is None
    assert any("do not exist" in note for note in code.notes)
    assert sum(1 for i in code.instructions.values() if i.stack) == len(_with_stack(proto)) - 1


def test_a_parent_chain_that_loops_is_cut(recording):
    proto = _cpu_proto(recording)
    frames = proto.hlo_module.stack_frame_index.stack_frames
    for frame in frames:  # every root points back at the last frame: each chain comes round
        if frame.parent_frame_id == 0:
            frame.parent_frame_id = len(frames)
    code = decode_program_code(proto.SerializeToString(), 1)
    stacks = [i.stack for i in code.instructions.values() if i.stack]
    assert stacks and all(len(s) <= len(frames) for s in stacks)
    assert any("loop" in note for note in code.notes)


def test_a_fused_computation_that_does_not_exist(recording):
    proto = _cpu_proto(recording)
    fusion = next(i for c in proto.hlo_module.computations for i in c.instructions if i.opcode == "fusion")
    fusion.called_computation_ids[0] = 987654321
    code = decode_program_code(proto.SerializeToString(), 1)
    found = code.get(fusion.name)
    assert found.fused == () and "calls=%<missing>" in found.text
    assert any("computation the module does not have" in note for note in code.notes)


def test_truncated_and_foreign_bytes(recording):
    blob = _cpu_proto(recording).SerializeToString()
    for cut in (1, 7, len(blob) // 3, len(blob) // 2, len(blob) - 1):
        decode_program_code(blob[:cut], 1)  # a partial answer or None, never an exception
    assert decode_program_code(b"", 1) is None
    assert decode_program_code(b"\xff" * 64, 1) is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_real_protos_never_raise(recording, data):
    blob = bytearray(_cpu_proto(recording).SerializeToString())
    for _ in range(data.draw(st.integers(1, 8))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    decode_program_code(bytes(blob), 1)


def test_ops_on_a_profile_with_broken_stacks_answers_in_part(recording, tmp_path, capsys):
    """End to end: a profile whose program's parent chains loop and whose first frame id points
    nowhere still gives every op row, with the sources it can."""
    proto = _cpu_proto(recording)
    frames = proto.hlo_module.stack_frame_index.stack_frames
    for frame in frames:
        if frame.parent_frame_id == 0:
            frame.parent_frame_id = len(frames)
    _with_stack(proto)[-1].metadata.stack_frame_id = 10**6
    space = xplane_pb2.XSpace.FromString(recording[1].read_bytes())
    replaced = 0
    for plane in space.planes:
        names = {m.id: m.name for m in plane.stat_metadata.values()}
        for metadata in plane.event_metadata.values():
            for stat in metadata.stats:
                if names.get(stat.metadata_id) == HLO_PROTO_STAT and metadata.name.startswith("jit_layer"):
                    stat.bytes_value = proto.SerializeToString()
                    replaced += 1
    assert replaced
    broken = tmp_path / "broken.xplane.pb"
    broken.write_bytes(space.SerializeToString())
    assert main(["ops", str(broken), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and all(isinstance(r["stack"], list) for r in rows)
    assert main(["ops", str(broken), "--by", "source"]) == 0


def test_program_code_pickles_as_its_bytes(tpu_trace):
    """Results may cross processes (host-by-host runs): a pickled program's code decodes the same."""
    import pickle

    for program in program_code(tpu_trace).values():
        copy = pickle.loads(pickle.dumps(program))
        assert copy.instructions == program.instructions and copy.notes == program.notes


def _shared_blobs() -> dict[str, bytes]:
    found = {}
    for path in (TPU_TRACE, GPU_TRACE):
        if path.exists():
            for program_id, blob in list(hlo_proto_blobs(open_trace(path)))[:3]:
                found[f"{path.parent.name}:{program_id}"] = blob
    return found


SHARED_BLOBS = _shared_blobs()


@pytest.mark.timeout(600)
@settings(max_examples=150, deadline=None)
@given(
    seed=st.sampled_from(sorted(SHARED_BLOBS) or ["none"]),
    edits=edits_strategy,
    cut=st.none() | st.integers(0, 2**31),
)
def test_fuzzed_real_protos_give_code_or_none(seed, edits, cut):
    """The loader's fuzzer's edits (tests/model/test_fuzz_loader.py) on real TPU and GPU protos:
    every instruction decodes or the program is not one, never an exception or a hang."""
    if seed == "none":
        pytest.skip("the shared profiles are missing")
    code = decode_program_code(_mutate(SHARED_BLOBS[seed], edits, cut), 1)
    if code is not None:
        for instruction in code.instructions.values():
            assert isinstance(instruction.text, str) and len(instruction.stack) <= 10**6
        assert isinstance(code.notes, list)
