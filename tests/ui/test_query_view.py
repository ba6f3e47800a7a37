"""The Query tab on a real profile: queries off the UI thread, sorting, CSV, history, examples, errors
as one sentence, Cancel, cut results, and results pinned or outlined on the timeline."""

from __future__ import annotations

import csv
import io
import time

import numpy as np
import pytest
from PySide6.QtCore import QModelIndex, QPointF, QSettings, Qt
from PySide6.QtWidgets import QApplication

from tests.conftest import SAMPLES
from tests.ui.conftest import open_and_wait
from tests.ui.widgets import show_exposed
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.query.session import QuerySession
from tpuscope.ui.query_view import CHUNK_ROWS, DEFAULT_QUERY, MAX_ROWS, QueryResult, QueryView, examples
from tpuscope.ui.timeline.layout import ROW_HEIGHT
from tpuscope.ui.timeline.view import PICKED_LAYER

SAMPLE = SAMPLES / "tpu_v6e_inference_4chip.xplane.pb"
WAIT_MS = 60_000
LONGEST = "SELECT id, track_id, ts_ps, dur_ps, name FROM events ORDER BY dur_ps DESC, id LIMIT 100"
# Runs for minutes unless interrupted (10^11 rows summed).
ENDLESS = "SELECT sum(i) FROM range(100000000000) t(i)"


@pytest.fixture(scope="module")
def trace():
    return open_trace(SAMPLE)


@pytest.fixture
def settings(tmp_path) -> QSettings:
    return QSettings(str(tmp_path / "tpuscope.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def view(qtbot, trace, settings):
    widget = show_exposed(qtbot, QueryView(settings=settings), 1200, 700)
    widget.set_trace(trace)
    yield widget
    widget.shutdown()


def _run(qtbot, view: QueryView, query: str):
    with qtbot.waitSignal(view.queryFinished, timeout=WAIT_MS) as finished:
        view.run_query(query)
    return finished.args[0]


def test_runs_in_a_worker_and_sorts_every_fetched_row(qtbot, view, trace):
    started = time.perf_counter()
    with qtbot.waitSignal(view.queryFinished, timeout=WAIT_MS) as finished:
        view.run_query(DEFAULT_QUERY)
        assert view.is_running() and time.perf_counter() - started < 1.0  # the UI thread is free
    result = finished.args[0]
    assert isinstance(result, QueryResult)
    expected = QuerySession(TraceAnalysis(trace)).sql(DEFAULT_QUERY).fetchall()
    assert view.model.rowCount() == len(expected) == result.rows
    assert [view.model.value(r, 0) for r in range(len(expected))] == [row[0] for row in expected]
    assert "rows in" in view.status.text()
    view.table.sortByColumn(2, Qt.SortOrder.AscendingOrder)
    totals = [view.model.value(r, 2) for r in range(view.model.rowCount())]
    assert totals == sorted(r[2] for r in expected)
    view.table.sortByColumn(0, Qt.SortOrder.DescendingOrder)
    names = [view.model.value(r, 0) for r in range(view.model.rowCount())]
    assert names == sorted((r[0] for r in expected), reverse=True)
    text = view.copy_csv()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["name", "count", "total_us"] and [r[0] for r in rows[1:]] == names
    assert QApplication.clipboard().text() == text


def test_history_is_kept_in_the_settings_and_examples_all_run(qtbot, view, settings):
    examples_found = examples_of_schema()
    assert any("events" in q for _, q in examples_found)
    for title, query in examples_found:
        result = _run(qtbot, view, query)
        assert isinstance(result, QueryResult), f"{title}: {result}"
    again = QueryView(settings=settings)
    try:
        assert again.history_queries()[0] == examples_found[-1][1]
        assert again.history.count() == 1 + len({q for _, q in examples_found})
        again._history_chosen(2)
        assert again.editor.toPlainText() == examples_found[-2][1]
    finally:
        again.shutdown()


def examples_of_schema():
    from tpuscope.query.session import schema_rows

    return examples(schema_rows())


def test_the_editor_highlights_keywords_tables_and_columns(view):
    view.editor.setPlainText("SELECT name FROM events -- a comment")
    QApplication.processEvents()
    formats = view.editor.document().firstBlock().layout().formats()
    starts = {f.start: f.format.foreground().color().name() for f in formats}
    assert len({starts[0], starts[7], starts[17], starts[24]}) == 4  # keyword, column, table, comment


@pytest.mark.parametrize(
    ("query", "sentence"),
    [
        ("COPY events TO 'out.csv'", "COPY (writing or reading files) is refused"),
        ("SELECT name\nFROM events WHERE", "(line 2, column"),
        ("SELECT * FROM read_csv('/etc/passwd')", "a query reads the profile's tables and nothing else"),
        ("SELECT nothing FROM events", "nothing"),
        ("", "the query is empty"),
    ],
)
def test_errors_are_one_sentence_in_the_tab(qtbot, view, query, sentence):
    if query:
        message = _run(qtbot, view, query)
        assert isinstance(message, str) and sentence in message
    else:
        view.run_query("")
    text = view.status.text()
    assert sentence.lower() in text.lower() and "\n" not in text and "Traceback" not in text
    assert _run(qtbot, view, "SELECT 1 AS one").rows == 1  # the tab is still usable


def test_cancel_interrupts_the_query_and_the_next_one_runs(qtbot, view):
    view.run_query(ENDLESS)
    qtbot.wait(500)  # DuckDB is inside the query now
    assert view.is_running() and view.cancel_button.isEnabled()
    started = time.perf_counter()
    view.cancel()
    view.jobs.wait()
    assert time.perf_counter() - started < 10.0  # minutes uncancelled
    QApplication.processEvents()
    assert view.status.text() == "Cancelled." and not view.cancel_button.isEnabled()
    assert _run(qtbot, view, "SELECT 42 AS answer").data == [[42]]
    # A Run while one runs cancels it: only the newer query's rows are shown.
    view.run_query(ENDLESS)
    qtbot.wait(300)
    assert _run(qtbot, view, "SELECT 7 AS seven").data == [[7]]


def test_a_huge_result_is_cut_and_shown_a_chunk_at_a_time(qtbot, view):
    result = _run(qtbot, view, f"SELECT i FROM range({MAX_ROWS * 3}) t(i)")
    assert result.rows == MAX_ROWS and result.cut
    assert "add a LIMIT" in view.status.text()
    assert view.model.rowCount() == CHUNK_ROWS and view.model.canFetchMore(QModelIndex())
    view.model.fetchMore(QModelIndex())
    assert view.model.rowCount() == 2 * CHUNK_ROWS
    assert not _run(qtbot, view, f"SELECT i FROM range({MAX_ROWS}) t(i)").cut


def test_a_write_is_refused_and_a_new_trace(qtbot, view, trace):
    refused = _run(qtbot, view, "CREATE VIEW long_ops AS SELECT * FROM events WHERE dur_ps > 1e6")
    assert isinstance(refused, str) and "refused" in refused  # the session's tables stay the profile's
    (count,) = _run(qtbot, view, "SELECT count(*) FROM events WHERE dur_ps > 1e6").data[0]
    assert count == sum(int((t.duration_ps > 1e6).sum()) for t in trace.tracks())
    view.set_trace(None)
    assert view.model.rowCount() == 0
    view.run_query("SELECT 1")
    assert "open a profile first" in view.status.text().lower()


def test_pinned_and_outlined_results_on_the_timeline(qtbot, window):
    open_and_wait(qtbot, window, SAMPLE, view="query")
    query_view = window.views["query"]
    result = _run(qtbot, query_view, LONGEST)
    assert result.rows == 100 and query_view.pin_button.isEnabled()
    tracks = window.trace.track_list()
    ids, track_ids, ts, dur = (np.asarray(result.data[c], np.int64) for c in range(4))

    # Outlined: exactly the rows' events, each on its track.
    assert query_view.outline_result() == 100
    outlined = window.timeline.highlights[PICKED_LAYER]
    for k in np.unique(track_ids).tolist():
        depths = outlined[id(tracks[k])].depths
        indices = np.sort(np.concatenate([d.indices for d in depths]))
        assert np.array_equal(tracks[k].start_ps[indices], np.sort(ts[track_ids == k]))

    # Pinned: a track of its own, above the planes, whose boxes are the rows.
    pinned = query_view.pin_result()
    assert pinned is not None and len(pinned) == 100
    rows = window.timeline.layout_.rows
    assert rows[0].label == "Query tracks" and rows[1].kind == "query" and rows[1].query is pinned
    assert np.array_equal(np.sort(pinned.track.duration_ps), np.sort(dur))
    window.show_view("timeline")
    longest = int(np.argmax(pinned.track.duration_ps))
    start, length = float(pinned.track.start_ps[longest]), float(pinned.track.duration_ps[longest])
    window.timeline.zoom_to_range(start, start + length)
    QApplication.processEvents()
    window.timeline.grab()  # paints the pinned track with the others
    view = window.timeline.viewport()
    y = view.y_of(rows[1].y + int(pinned.track.depth[longest]) * ROW_HEIGHT) + ROW_HEIGHT / 2
    point = QPointF(float(view.x_of(start + length / 2)), y)
    assert "Query 1" in window.timeline.tooltip_at(point.toPoint())
    # Each pinned box knows the profile's event its row named (its track and index: the row's id).
    offsets = np.concatenate(([0], np.cumsum([len(t) for t in tracks])))
    for i in range(len(pinned)):
        track, index = pinned.origin(i, tracks)
        k = tracks.index(track)
        row = int(np.flatnonzero(ids == offsets[k] + index)[0])
        assert (track.start_ps[index], track.duration_ps[index]) == (pinned.track.start_ps[i], dur[row])
    hit, position = window.timeline.query_event_at(point)
    assert hit is pinned
    window.timeline.click(point)  # selects the profile's event the row came from
    assert window.timeline.selected == pinned.origin(position, tracks)

    query_view.unpin_all()
    assert all(r.kind != "query" for r in window.timeline.layout_.rows)


def test_screenshot_of_the_query_tab_with_a_query_run(tmp_path, capsys):
    from PySide6.QtGui import QImage

    from tpuscope.cli import main

    out = tmp_path / "query.png"
    query = "SELECT name, count(*) AS n FROM events GROUP BY name ORDER BY n DESC LIMIT 5"
    assert main(["screenshot", str(SAMPLE), str(out), "--view", "query", "--size", "1366x768",
                 "--query", query]) == 0  # fmt: skip
    assert QImage(str(out)).size().width() == 1366
    assert (
        main(["screenshot", str(SAMPLE), str(out), "--view", "query", "--query", "COPY events TO 'x'"]) == 2
    )
    assert "The query failed: COPY (writing or reading files) is refused" in capsys.readouterr().err
    assert main(["screenshot", str(SAMPLE), str(out), "--query", "SELECT 1"]) == 2
    assert "--query needs --view query" in capsys.readouterr().err
