"""What a diagnosis rule returns: a Finding with numbers, evidence and advice."""

from __future__ import annotations

from dataclasses import field
from enum import IntEnum
from typing import Any

from tpuscope.analysis.facts.evidence import largest_first
from tpuscope.analysis.metrics.format import format_percent
from tpuscope.model.plain import plain
from tpuscope.model.records import record
from tpuscope.model.units import format_bytes


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


@record(frozen=True)
class Impact:
    """What fixing a finding would give back, as its rule measures it: the share of step time (and
    milliseconds per step) the device or the step would regain, or for memory the bytes at stake and
    their share of the device's capacity. `basis` says in one line what was measured, so a user can
    weigh findings against each other the way XProf's and Nsight's rules state a share of time."""

    basis: str
    percent_of_step_time: float | None = None
    ms_per_step: float | None = None
    bytes: int | None = None
    percent_of_capacity: float | None = None

    @property
    def percent(self) -> float:
        """The share severity and ordering go by: of step time, else of memory capacity."""
        if self.percent_of_step_time is not None:
            return self.percent_of_step_time
        return self.percent_of_capacity if self.percent_of_capacity is not None else 0.0

    def words(self) -> str:
        """ "costs 12.3% of each step (4.1 ms per step)", as the text output and the app show it."""
        if self.percent_of_step_time is not None:
            per_step = f" ({self.ms_per_step:g} ms per step)" if self.ms_per_step is not None else ""
            return f"costs {format_percent(self.percent_of_step_time)} of each step{per_step}"
        if self.bytes is not None:
            share = (
                f", {self.percent_of_capacity:g}% of capacity" if self.percent_of_capacity is not None else ""
            )
            return f"{format_bytes(self.bytes)} at stake{share}"
        return "cost not measured"

    @staticmethod
    def from_json(data: dict[str, Any]) -> Impact:
        """The impact `to_json` wrote (a per-host pod run hands findings on as JSON)."""
        return Impact(
            str(data.get("basis", "")),
            data.get("percent_of_step_time"),
            data.get("ms_per_step"),
            data.get("bytes"),
            data.get("percent_of_capacity"),
        )

    def short(self) -> str:
        """ "12.3% of step", "1.20 GiB": the few characters a list of findings leads with."""
        if self.percent_of_step_time is not None:
            return f"{format_percent(self.percent_of_step_time)} of step"
        if self.bytes is not None:
            return format_bytes(self.bytes)
        return ""

    def to_json(self) -> dict[str, Any]:
        return {
            "percent_of_step_time": self.percent_of_step_time,
            "ms_per_step": self.ms_per_step,
            "bytes": self.bytes,
            "percent_of_capacity": self.percent_of_capacity,
            "basis": self.basis,
        }


def sentence_case(text: str) -> str:
    """`text` with its first letter upper case and the rest as it is ("1.20 GiB", not "1.20 gib")."""
    return text[:1].upper() + text[1:]


@record(frozen=True)
class ImpactThresholds:
    """When a finding's impact (percent of step time, or of capacity for memory) makes it a warning
    and when critical; below `warning` it is info. `source` names where the numbers come from."""

    warning: float
    critical: float
    source: str

    def severity(self, impact: Impact | None) -> Severity:
        if impact is None:
            return Severity.INFO
        if impact.percent >= self.critical:
            return Severity.CRITICAL
        if impact.percent >= self.warning:
            return Severity.WARNING
        return Severity.INFO

    def words(self) -> str:
        return f"a warning from {self.warning:g}%, critical from {self.critical:g}%"


# XProf's input-pipeline bands: >= 5% of step time "moderately", >= 20% "highly" input-bound
# (openxla/xprof, xprof/convert/op_stats_to_input_pipeline_analysis.cc,
# kModeratelyInfeedBoundThresholdInPercent, kHighlyInfeedBoundThresholdInPercent). Applied to the time
# any finding costs, that is our heuristic: under 5% of a step is not worth a warning whatever the
# cause; from 20% it is the first thing to fix.
STEP_TIME_BANDS = ImpactThresholds(
    5.0, 20.0, "XProf's input-pipeline bands (5% / 20% of step time), our heuristic for every time cost"
)


def step_time_impact(periods: tuple[Any, Any], lost_ps: float, basis: str) -> Impact | None:
    """The impact of `lost_ps` of time lost inside the steps `periods` (starts, ends); None without steps,
    where a share of step time cannot be measured."""
    p0, p1 = periods
    step_ps = float((p1 - p0).sum()) if len(p0) else 0.0
    if step_ps <= 0:
        return None
    lost = max(float(lost_ps), 0.0)
    return Impact(basis, percent(lost, step_ps), ms(lost / len(p0)))


def device_time_impact(
    periods: tuple[Any, Any], lost_device_ps: float, devices: int, basis: str
) -> Impact | None:
    """The impact of device time summed over `devices` devices (an op table's self times): per device,
    as a share of step time, since the devices run side by side within the same steps."""
    return step_time_impact(periods, float(lost_device_ps) / max(devices, 1), basis)


NO_STEPS_NOTE = "its cost cannot be measured: the profile has no steps to weigh it against"


@record
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
    impact: Impact | None = None
    # Why `impact` is None (no steps, no device plane), said instead of a made-up number.
    impact_note: str = ""

    @property
    def cost_words(self) -> str:
        """The impact as the text output and the Diagnostics list say it, or why it is not known."""
        return self.impact.words() if self.impact is not None else (self.impact_note or "cost not measured")

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity.label,
            "title": self.title,
            "impact": self.impact.to_json() if self.impact is not None else None,
            "impact_note": self.impact_note,
            "explanation": self.explanation,
            "metrics": {k: plain(v) for k, v in self.metrics.items()},
            "evidence": [{k: plain(v) for k, v in e.items()} for e in self.evidence],
            "advice": list(self.advice),
        }


@record
class RuleOutcome:
    """What a rule returns: its findings and one line on what it looked at.

    `checked` is said whether or not the rule found anything ("input wait 0.4% of step time,
    below 5%"), so "No problems found" tells the user what was checked. A rule may still return a
    plain list of findings; the engine then has no summary for it.
    """

    findings: list[Finding] = field(default_factory=list)
    checked: str = ""


def costed_outcome(
    rule_id: str,
    title: str,
    explanation: str,
    metrics: dict[str, Any],
    evidence: list[dict[str, Any]],
    advice: list[str],
    checked: str,
    impact: Impact | None,
    thresholds: ImpactThresholds = STEP_TIME_BANDS,
) -> RuleOutcome:
    """A rule's one finding, its severity from its impact, its longest
    evidence first in time order, and its checked line."""
    severity = thresholds.severity(impact)
    note = "" if impact is not None else NO_STEPS_NOTE
    finding = Finding(
        rule_id,
        severity,
        title,
        explanation,
        metrics,
        largest_first(evidence),
        advice,
        impact,
        note,
    )
    return RuleOutcome([finding], checked)


def percent(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole > 0 else 0.0


def ms(ps: float) -> float:
    """Picoseconds as milliseconds, rounded for display and JSON."""
    return round(float(ps) / 1e9, 3)
