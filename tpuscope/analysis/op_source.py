"""From a device op to the user's code: its framework op, source line, stack and op text.

Two sources, in XProf's order of preference (openxla/xprof, xprof/utils/op_metrics_db_utils.cc
`SetOpMetadataFromHloEventMetadata`, xprof/utils/hlo_module_utils.cc `GetSourceInfo`):

- what the op event itself carries (`Stat.SOURCE`, `Stat.SOURCE_STACK`, `Stat.FRAMEWORK_OP`, and its
  full text as its name or `Stat.OP_TEXT`): XLA:TPU writes all of them, its stack outermost frame
  first, as the runtime wrote it;
- else the op's instruction in its program's code (`tpuscope.model.code.ProgramCode`, decoded by
  the trace's reader), found by (program id, op name): XLA:GPU and XLA:CPU ops, whose stack is the
  instruction's frame first, then its callers. Its framework op is the instruction's even when
  that is empty and the event names a scope (XLA:GPU kernels carry JAX's `name` scope beside the
  dialect's "no framework op" placeholder): XProf shows none there; the op table grouped by
  framework op still groups such kernels by their scope.

Ops are resolved once per distinct op (a representative event of each), never per event.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tpuscope.model.code import InstructionCode, ProgramCode
from tpuscope.model.vocabulary import Stat

if TYPE_CHECKING:
    from tpuscope.analysis.ops import OpEvents

_TEXT_MARK = " = "  # an op's full text (`%x = f32[2]{0} add(...)`), not just its name


@dataclass(frozen=True)
class OpCode:
    """The code behind one op (module docstring): empty strings and lists where nothing says."""

    program_id: int | None
    framework_op: str = ""
    hlo_text: str = ""
    source: str = ""  # `file:line` of the innermost user frame, as XProf shows it
    function: str = ""  # the function that line is in, when the stack names it
    stack: list[str] = field(default_factory=list)  # `file:line:column`, in XProf's tooltip order
    fused: list[str] = field(default_factory=list)  # a fusion: the instructions it fused

    def to_json(self) -> dict:
        return {
            "program_id": self.program_id,
            "framework_op": self.framework_op,
            "hlo_text": self.hlo_text,
            "source": self.source,
            "stack": list(self.stack),
        }


def instruction_of(
    events: OpEvents, row: int, code: Mapping[int, ProgramCode] | None
) -> InstructionCode | None:
    """The instruction of the op event at `row` of `events`, when its program's code has it."""
    if not code:
        return None
    program = code.get(int(events.program_id[row])) if len(events.program_id) else None
    if program is None:
        return None
    return program.get(events.labels.texts[int(events.op[row])])


def _has_framework_stat(events: OpEvents, row: int) -> bool:
    """Whether the event at `row` names its framework op itself (not the dialect's placeholder)."""
    offsets = [offset for _, _, offset in events.segments]
    k = bisect.bisect_right(offsets, row) - 1
    if k < 0:
        return False
    track, indices, offset = events.segments[k]
    values = track.stat_values(Stat.FRAMEWORK_OP, fill=0)
    if values is None:
        return False
    value = int(values[int(indices[row - offset])])
    trace = track.plane.trace
    return value > 0 and trace.strings[value].rstrip(":") not in trace.dialect.no_framework_op


def op_code(events: OpEvents, row: int, code: Mapping[int, ProgramCode] | None) -> OpCode:
    """What the op event at `row` came from (module docstring for which source wins)."""
    strings = events.strings
    has_program = len(events.program_id) and int(events.program_id[row])
    program_id = int(events.program_id[row]) if has_program else None
    instruction = instruction_of(events, row, code)

    def text_of(column) -> str:
        if strings is None or not len(column):
            return ""
        value = int(column[row])
        return strings[value] if value > 0 else ""

    framework = events.labels.texts[int(events.framework[row])] if int(events.framework[row]) else ""
    if instruction is not None and not _has_framework_stat(events, row):
        framework = instruction.framework_op
    own_text = text_of(events.text)
    hlo_text = own_text if _TEXT_MARK in own_text else (instruction.text if instruction else "")
    source, function, stack = "", "", []
    own_source = text_of(events.source)
    line = instruction.source if instruction is not None else None
    if own_source:
        source = own_source
        stack = [frame for frame in text_of(events.stack).split("\n") if frame]
        function = line.function if line is not None and line.text == own_source else ""
    elif instruction is not None:
        source = line.text if line is not None else ""
        function = line.function if line is not None else ""
        stack = instruction.stack_locations
    fused = list(instruction.fused) if instruction is not None else []
    return OpCode(program_id, framework, hlo_text, source, function, stack, fused)
