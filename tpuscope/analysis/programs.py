"""The compiled programs of a trace as a shared result: their signatures, decoded once per trace.

Each program's proto can be tens of kilobytes, and a diagnosis and the views may ask for the
signatures more than once: `PROGRAM_SIGNATURES` decodes them once per `TraceAnalysis`
(`tpuscope.model.programs.program_signatures` decodes them anew on each call).
"""

from __future__ import annotations

from tpuscope.analysis.results import Result
from tpuscope.model.programs import ProgramSignature, program_signatures

# program id -> signature of every module whose proto the profile holds.
PROGRAM_SIGNATURES: Result[dict[int, ProgramSignature]] = Result(
    "program_signatures", lambda a: program_signatures(a.trace)
)
