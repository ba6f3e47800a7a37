"""The Ops view on the real TPU profile: table, sorting and filtering in the model, signals, charts."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt

from tests.conftest import TF_TRACE, TPU_TRACE
from tests.ui.widgets import chart_position, double_click
from tpuscope.analysis.ops import op_breakdown
from tpuscope.app.opener import open_trace
from tpuscope.ui.ops.view import OpsView

COUNT, SELF, NAME = 3, 6, 0


@pytest.fixture(scope="module")
def tpu_trace():
    return open_trace(TPU_TRACE)


@pytest.fixture
def view(qtbot, tpu_trace):
    widget = OpsView()
    qtbot.addWidget(widget)
    widget.resize(1400, 800)
    widget.set_trace(tpu_trace)
    widget.show()
    qtbot.waitExposed(widget)
    widget.hub.wait()  # the tables are computed in a worker thread
    return widget


def _column(view, column):
    model = view.model
    return [model.data(model.index(r, column)) for r in range(model.rowCount())]


def test_table_lists_every_op_of_all_devices_by_self_time(view, tpu_trace):
    expected = op_breakdown(tpu_trace, "all", "op")
    assert view.model.rowCount() == len(expected)
    assert _column(view, NAME) == expected.names()
    assert view.device_combo.currentData() == "all" and view.device_combo.count() == 5
    assert "duty cycle" in view.summary_label.text()


def test_sorting_happens_in_the_model(view):
    view.table_view.sortByColumn(COUNT, Qt.SortOrder.AscendingOrder)
    counts = [int(c.replace(",", "")) for c in _column(view, COUNT)]
    assert counts == sorted(counts)
    assert counts[0] == 1  # broadcast.2 runs once
    view.table_view.sortByColumn(NAME, Qt.SortOrder.DescendingOrder)
    names = _column(view, NAME)
    assert names == sorted(names, reverse=True)


def test_filter_keeps_matching_rows(view, qtbot):
    qtbot.keyClicks(view.filter_edit, "COPY-DONE")
    names = _column(view, NAME)
    assert len(names) == 6 and all(n.startswith("copy-done") for n in names)
    view.filter_edit.clear()
    assert view.model.rowCount() == 17


def test_selecting_a_row_highlights_its_events_and_steps_through_them(view, qtbot):
    with qtbot.waitSignal(view.highlightRequested) as highlight:
        view.table_view.selectRow(0)
    events = highlight.args[0]
    table_row = view.model.table_row(0)
    assert sum(len(idx) for _, idx in events) == view.table.occurrences[table_row] == 400
    assert {track.name for track, _ in events} == {"XLA Ops"}
    assert len({track.plane.name for track, _ in events}) == 4
    starts = np.sort(np.concatenate([t.start_ps[i] for t, i in events]))
    ends = np.concatenate([t.end_ps[i] for t, i in events])[
        np.argsort(np.concatenate([t.start_ps[i] for t, i in events]), kind="stable")
    ]
    zooms, shown = [], []
    view.zoomRequested.connect(lambda t0, t1: zooms.append((t0, t1)))
    view.occurrenceShown.connect(lambda track, index, t0, t1: shown.append((track, index, t0, t1)))
    qtbot.mouseClick(view.stepper.next_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(view.stepper.next_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(view.stepper.previous_button, Qt.MouseButton.LeftButton)
    assert zooms == []  # stepping stays in the view (issue 37)
    assert len(shown) == 3
    for (track, index, t0, t1), k in zip(shown, (0, 1, 0), strict=True):
        assert int(track.start_ps[index]) == starts[k]  # the k-th occurrence in time order
        assert t0 < starts[k] and t1 > ends[k]  # the occurrence, with a margin
        assert t1 - t0 < 2 * (ends[k] - starts[k]) + 4000
    assert "1 of 400" in view.stepper.occurrence_label.text()


def test_double_clicking_a_step_zooms_to_it(view, qtbot):
    breakdown = view.breakdown
    assert len(breakdown) == 100
    pos = chart_position(view.step_plot, 3, float(breakdown.busy_ps[3]) / 2e12)
    viewport = view.step_plot.viewport()
    zooms = []
    view.zoomRequested.connect(lambda t0, t1: zooms.append((t0, t1)))
    qtbot.mouseClick(viewport, Qt.MouseButton.LeftButton, pos=pos)
    assert zooms == [], "a single click does not zoom"
    double_click(qtbot, viewport, pos)
    assert zooms == [(int(breakdown.start_ps[3]), int(breakdown.end_ps[3]))]


def test_double_clicking_between_steps_zooms_nowhere(view, qtbot):
    breakdown = view.breakdown
    zooms = []
    view.zoomRequested.connect(lambda t0, t1: zooms.append((t0, t1)))
    # Bars are 0.8 of a step wide: 3.5 is in the gap between steps 3 and 4.
    double_click(qtbot, view.step_plot.viewport(), chart_position(view.step_plot, 3.5, 1e-9))
    assert zooms == []
    double_click(qtbot, view.step_plot.viewport(), chart_position(view.step_plot, 4.3, 1e-9))
    assert zooms == [(int(breakdown.start_ps[4]), int(breakdown.end_ps[4]))]


def test_clicking_a_top_ops_bar_selects_its_op(view, qtbot):
    table = view.table
    bars = min(len(table), 15)
    third = 2  # the third bar from the top: the op with the third most self time
    y = bars - 1 - third
    x = float(table.self_ps[third]) / 2e12  # halfway along the bar
    with qtbot.waitSignal(view.highlightRequested) as highlight:
        pos = chart_position(view.bar_plot, x, y)
        qtbot.mouseClick(view.bar_plot.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    selected = view.table_view.selectionModel().selectedRows()
    assert [view.model.table_row(i.row()) for i in selected] == [third]
    assert sum(len(idx) for _, idx in highlight.args[0]) == table.occurrences[third]


def test_grouping_and_device_pickers_recompute(view, tpu_trace):
    view.set_grouping("category")
    view.hub.wait()  # the new table is computed in a worker thread
    assert sorted(_column(view, NAME)) == sorted(op_breakdown(tpu_trace, "all", "category").names())
    view.set_device(2)
    view.hub.wait()
    assert view.table.occurrences.sum() == len(tpu_trace.device_planes()[2].track("XLA Ops"))
    assert [d.name for d in view.table.devices] == ["/device:TPU:2"]


def test_bar_chart_shows_the_top_ops(view):
    ticks = view.bar_plot.getAxis("left")._tickLevels[0]
    labels = [label for _, label in sorted(ticks, reverse=True)]
    assert labels[:4] == view.table.names()[:4]


def test_hidden_view_computes_when_first_shown(qtbot, tpu_trace):
    widget = OpsView()
    qtbot.addWidget(widget)
    widget.set_trace(tpu_trace)
    assert widget.model.rowCount() == 0  # nothing computed while nobody looks
    assert widget.hub.analysis.computed == []
    widget.show()
    qtbot.waitExposed(widget)
    widget.hub.wait()
    assert widget.model.rowCount() == 17


def test_profile_without_device_ops_and_clearing(qtbot):
    widget = OpsView()
    qtbot.addWidget(widget)
    widget.show()
    widget.set_trace(open_trace(TF_TRACE))
    widget.hub.wait()
    assert widget.model.rowCount() == 0
    assert "no device ops" in widget.summary_label.text()
    widget.set_trace(None)
    assert widget.model.rowCount() == 0 and not widget.stepper.next_button.isEnabled()


def test_renders_offscreen(view, tmp_path):
    path = tmp_path / "ops.png"
    assert view.grab().save(str(path))
    assert path.stat().st_size > 10_000


def test_showing_and_focusing_the_table_sends_the_timeline_nowhere(qtbot, tpu_trace):
    widget = OpsView()
    qtbot.addWidget(widget)
    sent = []
    widget.highlightRequested.connect(sent.append)
    widget.zoomRequested.connect(lambda *a: sent.append(a))
    widget.set_trace(tpu_trace)
    widget.show()
    qtbot.waitExposed(widget)
    widget.hub.wait()
    widget.activateWindow()
    widget.table_view.setFocus()
    qtbot.waitUntil(widget.table_view.hasFocus)
    assert widget.table_view.currentIndex().isValid()  # Qt made a cell current on focus ...
    assert sent == []  # ... which is not a selection by the user


def test_sorting_keeps_the_selected_op_selected(view, qtbot):
    view.table_view.selectRow(2)
    chosen = view.model.table_row(2)
    sent = []
    view.highlightRequested.connect(sent.append)
    view.table_view.sortByColumn(NAME, Qt.SortOrder.AscendingOrder)
    selected = view.table_view.selectionModel().selectedRows()
    assert [view.model.table_row(i.row()) for i in selected] == [chosen]
    assert sent == []  # same op: no new highlight
    qtbot.mouseClick(view.stepper.next_button, Qt.MouseButton.LeftButton)
    assert "1 of" in view.stepper.occurrence_label.text()


# 920: a 1280 px window beside the Details dock (issue 23: the names were elided there, `broad...ion.1`).
@pytest.mark.parametrize("width", [1230, 1120, 920])
def test_every_column_fits_and_op_names_are_not_cut(qtbot, tpu_trace, width):
    """The table spans the view's width, above the charts: no column hides behind them or off the edge,
    and the op names, which matter most, keep their full width while programs give way (on the
    narrowest view the numbers scroll sideways instead of taking the names' room)."""
    widget = OpsView()
    qtbot.addWidget(widget)
    widget.resize(width, 900)
    widget.set_trace(tpu_trace)
    widget.show()
    qtbot.waitExposed(widget)
    widget.hub.wait()
    qtbot.wait(10)  # the columns are fitted again once the view has its final size
    table = widget.table_view
    header = table.horizontalHeader()
    charts_top = widget.bar_plot.mapTo(widget, QPoint(0, 0)).y()
    assert charts_top > table.mapTo(widget, QPoint(0, table.height())).y()  # the charts are below the table
    if width >= 1120:
        assert header.length() <= table.viewport().width()
        assert not table.horizontalScrollBar().isVisible()
    metrics = table.fontMetrics()
    widest_name = max(metrics.horizontalAdvance(n) for n in _column(widget, NAME))
    assert header.sectionSize(NAME) > widest_name
    widest_program = max(metrics.horizontalAdvance(p) for p in _column(widget, 2))
    if width < 1200:  # too narrow for every program name: they give way (elided), the op names do not
        assert header.sectionSize(2) < widest_program
    numbers = range(widget.model.TEXT_COLUMNS, widget.model.columnCount())
    for column in numbers:  # numbers are never elided: each fits its column
        widest = max(metrics.horizontalAdvance(text) for text in _column(widget, column))
        assert header.sectionSize(column) > widest


def test_async_starts_and_dones_get_no_rate_and_say_why(view):
    """A copy-start's nanoseconds are its launch and a copy-done's its wait: bytes over either is no
    transfer rate (it read 3e9 GB/s), so both rate columns show an em dash whose tooltip says why."""
    model = view.model
    names = _column(view, NAME)
    for column in (9, 10):  # GFLOP/s, GB/s
        rates = _column(view, column)
        for row, name in enumerate(names):
            tooltip = model.data(model.index(row, column), Qt.ItemDataRole.ToolTipRole)
            if name.startswith(("copy-start", "copy-done")):
                assert rates[row] == "—" and "async start or done" in tooltip, (name, column)
            else:
                assert rates[row] != "—" and tooltip is None, (name, column)
        assert all(len(r) <= len("99,999.99") for r in rates)  # rates stay compact, none elided
    assert "broadcast_add_fusion" in names[4] and float(_column(view, 10)[4].replace(",", "")) > 1000
