"""HLO text as XLA prints it, every attribute: each instruction of a real JAX CPU program, as tpuscope
prints it from the profile's HloProto, against XLA's own text of the same compiled program.

XProf's op text is XLA's `HloInstruction::ToString` without metadata and backend config, with
operand shapes (xprof/utils/hlo_module_utils.h); `compiled.as_text()` prints operands without their
shapes and adds metadata and backend config. So the result, opcode, operand names and every
attribute are compared, operand shapes and those two aside. The custom calls here (LAPACK FFI
kernels) carry `operand_layout_constraints` and `output_to_operand_aliasing`, which tpuscope
dropped before (as on a ROCm profile's Transformer Engine custom calls).
"""

from __future__ import annotations

import re

import pytest

from tests.graph.recordings import record_custom_call_profile
from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace

_HEAD = re.compile(r"^\s*(?:ROOT\s+)?%([\w.\-]+) = ")
_TRAILING = re.compile(r", (metadata|backend_config)=.*$")
_OPERAND = re.compile(r"%([\w.\-]+)")


def _split(text: str) -> tuple[str, list[str], str]:
    """(`%name = shape opcode`, operand names, attributes) of one instruction line."""
    # The operand list opens at the first "(" after the opcode: the result shape may be a tuple.
    head = _HEAD.match(text)
    assert head is not None, text
    rest = text[head.end() :]
    if rest.startswith("("):  # a tuple result shape
        close = _close(rest, 0)
        opening = rest.index("(", close + 1)
    else:
        opening = rest.index("(")
    end = _close(rest, opening)
    return (
        text[: head.end()].strip().removeprefix("ROOT ") + rest[:opening],
        _OPERAND.findall(rest[opening + 1 : end]),
        rest[end + 1 :],
    )


def _close(text: str, opening: int) -> int:
    depth = 0
    for k in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        if depth == 0:
            return k
    raise AssertionError(text)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    path, compiled = record_custom_call_profile(tmp_path_factory.mktemp("custom_call"))
    analysis = TraceAnalysis(open_trace(path, use_cache=False))
    return analysis, compiled


def test_every_instruction_prints_as_xla_prints_it(recorded):
    analysis, compiled = recorded
    program = next(p for p in analysis.get(PROGRAM_CODE).values() if p.module_name == "jit_solve")
    expected = {}
    for line in compiled.splitlines():
        head = _HEAD.match(line)
        if head is not None:
            expected[head.group(1)] = _split(_TRAILING.sub("", line.strip()))
    assert len(expected) > 10
    custom_calls = 0
    for name, (head, operands, attributes) in expected.items():
        instruction = program.get(name)
        assert instruction is not None, name
        ours = _split(instruction.text)
        assert ours[0] == head, name
        assert ours[1] == operands, name
        assert ours[2] == attributes, name
        custom_calls += instruction.opcode == "custom-call"
    assert custom_calls == 2


def test_custom_calls_keep_their_layout_constraints_and_aliasing(recorded):
    analysis, compiled = recorded
    program = next(p for p in analysis.get(PROGRAM_CODE).values() if p.module_name == "jit_solve")
    texts = [i.text for i in program.instructions.values() if i.opcode == "custom-call"]
    in_xla = [line for line in compiled.splitlines() if " custom-call(" in line]
    assert len(texts) == len(in_xla) == 2
    for text in texts:
        constraint = re.search(r"operand_layout_constraints=\{([^}]*\})\}", text)
        assert constraint is not None and constraint.group(1) == "f32[8,8]{0,1}", text
        assert "output_to_operand_aliasing={{0}: (0, {})}" in text
        assert text.index("custom_call_target=") < text.index("operand_layout_constraints=")
        assert text.index("output_to_operand_aliasing=") < text.index("api_version=")
