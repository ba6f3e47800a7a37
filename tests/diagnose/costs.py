"""The check every test of a firing rule makes: the finding warns (at least), and exactly as severe as
its measured impact makes it under its rule's thresholds."""

from __future__ import annotations

from tpuscope.analysis.diagnose import Finding, Severity
from tpuscope.analysis.diagnose.engine import IMPACT_THRESHOLDS


def assert_costed(finding: Finding, at_least: Severity = Severity.WARNING) -> None:
    assert finding.impact is not None, finding.impact_note
    assert finding.severity >= at_least, (finding.severity, finding.impact)
    assert finding.severity == IMPACT_THRESHOLDS[finding.id].severity(finding.impact)
