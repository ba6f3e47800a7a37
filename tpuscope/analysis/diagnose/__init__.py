"""Automatic diagnosis of integration problems: one small module per rule, run by `engine`.

Usage: `report = diagnose(trace)`; `report.findings` are worst first, each with numbers,
evidence (time ranges and events to jump to) and framework-specific advice.
"""

from tpuscope.analysis.diagnose.engine import RULES, Report, diagnose
from tpuscope.analysis.diagnose.finding import Finding, RuleOutcome, Severity

__all__ = ["RULES", "Finding", "Report", "RuleOutcome", "Severity", "diagnose"]
