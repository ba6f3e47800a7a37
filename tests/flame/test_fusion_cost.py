"""The weights that split a fusion, from the real fused instructions XLA:CPU printed for the scoped
recording: a dot's FLOPs (2 x output x contracting width) over the ridge, elementwise ops and the
reduction their bytes, parameters and constants nothing."""

from __future__ import annotations

import pytest

from tpuscope.analysis.fusion_cost import DEFAULT_RIDGE_FLOPS_PER_BYTE, instruction_cost
from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace


@pytest.fixture(scope="module")
def fused(scoped_profile):
    analysis = TraceAnalysis(open_trace(scoped_profile))
    programs = [p for p in analysis.get(PROGRAM_CODE).values() if p.get("ynn_fusion") is not None]
    (program,) = [p for p in programs if p.module_name.startswith("jit_model_step")]
    fusion = program.get("ynn_fusion")
    assert fusion is not None and fusion.fused
    return {name: program.get(name) for name in fusion.fused}


def _by_opcode(fused, opcode: str, scope_end: str):
    return next(i for i in fused.values() if i.opcode == opcode and i.framework_op.endswith(scope_end))


def test_dots_cost_their_flops_over_the_ridge(fused):
    up = _by_opcode(fused, "dot", "mlp/up/dot_general")  # f32[256,512] x f32[512,1024]
    down = _by_opcode(fused, "dot", "mlp/down/dot_general")  # f32[256,1024] x f32[1024,512]
    flops = 2 * 256 * 1024 * 512
    assert instruction_cost(up.text) == pytest.approx(flops / DEFAULT_RIDGE_FLOPS_PER_BYTE)
    assert instruction_cost(down.text) == pytest.approx(flops / DEFAULT_RIDGE_FLOPS_PER_BYTE)
    # A slower compute roof (a lower ridge) makes the dot cost more.
    assert instruction_cost(up.text, 1.0) == pytest.approx(flops)


def test_others_cost_their_bytes_and_parameters_nothing(fused):
    tanh = _by_opcode(fused, "tanh", "up/tanh")  # f32[256,1024] in and out
    assert instruction_cost(tanh.text) == pytest.approx(2 * 256 * 1024 * 4)
    reduce = _by_opcode(fused, "reduce", "head/reduce_sum")  # f32[256,512] and f32[] in, f32[256] out
    assert instruction_cost(reduce.text) == pytest.approx((256 * 512 + 1 + 256) * 4)
    free = [i for i in fused.values() if i.opcode in ("parameter", "constant")]
    assert free and all(instruction_cost(i.text) == 0 for i in free)
