"""A format registered in `tpuscope.readers.READERS` alone opens in the app as it does in the CLI."""

from __future__ import annotations

from tests.readers.event_csv import EVENTS, SUFFIX, event_csv_registered, write_event_csv
from tests.ui.conftest import open_and_wait
from tpuscope.readers import dialog_filters


def test_the_app_opens_a_registered_format_and_offers_it_in_the_file_dialog(qtbot, window, tmp_path):
    with event_csv_registered():
        assert f"*{SUFFIX}" in dialog_filters()
        trace = open_and_wait(
            qtbot, window, write_event_csv(tmp_path / f"worker7{SUFFIX}", EVENTS), "timeline"
        )
        assert window.trace is trace
        assert trace.hosts == ["worker7"] and trace.event_count == len(EVENTS)
        assert {t.name for t in trace.tracks()} == {"main", "loader"}
