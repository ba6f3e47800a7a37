"""The TPU matmul and convolution ops of an op table, with their parsed HLO instructions.

Shared by `shape_alignment` and `dtype`: XLA runs matmuls as `dot` or `convolution`
instructions, or as fusions around one (TPU categories `convolution`, `convolution fusion`,
`output fusion`, e.g. `%fusion.3 = bf16[...] fusion(...), kind=kOutput, calls=...`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tpuscope.analysis.diagnose.tpu_cores import tensorcores
from tpuscope.analysis.facts.context import Context
from tpuscope.model.records import record

if TYPE_CHECKING:
    from tpuscope.analysis.diagnose.hlo_text import Instruction

# XLA's HLO opcodes and op categories: the same in every format that carries HLO ops, so matched here.
MATMUL_OPCODES = {"dot", "convolution"}
MATMUL_CATEGORY = re.compile(r"^(convolution|convolution fusion|output fusion|dot|matmul)$")
MATMUL_NAME = re.compile(r"(^|[_.\-])(dot|convolution|conv|matmul|einsum)($|[_.\-])")


@record
class MatmulOp:
    row: int
    name: str
    instruction: Instruction
    self_ps: int


def tpu_matmuls(ctx: Context) -> list[MatmulOp]:
    """Matmul/convolution rows that ran on TPU TensorCores and whose HLO text is readable."""
    cores = {id(d.plane) for d in tensorcores(ctx.devices)}
    if not cores:
        return []
    # The HLO text parser (~1.5 ms of import): for TPU ops only.
    from tpuscope.analysis.diagnose.hlo_text import parse_instruction

    table = ctx.op_table
    names = table.names()
    found = []
    for r, name in enumerate(names):
        category = table.label(table.category[r]) if table.category[r] else ""
        if not (MATMUL_CATEGORY.match(category) or MATMUL_NAME.search(name)):
            continue
        if not any(id(t.plane) in cores for t, _ in table.events_of_row(r)):
            continue
        instruction = parse_instruction(ctx.op_text(r))
        if instruction is None or not instruction.operands:
            continue
        if instruction.opcode != "fusion" and instruction.opcode not in MATMUL_OPCODES:
            continue
        found.append(MatmulOp(r, name, instruction, int(table.self_ps[r])))
    return found
