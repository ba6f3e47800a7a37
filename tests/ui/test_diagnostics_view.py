"""The Diagnostics view on real profiles: background diagnosis, icons, detail pane, signals."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QTextDocument, QTextTable
from PySide6.QtTest import QTest

from tests.conftest import GPU_TRACE, PTXLA_TRACE, TF_TRACE, TPU_TRACE, require_shared_traces
from tests.ui.widgets import show_exposed
from tpuscope.analysis.diagnose import Severity
from tpuscope.analysis.facts.evidence import evidence_events
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.ui.diagnostics_view import DiagnosticsView, finding_html, format_number
from tpuscope.ui.widgets.code_spans import without_code_marks

WAIT_MS = 30_000  # generous: the CI machine is shared


@pytest.fixture(scope="module")
def traces():
    require_shared_traces()
    return {path: open_trace(path, use_cache=False) for path in (PTXLA_TRACE, GPU_TRACE, TF_TRACE, TPU_TRACE)}


@pytest.fixture
def view(qtbot):
    widget = show_exposed(qtbot, DiagnosticsView(), 1100, 650)
    yield widget
    widget.shutdown()


def _load(qtbot, view, trace):
    with qtbot.waitSignal(view.reportReady, timeout=WAIT_MS) as ready:
        view.set_trace(trace)
    return ready.args[0]


def test_lists_findings_worst_first_with_severity_icons(qtbot, view, traces):
    trace = traces[PTXLA_TRACE]
    report = _load(qtbot, view, trace)
    expected = TraceAnalysis(trace).report
    titles = [view.findings.item(r).text() for r in range(view.findings.count())]
    # Each line leads with what the finding costs (what users triage by), then its title.
    assert [t.split(" · ", 1)[-1] for t in titles] == [without_code_marks(f.title) for f in expected.findings]
    assert titles[0] == "2.3% of step · 15 blocking device-to-host read(s)"
    assert report.findings[0].severity == Severity.INFO and report.findings[0].id == "host_device_sync"
    assert all(not view.findings.item(r).icon().isNull() for r in range(view.findings.count()))
    assert "PyTorch/XLA" in view.summary.text() and "15 steps" in view.summary.text()


def test_selecting_a_finding_shows_details_and_highlights_its_events(qtbot, view, traces):
    trace = traces[PTXLA_TRACE]
    _load(qtbot, view, trace)
    view.findings.setCurrentRow(-1)
    with qtbot.waitSignal(view.highlightRequested, timeout=WAIT_MS) as highlight:
        view.findings.setCurrentRow(0)
    text = view.detail.toPlainText()
    assert "Costs 2.3% of each step" in text and "Syncs per step" in text
    payload = highlight.args[0]
    names = {track.event_name(int(i)) for track, idx in payload for i in idx}
    assert names == {"PjRtComputationClient::TransferFromDevice"}
    assert sum(len(idx) for _, idx in payload) == 15
    assert all(isinstance(idx, np.ndarray) for _, idx in payload)


def _click_finding(view, row: int) -> None:
    rect = view.findings.visualItemRect(view.findings.item(row))
    QTest.mouseClick(view.findings.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_loading_shows_the_first_finding_but_only_a_users_click_highlights(qtbot, view, traces):
    """Like the Ops view: opening a profile must not outline events on the timeline by itself."""
    trace = traces[PTXLA_TRACE]
    highlights, zooms = [], []
    view.highlightRequested.connect(highlights.append)
    view.zoomRequested.connect(lambda *args: zooms.append(args))
    report = _load(qtbot, view, trace)
    view.findings.setFocus()  # Qt moves the current index itself on focus: no highlight either
    qtbot.wait(50)
    assert view.findings.currentRow() == 0
    assert report.findings[0].title in view.detail.toPlainText()
    assert highlights == [] and zooms == []

    def events(payload):
        return sorted((id(track), int(i)) for track, idx in payload for i in idx)

    _click_finding(view, 0)  # the finding shown at load, clicked: its events now
    assert len(highlights) == 1
    assert events(highlights[0]) == events(evidence_events(trace, report.findings[0].evidence)) != []
    _click_finding(view, 1)  # another finding: one highlight, of its events
    assert len(highlights) == 2 and view.findings.currentRow() == 1
    assert events(highlights[1]) == events(evidence_events(trace, report.findings[1].evidence))
    QTest.keyClick(view.findings, Qt.Key.Key_Up)  # the keyboard is the user too
    assert len(highlights) == 3 and view.findings.currentRow() == 0
    assert zooms == []


def test_clicking_evidence_zooms_to_it(qtbot, view, traces):
    _load(qtbot, view, traces[PTXLA_TRACE])
    view.findings.setCurrentRow(0)
    item = view.current_finding.evidence[2]
    with qtbot.waitSignal(view.zoomRequested, timeout=WAIT_MS) as zoom:
        view.detail.anchorClicked.emit(QUrl("evidence:2"))
    assert zoom.args == [item["start_ps"], max(item["end_ps"], item["start_ps"] + 1)]
    with qtbot.waitSignal(view.zoomRequested, timeout=WAIT_MS) as whole:
        view._zoom_to_finding()
    t0, t1 = whole.args
    evidence = view.current_finding.evidence
    assert t0 == min(e["start_ps"] for e in evidence) and t1 == max(e["end_ps"] for e in evidence)


def test_a_newer_trace_supersedes_a_running_diagnosis(qtbot, view, traces):
    view.set_trace(traces[TF_TRACE])
    report = _load(qtbot, view, traces[GPU_TRACE])
    qtbot.wait(200)  # let the superseded run finish: its result must not replace the newer one
    view.shutdown()
    qtbot.wait(50)
    assert view.report is report
    texts = [view.findings.item(r).text() for r in range(view.findings.count())]
    assert any(t.startswith("Low device utilization") for t in texts)  # the GPU trace's, not the TF one's


def test_renders_offscreen(qtbot, view, traces, tmp_path):
    _load(qtbot, view, traces[PTXLA_TRACE])
    view.findings.setCurrentRow(0)
    path = tmp_path / "diagnostics.png"
    assert view.grab().save(str(path))
    assert path.stat().st_size > 10_000


def _tables(document: QTextDocument) -> list[QTextTable]:
    found, frames = [], [document.rootFrame()]
    while frames:
        frame = frames.pop()
        if isinstance(frame, QTextTable):
            found.append(frame)
        frames.extend(frame.childFrames())
    return found


def _cell(table: QTextTable, row: int, column: int) -> str:
    cell = table.cellAt(row, column)
    cursor = cell.firstCursorPosition()
    cursor.setPosition(cell.lastCursorPosition().position(), cursor.MoveMode.KeepAnchor)
    return cursor.selectedText().replace("\u2060", "").replace("\u2029", "\n").replace("\u2028", "\n")


def test_headers_are_sentence_case_with_units_as_written(qtbot, view, traces):
    """Issue 37: the async wait's ops read "GB/s over the wait", not "gb per s over the wait"."""
    _load(qtbot, view, traces[TPU_TRACE])
    row = next(r for r, f in enumerate(view.report.findings) if f.id == "async_wait")
    view.findings.setCurrentRow(row)
    (table,) = [t for t in _tables(view.detail.document()) if t.columns() > 2]
    headers = [" ".join(_cell(table, 0, c).split()) for c in range(table.columns())]
    assert "GB/s over the wait" in headers and "Waits for" in headers and "Op" in headers
    assert all(h[:1].isupper() for h in headers if h)
    text = view.detail.toPlainText()
    assert "Ops (" in text and "Waiting for\n" in text and "gb per s" not in text


def _cell_full_text(table: QTextTable, row: int, column: int) -> str:
    """A cell's whole text: the tooltip of a cell cut to fit the pane's width, else what it shows."""
    shown = _cell(table, row, column)
    if shown.endswith("\u2026"):
        cursor = table.cellAt(row, column).firstCursorPosition()
        cursor.movePosition(cursor.MoveOperation.NextCharacter)
        return cursor.charFormat().toolTip()
    return shown


def test_list_of_dict_metrics_render_as_a_table_one_row_per_item(qtbot, view, traces):
    """TPU warm-up compilations: the per-function list is a grid with units in the headers."""
    trace = traces[TPU_TRACE]
    _load(qtbot, view, trace)
    row = next(r for r, f in enumerate(view.report.findings) if f.id == "recompilation")
    view.findings.setCurrentRow(row)
    functions = view.current_finding.metrics["functions"]
    (table,) = [t for t in _tables(view.detail.document()) if t.columns() > 2]
    keys = list(functions[0])
    assert table.rows() == len(functions) + 1 and table.columns() == len(keys)
    headers = [" ".join(_cell(table, 0, c).split()) for c in range(table.columns())]
    assert headers[keys.index("compile_ms")] == "Compile (ms)"
    assert headers[keys.index("percent_of_profile")] == "Percent of profile (%)"
    for r, item in enumerate(functions, start=1):
        assert _cell(table, r, keys.index("function")) == item["function"]
        assert _cell(table, r, keys.index("compile_ms")) == format_number(item["compile_ms"], "compile_ms")
        assert _cell_full_text(table, r, keys.index("arguments")) == ", ".join(item["arguments"])
    # Scalars stay in the key/value "Numbers" table, with their unit after the number.
    text = view.detail.toPlainText()
    assert f"Compile\n{format_number(view.current_finding.metrics['compile_ms'], 'compile_ms')} ms" in text
    assert "{'function'" not in text and "function: " not in text  # no dict dumped as text


def test_long_string_lists_are_one_line_per_item(traces):
    finding = next(f for f in TraceAnalysis(traces[PTXLA_TRACE]).report.findings if f.id == "recompilation")
    finding.metrics["argument_changes"] = [
        f"argument {k} changed f32[{k},1024,1024] -> f32[{k + 1},1024,1024]" for k in range(3)
    ]
    document = QTextDocument()
    document.setHtml(finding_html(finding))
    text = document.toPlainText()
    for change in finding.metrics["argument_changes"]:
        assert f"• {change}" in text.replace("\u2060", "")


@pytest.mark.parametrize(
    ("value", "key", "shown"),
    [
        (281.188, "compile_ms", "281.188"),  # times: three decimals (1 µs), as the findings write them
        (63.81, "compile_ms", "63.810"),
        (0.0421, "host_blocked_ms", "0.042"),
        (1528.923, "compile_ms", "1,528.923"),
        (61.2, "percent_of_profile", "61.2"),  # shares: one decimal, as the titles and the cards write them
        (96.48, "async_done_percent_of_device_time", "96.5"),
        (0.08, "percent_of_profile", "0.1"),
        (0.273, "compilations_per_step_after_first", "0.273"),
        (12345, "syncs", "12,345"),
        (12190760917235803885, "program_id", "12190760917235803885"),
    ],
)
def test_numbers_are_formatted_for_reading(value, key, shown):
    assert format_number(value, key) == shown


def test_what_was_checked_is_a_collapsed_list_one_line_per_rule(qtbot, view, traces, tmp_path):
    report = _load(qtbot, view, traces[TF_TRACE])
    assert report.findings == []  # nothing to report: the checked lines are the answer
    assert not view.checked_list.isVisible()
    assert view.checked_toggle.text() == f"What was checked ({len(report.checked)} rules)"
    qtbot.mouseClick(view.checked_toggle, Qt.MouseButton.LeftButton)
    assert view.checked_list.isVisible()
    lines = [view.checked_list.item(k).text() for k in range(view.checked_list.count())]
    assert lines == [f"{c['rule']}: {c['summary'] or '(no summary)'}" for c in report.checked]
    assert any(line.startswith("input_bound: ") and "below 5%" in line for line in lines)
    path = tmp_path / "checked.png"
    assert view.grab().save(str(path))
    qtbot.mouseClick(view.checked_toggle, Qt.MouseButton.LeftButton)
    assert not view.checked_list.isVisible()
    view.set_trace(None)
    assert view.checked_list.count() == 0 and not view.checked_toggle.isEnabled()


def test_code_spans_render_as_code_not_backticks(qtbot, view, traces):
    """A finding naming ops in backticks (the TPU sample's async wait): the detail pane sets them in
    the monospace face and the list shows the names without the marks (issue 23)."""
    report = _load(qtbot, view, traces[TPU_TRACE])
    row, finding = next((k, f) for k, f in enumerate(report.findings) if "`" in f.title + f.explanation)
    view.findings.setCurrentRow(row)
    shown = view.detail.toPlainText()
    assert "`" not in shown and "`" not in view.findings.item(row).text()
    code = finding.explanation.split("`")[1] if "`" in finding.explanation else finding.title.split("`")[1]
    assert code in shown
    assert f"<code>{code}</code>" in finding_html(finding)
    assert "monospace" in view.detail.toHtml() or "Courier" in view.detail.toHtml()


# A table row at most this many default-font lines tall: a header of two or three short lines.
MAX_ROW_LINES = 4


@pytest.mark.parametrize("path", [GPU_TRACE, TPU_TRACE], ids=["mi300x", "tpu"])
def test_tables_fit_a_1280_pane_one_short_row_per_item(qtbot, traces, path):
    """At 1280x720 (issue 37) no row wraps "Waits for" into a tall, mostly blank row and no column
    is cut at the right: long cells are one line ending in an ellipsis, the whole text in the tooltip."""
    view = show_exposed(qtbot, DiagnosticsView(), 1280, 720)
    try:
        _load(qtbot, view, traces[path])
        line = view.detail.fontMetrics().lineSpacing()
        cut = 0
        for row in range(len(view.report.findings)):
            view.findings.setCurrentRow(row)
            document = view.detail.document()
            layout = document.documentLayout()
            assert document.size().width() <= view.detail.viewport().width()
            for table in _tables(document):
                assert layout.frameBoundingRect(table).right() <= view.detail.viewport().width()
                for r in range(table.rows()):
                    cells = [table.cellAt(r, c) for c in range(table.columns())]
                    height = max(
                        layout.blockBoundingRect(cell.lastCursorPosition().block()).bottom()
                        - layout.blockBoundingRect(cell.firstCursorPosition().block()).top()
                        for cell in cells
                    )
                    assert height <= MAX_ROW_LINES * line, (view.report.findings[row].id, r)
                    for c in range(table.columns()):
                        if _cell(table, r, c).endswith("\u2026"):
                            cut += 1
                            full = _cell_full_text(table, r, c)
                            shown = _cell(table, r, c)[:-1].replace("\xa0", " ").rstrip()
                            assert full.startswith(shown) and len(full) > len(shown)
        if path == TPU_TRACE:  # the async wait's "waits for" sentences are longer than their column
            assert cut > 0
    finally:
        view.shutdown()
