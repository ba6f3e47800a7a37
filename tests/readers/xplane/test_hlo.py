"""Program signatures decoded from the HLO protos in `/host:metadata`, on the real profiles.

Expected shapes come from an independent source in the same file (the HLO text of the device's
XLA Ops, the metadata names) or from the recording's own design, never from a previous run.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import GPU_TRACE, PTXLA_TRACE, TF_TRACE, TPU_TRACE, require_shared_traces
from tpuscope.analysis.programs import PROGRAM_SIGNATURES
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.model.programs import ProgramSignature, program_signatures, signatures_of_module
from tpuscope.readers.xla_dialect import HLO_PROTO_STAT
from tpuscope.readers.xplane import hlo_pb2
from tpuscope.readers.xplane.hlo import SHAPE, decode_program_signature, format_shape
from tpuscope.readers.xplane.wire import parse

_MODULE_NAME = re.compile(r"^(.+)\((\d+)\)$")
# An operand in XLA Ops HLO text: `f32[5,1024,1024,256]{3,2,1,0:T(8,128)S(5)} %param.1`.
_PARAM_OPERAND = re.compile(r"(\w+\[[\d,]*\])\{[^}]*\} (%param(?:\.\d+)?)\b")


@pytest.fixture(scope="module")
def traces():
    require_shared_traces()
    return {path: open_trace(path, use_cache=False) for path in (TPU_TRACE, GPU_TRACE, PTXLA_TRACE, TF_TRACE)}


def _modules_with_protos(trace) -> dict[int, str]:
    """program id -> module name, for every metadata row that carries an `Hlo Proto` stat."""
    found = {}
    for plane in trace.planes:
        if plane.kind != "metadata":
            continue
        column = plane.metadata.stats.column(HLO_PROTO_STAT)
        if column is None:
            continue
        present = column.present(len(plane.metadata.name_ids))
        for row, name_id in enumerate(plane.metadata.name_ids):
            match = _MODULE_NAME.match(trace.strings[int(name_id)])
            if present[row] and match:
                found[int(match.group(2))] = match.group(1)
    return found


@pytest.mark.parametrize("path", [TPU_TRACE, GPU_TRACE, PTXLA_TRACE], ids=lambda p: p.parent.name)
def test_every_hlo_proto_in_the_metadata_decodes(traces, path):
    trace = traces[path]
    expected = _modules_with_protos(trace)
    signatures = program_signatures(trace)
    assert len(expected) > 0
    assert {pid: s.module_name for pid, s in signatures.items()} == expected
    for signature in signatures.values():
        assert len(signature.parameters) == len(signature.parameter_names) > 0
        assert all(re.fullmatch(r"[a-z0-9]+\[[\d,]*\]|\(.*\)", p) for p in signature.parameters)
        assert signature.result
    analysis = TraceAnalysis(trace)
    shared = analysis.get(PROGRAM_SIGNATURES)
    assert shared == signatures and analysis.get(PROGRAM_SIGNATURES) is shared  # decoded once per trace


def test_tpu_program_signature_matches_the_device_hlo_text(traces):
    """The module the TPU runs 100 times: its parameter shapes are the `%param` operands its XLA Ops read."""
    trace = traces[TPU_TRACE]
    signatures = program_signatures(trace)
    ops = trace.device_planes("TPU")[0].track("XLA Ops")
    program_ids = ops.stat_values("program_id", fill=0)  # a uint64 column: no -1
    executed = trace.device_planes("TPU")[0].track("XLA Modules")
    names = [executed.event_name(i) for i in range(len(executed))]
    busiest = max(set(names), key=names.count)
    program_id = int(_MODULE_NAME.match(busiest).group(2))
    signature = signatures[program_id]
    assert signature.module_name == _MODULE_NAME.match(busiest).group(1)
    operands = {}
    for i in range(len(ops)):
        if int(program_ids[i]) == program_id:
            for shape, param in _PARAM_OPERAND.findall(ops.event_name(i)):
                operands[param] = shape
    assert len(operands) == len(signature.parameters)
    assert sorted(operands.values()) == sorted(signature.parameters)
    assert signatures_of_module(signatures, signature.module_name) == [signature]


def test_recompiled_gpu_module_lists_every_compilation_in_order(traces):
    trace = traces[GPU_TRACE]
    by_module: dict[str, list[int]] = {}
    for pid, name in _modules_with_protos(trace).items():
        by_module.setdefault(name, []).append(pid)
    name, ids = max(by_module.items(), key=lambda kv: len(kv[1]))
    found = signatures_of_module(program_signatures(trace), name)
    assert len(ids) > 1
    assert [s.program_id for s in found] == sorted(ids)  # JAX numbers GPU programs in compile order
    assert [s.module_id for s in found] == sorted(s.module_id for s in found)


def test_profiles_without_hlo_protos_have_no_signatures(traces):
    assert program_signatures(traces[TF_TRACE]) == {}


def _real_blob(trace) -> bytes:
    plane = next(p for p in trace.planes if p.kind == "metadata")
    column = plane.metadata.stats.column(HLO_PROTO_STAT)
    return trace.blobs[int(column.values[0])]


def test_garbage_bytes_are_not_a_signature(traces):
    blob = _real_blob(traces[TPU_TRACE])
    assert decode_program_signature(blob, 1) is not None
    for junk in (
        b"",
        b"\x00",
        b"\xff" * 64,
        blob[: len(blob) // 3],
        b"not a protobuf at all",
        bytes(range(256)),
    ):
        assert decode_program_signature(junk) is None
    # Well-formed protobuf that is not an HloProto with a module signature.
    assert decode_program_signature(hlo_pb2.HloProto().SerializeToString()) is None
    assert decode_program_signature(b"\x0a\x02\x08\x01") is None
    assert decode_program_signature(None) is None  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512))
def test_decoding_never_raises(data):
    result = decode_program_signature(data)
    assert result is None or isinstance(result, ProgramSignature)


def test_shapes_print_as_xla_writes_them():
    shape = hlo_pb2.ShapeProto

    def text(proto) -> str:
        return format_shape(parse(proto.SerializeToString(), SHAPE))

    assert text(shape(element_type=hlo_pb2.BF16, dimensions=[8, 128])) == "bf16[8,128]"
    assert text(shape(element_type=hlo_pb2.PRED)) == "pred[]"
    dynamic = shape(element_type=hlo_pb2.S32, dimensions=[16, 4], is_dynamic_dimension=[True, False])
    assert text(dynamic) == "s32[<=16,4]"
    pair = shape(element_type=hlo_pb2.TUPLE, tuple_shapes=[shape(element_type=hlo_pb2.F32), dynamic])
    assert text(pair) == "(f32[], s32[<=16,4])"
    assert text(shape(element_type=99, dimensions=[3])) == "type99[3]"
    deep = shape(element_type=hlo_pb2.F32)
    for _ in range(20):
        deep = shape(element_type=hlo_pb2.TUPLE, tuple_shapes=[deep])
    assert "(...)" in text(deep)
