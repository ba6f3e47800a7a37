"""From a device op to the user's code: its framework op, source line, stack and op text.

Two sources, in XProf's order of preference (openxla/xprof, xprof/utils/op_metrics_db_utils.cc
`SetOpMetadataFromHloEventMetadata`, xprof/utils/hlo_module_utils.cc `GetSourceInfo`):

- what the op event itself carries (`Stat.SOURCE`, `Stat.SOURCE_STACK`, `Stat.FRAMEWORK_OP`, and its
  full text as its name or `Stat.OP_TEXT`): XLA:TPU writes all of them, its stack outermost frame
  first, as the runtime wrote it; the PyTorch profiler's reader writes a kernel's source and stack
  from the Python frames of the CPU op that launched it, each frame with its function;
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
from dataclasses import field
from typing import TYPE_CHECKING

from tpuscope.model.code import UNKNOWN_LINE, InstructionCode, ProgramCode, SourceFrame, SourceLine
from tpuscope.model.records import record
from tpuscope.model.vocabulary import Stat

if TYPE_CHECKING:
    from tpuscope.analysis.ops import OpEvents

_TEXT_MARK = " = "  # an op's full text (`%x = f32[2]{0} add(...)`), not just its name
# Instructions of a program whose stacks are compared to find the line that called it: a bounded,
# evenly spread sample, so that a 50k-instruction program costs as little as a small one (each
# instruction asked for is decoded, ~80 us).
CALLER_SAMPLE = 256


@record(frozen=True)
class OpCode:
    """The code behind one op (module docstring): empty strings and lists where nothing says."""

    program_id: int | None
    framework_op: str = ""
    hlo_text: str = ""
    source: str = ""  # `file:line` of the innermost user frame, as XProf shows it
    function: str = ""  # the function that line is in, when the stack names it
    stack: list[str] = field(default_factory=list)  # `file:line:column`, in XProf's tooltip order
    fused: list[str] = field(default_factory=list)  # a fusion: the instructions it fused
    stack_functions: list[str] = field(default_factory=list)  # each frame's function where the event names it

    def to_json(self) -> dict:
        return {
            "program_id": self.program_id,
            "framework_op": self.framework_op,
            "hlo_text": self.hlo_text,
            "source": self.source,
            "stack": list(self.stack),
        }


@record(frozen=True)
class OpDetails:
    """What the app shows of one op: its code, its stack as a traceback, the instructions it fused."""

    code: OpCode
    traceback: str = ""  # `format_traceback` of its stack, "" without one
    fused_texts: list[str] = field(default_factory=list)  # a fusion: each fused instruction's text


def op_details(events: OpEvents, row: int, code: Mapping[int, ProgramCode] | None) -> OpDetails:
    """The details of the op event at `row` (see `OpDetails`)."""
    found = op_code(events, row, code)
    instruction = instruction_of(events, row, code)
    frames = frames_of(found, instruction)
    program = code.get(found.program_id) if code and found.program_id is not None else None
    fused = [program.get(name) for name in found.fused] if program is not None else []
    texts = [f.text for f in fused if f is not None]
    return OpDetails(found, format_traceback(frames) if frames else "", texts)


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
    source, function = "", ""
    stack: list[str] = []
    own_source = text_of(events.source)
    line = instruction.source if instruction is not None else None
    stack_functions: list[str] = []
    if own_source:
        source = own_source
        stack, stack_functions = _stack_lines(text_of(events.stack))
        function = line.function if line is not None and line.text == own_source else ""
        if not function:  # the innermost frame at that line names it, when the event's stack does
            at_line = [
                f for loc, f in zip(stack, stack_functions, strict=True) if loc.startswith(source + ":")
            ]
            function = at_line[-1] if at_line else ""
    elif instruction is not None:
        source = line.text if line is not None else ""
        function = line.function if line is not None else ""
        stack = instruction.stack_locations
    fused = list(instruction.fused) if instruction is not None else []
    return OpCode(program_id, framework, hlo_text, source, function, stack, fused, stack_functions)


def _stack_lines(text: str) -> tuple[list[str], list[str]]:
    """A `Stat.SOURCE_STACK` text as its locations and their functions ("" where a line has none)."""
    locations, functions = [], []
    for line in text.split("\n"):
        if line:
            location, _, function = line.partition("\t")
            locations.append(location)
            functions.append(function)
    return locations, functions


def caller_line(program: ProgramCode, function: str = "", sample: int = CALLER_SAMPLE) -> SourceLine | None:
    """The line that called the traced function a program was compiled from, when its stacks say.

    Every instruction's stack ends in the same frames: those of the call that traced the function
    (`y = step(x)` and its callers). The innermost frame they all share that lies outside the
    traced code is that call; traced code is a frame in a function some instruction's innermost
    frame is in, or, when `function` (the traced function's name, e.g. `train_step`) is given, in it
    or in a function defined inside it (`main.<locals>.f.<locals>.<listcomp>` for `f`). None when
    the program has no stacks, or its stacks share no such frame.
    """
    names = program.index.names()
    if not names:
        return None
    step = max(len(names) // sample, 1)
    stacks = []
    for name in names[::step][:sample]:
        found = program.get(name)
        if found is not None and found.stack:
            stacks.append(found.stack)
    if not stacks:
        return None
    shared: list[SourceFrame] = []  # outermost first
    for frames in zip(*(reversed(stack) for stack in stacks), strict=False):
        if any(frame != frames[0] for frame in frames[1:]):
            break
        shared.append(frames[0])
    traced = {stack[0].function for stack in stacks}

    def in_traced_code(qualified: str) -> bool:
        return qualified in traced or bool(function) and function in qualified.split(".")

    for frame in reversed(shared):  # innermost first
        if in_traced_code(frame.function) or not frame.file or frame.line == UNKNOWN_LINE:
            continue
        return SourceLine(frame.file, frame.line, frame.function)
    return None


def format_traceback(frames: list[SourceFrame]) -> str:
    """A stack (innermost frame first) as Python prints a traceback: outermost call first, one
    `File "...", line N, in function` per frame, so it reads like every other stack a Python user sees."""
    lines = ["Traceback (most recent call last):"]
    for frame in reversed(frames):
        line = str(frame.line) if frame.line != UNKNOWN_LINE else "?"
        where = f", in {frame.function}" if frame.function else ""
        lines.append(f'  File "{frame.file or "?"}", line {line}{where}')
    return "\n".join(lines)


def frames_of(code: OpCode, instruction: InstructionCode | None) -> list[SourceFrame]:
    """The op's stack as frames, innermost first: its instruction's (with function names) where
    the program's code has it, else the locations its event carries (written outermost first,
    `file:line:column`, with each frame's function where the reader knows it)."""
    if instruction is not None and instruction.stack:
        return list(instruction.stack)
    frames = []
    functions = (
        code.stack_functions if len(code.stack_functions) == len(code.stack) else [""] * len(code.stack)
    )
    for location, function in zip(reversed(code.stack), reversed(functions), strict=True):
        file, _, rest = location.rpartition(":")
        file, _, line = file.rpartition(":") if file else ("", "", rest)
        try:
            frames.append(SourceFrame(file, int(line), int(rest), function))
        except ValueError:
            frames.append(SourceFrame(location, UNKNOWN_LINE, UNKNOWN_LINE, function))
    return frames
