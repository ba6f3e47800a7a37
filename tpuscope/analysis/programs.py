"""The compiled programs of a trace as shared results: their signatures and code, decoded once per trace.

Each program's proto can be tens of kilobytes (the code of a large model's programs, megabytes),
and a diagnosis and the views may ask for them more than once: `PROGRAM_SIGNATURES` and
`PROGRAM_CODE` decode them once per `TraceAnalysis` (`tpuscope.model.programs.program_signatures`
and `tpuscope.model.code.program_code` decode them anew on each call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpuscope.analysis.results import Result, ResultSource
from tpuscope.model.programs import ProgramSignature, program_signatures

if TYPE_CHECKING:
    from tpuscope.model.code import ProgramCode

# program id -> signature of every module whose proto the profile holds.
PROGRAM_SIGNATURES: Result[dict[int, ProgramSignature]] = Result(
    "program_signatures", lambda a: program_signatures(a.trace)
)


def _program_code(source: ResultSource) -> dict[int, ProgramCode]:
    # The code's records (~3 ms of import) load where code is read: an overview of XLA:CPU ops reads none.
    from tpuscope.model.code import program_code

    return program_code(source.trace)


# program id -> the code of each instruction (framework op, source line, stack, text) of every
# module whose proto the profile holds.
PROGRAM_CODE: Result[dict[int, ProgramCode]] = Result("program_code", _program_code)
