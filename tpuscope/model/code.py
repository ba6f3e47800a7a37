"""The user's code behind each compiled instruction: framework op, source line, stack and op text.

A format that keeps its compiled programs (XPlane: the `HloProto` on `/host:metadata`) records, per
instruction, the framework op that produced it (JAX: `jit(f)/jit(main)/add`), the source line and,
in newer XLA, a stack of frames (file, function, line, column) from the call that traced it. The
reader's `Dialect.decode_program_code` turns one program's proto into a `ProgramCode`, so that the
analyses above see plain strings and numbers and no format.

Which line is "the" source line follows XProf (openxla/xprof, xprof/utils/hlo_module_utils.cc
`GetSourceInfo`): the instruction's own `source_file`/`source_line` when it has a file, else the
first (innermost) frame of its stack; no file, or an unknown line (-1), is no source line.
"""

from __future__ import annotations

from typing import Protocol

from tpuscope.model.programs import decode_each_program
from tpuscope.model.records import record
from tpuscope.model.trace import Trace

UNKNOWN_LINE = -1  # XProf's value for a frame whose line or column the index does not have


@record(frozen=True)
class SourceFrame:
    """One frame of a traced call's stack."""

    file: str  # "" when the index does not have it
    line: int  # UNKNOWN_LINE when not known
    column: int  # UNKNOWN_LINE when not known
    function: str = ""

    @property
    def location(self) -> str:
        """`file:line:column`, as XProf lists a stack's frames."""
        return f"{self.file}:{self.line}:{self.column}"


@record(frozen=True)
class SourceLine:
    """A file and line, with the function the line is in when the stack says so."""

    file: str
    line: int
    function: str = ""

    @property
    def text(self) -> str:
        """`file:line`, as XProf's source column shows it."""
        return f"{self.file}:{self.line}"


@record(frozen=True)
class InstructionCode:
    """What one compiled instruction came from and how its compiler prints it."""

    name: str
    opcode: str
    text: str  # the instruction as its compiler prints it (XLA: `%x = f32[8]{0} add(...)`)
    framework_op: str = ""  # the framework's op path (XLA metadata `op_name`)
    op_type: str = ""
    source_file: str = ""
    source_line: int = 0
    stack: tuple[SourceFrame, ...] = ()  # innermost frame first, callers after it
    computation: str = ""
    fused: tuple[str, ...] = ()  # a fusion: the instructions of the computation it fuses, in order

    @property
    def source(self) -> SourceLine | None:
        """The instruction's source line as XProf picks it (module docstring), None without one."""
        innermost = self.stack[0] if self.stack else None
        if self.source_file:
            file, line = self.source_file, self.source_line
            function = innermost.function if innermost and innermost.file == file else ""
        elif innermost is not None:
            file, line, function = innermost.file, innermost.line, innermost.function
        else:
            return None
        if not file or line == UNKNOWN_LINE:
            return None
        return SourceLine(file, line, function)

    @property
    def stack_locations(self) -> list[str]:
        """The stack as `file:line:column` strings, innermost first (XProf's source-info tooltip)."""
        return [frame.location for frame in self.stack]


class InstructionIndex(Protocol):
    """A reader's instructions of one program, each decoded when first asked for.

    Large programs have tens of thousands of instructions and a profile names a few hundred of
    them as ops: the reader resolves (and prints) only those asked for, once each.
    """

    def names(self) -> list[str]: ...

    def get(self, name: str) -> InstructionCode | None: ...

    def notes(self) -> list[str]: ...


class _NoInstructions:
    def names(self) -> list[str]:
        return []

    def get(self, name: str) -> InstructionCode | None:
        return None

    def notes(self) -> list[str]:
        return []


@record(frozen=True)
class ProgramCode:
    """Every instruction of one compiled program (fused computations included), by name."""

    module_name: str
    program_id: int | None
    index: InstructionIndex = _NoInstructions()
    has_stack_index: bool = False  # the program carries a stack-frame index

    def get(self, name: str) -> InstructionCode | None:
        return self.index.get(name)

    @property
    def instructions(self) -> dict[str, InstructionCode]:
        """Every instruction, by name (decodes all of them: `get` decodes one)."""
        found = {}
        for name in self.index.names():
            instruction = self.index.get(name)
            if instruction is not None:
                found[name] = instruction
        return found

    @property
    def notes(self) -> list[str]:
        """What could not be decoded, in words (decodes every instruction to know)."""
        return self.index.notes()


def program_code(trace: Trace) -> dict[int, ProgramCode]:
    """program id -> the code of every program whose proto the profile holds and its reader reads
    (empty for formats that keep no programs). Decoded anew on each call:
    `tpuscope.analysis.programs.PROGRAM_CODE` is the shared, computed-once result."""
    return decode_each_program(trace, trace.dialect.decode_program_code)
