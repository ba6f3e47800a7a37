"""Automatic diagnosis of integration problems: one small module per rule, run by `engine`.

Usage: `report = TraceAnalysis(trace).report` (`tpuscope.analysis.session`), or
`diagnose(analysis.context, rules)` for some rules; `report.findings` are worst first, each with
numbers, evidence (time ranges and events to jump to) and framework-specific advice.

The engine (every rule and what they import) loads on first use of `diagnose`, `Report` or
`RULES`: the desktop window shows findings but runs the rules in a worker, after its first paint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tpuscope.analysis.diagnose.finding import Finding, RuleOutcome, Severity

if TYPE_CHECKING:
    from tpuscope.analysis.diagnose.engine import RULES, Report, diagnose

_ENGINE_NAMES = frozenset({"RULES", "Report", "diagnose"})

__all__ = ["RULES", "Finding", "Report", "RuleOutcome", "Severity", "diagnose"]


def __getattr__(name: str) -> Any:
    if name in _ENGINE_NAMES:
        from tpuscope.analysis.diagnose import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
