"""The Overview and Diagnostics views on a profile cut short (issue 33): the incomplete state, with the
share read, where a whole profile gets its all-clear; never a green "No integration problems found"."""

from __future__ import annotations

import pytest

from tests.conftest import require_shared_traces
from tests.reliability.cut_profiles import write_cut_tpu_profile
from tests.ui.widgets import show_exposed
from tpuscope.analysis.diagnose import RULES
from tpuscope.app.opener import open_trace
from tpuscope.ui.diagnostics_view import DiagnosticsView
from tpuscope.ui.overview_view import OverviewView

WAIT_MS = 30_000  # generous: the CI machine is shared


@pytest.fixture(scope="module")
def cut_trace(tmp_path_factory):
    require_shared_traces()
    return open_trace(write_cut_tpu_profile(tmp_path_factory.mktemp("cut")), use_cache=False)


def test_the_overview_shows_the_part_read_not_an_all_clear(qtbot, cut_trace):
    view = show_exposed(qtbot, OverviewView(), 1366, 768)
    try:
        with qtbot.waitSignal(view.overviewReady, timeout=WAIT_MS):
            view.set_trace(cut_trace)
        texts = [view.findings_list.item(r).text() for r in range(view.findings_list.count())]
        assert texts == ["No problems found in the 0.87% of the profile that could be read."]
        assert "cut short" in view.findings_list.item(0).toolTip()
        assert "could not be read whole" in view.findings_caption.text()
        assert "No device ops in the part of this profile read" in view.ops_empty.text()
        assert "in the part read" in view.cards["duty_cycle"].detail.text()
    finally:
        view.shutdown()


def test_the_diagnostics_view_says_the_profile_is_incomplete(qtbot, cut_trace):
    view = show_exposed(qtbot, DiagnosticsView(), 1366, 768)
    try:
        with qtbot.waitSignal(view.reportReady, timeout=WAIT_MS):
            view.set_trace(cut_trace)
        detail = view.detail.toPlainText()
        assert "No integration problems found" not in detail
        assert "No problems found in the 0.87% of the profile that could be read" in detail
        assert "Incomplete profile:" in detail and "cut short" in detail
        assert "incomplete profile" in view.summary.text()
        checked = [view.checked_list.item(r).text() for r in range(view.checked_list.count())]
        assert len(checked) == len(RULES) and all(t.endswith("cannot judge the rest)") for t in checked)
    finally:
        view.shutdown()
