"""A finding whose cost cannot be measured says why once (issue 37: the Diagnostics detail read
"Its cost cannot be measured: the compilations happened outside the profile window: its cost cannot
be measured: the compilations happened outside the profile window"), and one with a cost says what
it measured after it."""

from __future__ import annotations

from tests.conftest import SAMPLES
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.ui.diagnostics_view import finding_html


def test_the_cost_of_each_finding_is_said_once():
    report = TraceAnalysis(open_trace(SAMPLES / "jax_mi300x_attention.xplane.pb")).report
    unmeasured = [f for f in report.findings if f.impact is None and f.impact_note]
    assert any("outside the profile window" in f.impact_note for f in unmeasured)
    for finding in unmeasured:
        page = finding_html(finding)
        assert page.count(finding.impact_note[1:]) == 1, page  # [1:]: the first letter is capitalized
    for finding in (f for f in report.findings if f.impact is not None):
        assert finding.impact.basis[1:] in finding_html(finding)
