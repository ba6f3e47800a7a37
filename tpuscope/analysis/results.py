"""What one per-trace result is: a name and how to compute it (`tpuscope.analysis.session` computes
each once per trace and shares it).

Apart from the session so that any analysis package can define its own results (the memory
report in `tpuscope.analysis.memory.report`, ...) and the rules can ask for them, without importing
the session, which imports those packages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from tpuscope.analysis.session import TraceAnalysis

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class Result(Generic[T]):
    """One kind of result of a trace: `name` identifies it (two equal names are the same result),
    `compute` makes it from the analysis, asking it for any other results it needs."""

    name: str
    compute: Callable[[TraceAnalysis], T]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Result) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Result({self.name!r})"
