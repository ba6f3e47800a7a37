"""What a diagnosis rule returns: a Finding with numbers, evidence and advice."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from tpuscope.analysis.facts.evidence import largest_first
from tpuscope.model.plain import plain


class Severity(IntEnum):
    """Ordered so that max() and sorting give the worst first."""

    INFO = 0
    WARNING = 1
    CRITICAL = 2

    @property
    def label(self) -> str:
        return self.name.lower()

    @staticmethod
    def parse(text: str) -> Severity:
        return Severity[text.upper()]


@dataclass
class Finding:
    """One diagnosed problem (or a notable fact at severity info).

    `id` is stable across versions (tests, CI gates and the UI key on it); `evidence` is a list of
    evidence items (`tpuscope.analysis.facts.evidence`): where the finding is seen in the trace.
    """

    id: str
    severity: Severity
    title: str
    explanation: str
    metrics: dict[str, Any] = field(default_factory=dict)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity.label,
            "title": self.title,
            "explanation": self.explanation,
            "metrics": {k: plain(v) for k, v in self.metrics.items()},
            "evidence": [{k: plain(v) for k, v in e.items()} for e in self.evidence],
            "advice": list(self.advice),
        }


@dataclass
class RuleOutcome:
    """What a rule returns: its findings and one line on what it looked at.

    `checked` is said whether or not the rule found anything ("input wait 0.4% of step time,
    below 5%"), so "No problems found" tells the user what was checked. A rule may still return a
    plain list of findings; the engine then has no summary for it.
    """

    findings: list[Finding] = field(default_factory=list)
    checked: str = ""


def warning_outcome(
    rule_id: str,
    title: str,
    explanation: str,
    metrics: dict[str, Any],
    evidence: list[dict[str, Any]],
    advice: list[str],
    checked: str,
) -> RuleOutcome:
    """A rule's one warning, its longest evidence first in time order, and its checked line."""
    finding = Finding(rule_id, Severity.WARNING, title, explanation, metrics, largest_first(evidence), advice)
    return RuleOutcome([finding], checked)


def percent(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole > 0 else 0.0


def ms(ps: float) -> float:
    """Picoseconds as milliseconds, rounded for display and JSON."""
    return round(float(ps) / 1e9, 3)
