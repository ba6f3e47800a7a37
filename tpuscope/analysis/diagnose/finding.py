"""What a diagnosis rule returns: a Finding with numbers, evidence and advice."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np

from tpuscope.model.plain import plain
from tpuscope.model.trace import Track

# At most this many evidence items per finding (largest first): enough to jump to, small enough for JSON.
MAX_EVIDENCE = 50


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

    `id` is stable across versions (tests, CI gates and the UI key on it);
    `evidence` is a list of dicts {label, start_ps, end_ps, host, plane?, track?, event_index?, focus?};
    an item with `focus` true is where a view jumps when the finding is opened (else all of them).
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


def event_evidence(label: str, track: Track, index: int) -> dict[str, Any]:
    """Evidence pointing at one event of a track."""
    start = int(track.start_ps[index])
    return {
        "label": label,
        "start_ps": start,
        "end_ps": start + int(track.duration_ps[index]),
        "host": track.plane.host,
        "plane": track.plane.name,
        "track": track.name,
        "event_index": int(index),
    }


def range_evidence(
    label: str, start_ps: int, end_ps: int, host: str, plane: str | None = None
) -> dict[str, Any]:
    """Evidence pointing at a time range (e.g. an idle gap) rather than an event."""
    item: dict[str, Any] = {"label": label, "start_ps": int(start_ps), "end_ps": int(end_ps), "host": host}
    if plane is not None:
        item["plane"] = plane
    return item


def largest_first(items: list[dict[str, Any]], limit: int = MAX_EVIDENCE) -> list[dict[str, Any]]:
    """The `limit` longest evidence items, returned in time order."""
    chosen = sorted(items, key=lambda e: e["end_ps"] - e["start_ps"], reverse=True)[:limit]
    return sorted(chosen, key=lambda e: e["start_ps"])


def percent(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole > 0 else 0.0


def ms(ps: float) -> float:
    """Picoseconds as milliseconds, rounded for display and JSON."""
    return round(float(ps) / 1e9, 3)


def evidence_events(trace, evidence: list[dict[str, Any]]) -> list[tuple[Track, np.ndarray]]:
    """The events that evidence items point at, grouped per track (what a timeline highlights).

    Items without an event (time ranges) are skipped; items naming a plane or track the trace
    does not have are ignored rather than failing, since evidence may come from a saved report.
    """
    per_track: dict[tuple[str, str, str], list[int]] = {}
    for item in evidence:
        if item.get("event_index") is None or not item.get("plane") or not item.get("track"):
            continue
        key = (item["host"], item["plane"], item["track"])
        per_track.setdefault(key, []).append(int(item["event_index"]))
    found = []
    for (host, plane_name, track_name), indices in per_track.items():
        plane = trace.find_plane(plane_name, host)
        track = plane.track(track_name) if plane is not None else None
        if track is None:
            continue
        idx = np.unique(np.array(indices, dtype=np.int64))
        found.append((track, idx[idx < len(track)]))
    return found
