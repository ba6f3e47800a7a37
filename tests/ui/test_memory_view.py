"""The Memory tab and the timeline's counter tracks, on the real TPU v6e profile."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from tests.conftest import TPU_TRACE
from tests.ui.conftest import open_and_wait
from tests.ui.widgets import chart_position, double_click
from tpuscope.analysis.memory.report import MEMORY_REPORT, memory_report
from tpuscope.analysis.session import REPORT, TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.ui.memory_counters import memory_counter_series
from tpuscope.ui.memory_view import BUFFER_COLUMNS, MemoryView
from tpuscope.ui.timeline.counters import CounterSeries, step_area, visible_samples
from tpuscope.ui.timeline.scene import Viewport

SIZE = BUFFER_COLUMNS.index("Size")


@pytest.fixture(scope="module")
def tpu_trace():
    return open_trace(TPU_TRACE)


@pytest.fixture
def view(qtbot, tpu_trace):
    widget = MemoryView()
    qtbot.addWidget(widget)
    widget.resize(1400, 900)
    widget.set_trace(tpu_trace)
    widget.show()
    qtbot.waitExposed(widget)
    # Shown, the view computes its report in the background and fills itself when it arrives.
    qtbot.waitUntil(lambda: widget.program_combo.count() > 0, timeout=60_000)
    return widget


def test_picker_lists_every_program_and_starts_on_the_biggest(view, tpu_trace):
    report = memory_report(tpu_trace)
    assert view.program_combo.count() == len(report.programs)
    program = view.current_program()
    assert program.name == "jit_f(12190760917235803885)" and program.memory_space == 0
    assert "64.0% of 31.25 GiB" in view.summary_label.text()


def test_buffers_table_is_sortable_and_complete(view):
    program = view.current_program()
    table = view.buffers
    assert table.rowCount() == len(program.buffers_at_peak)
    table.sortItems(SIZE, Qt.AscendingOrder)
    sizes = [table.item(r, SIZE).key for r in range(table.rowCount())]
    assert sizes == sorted(sizes)
    table.sortItems(SIZE, Qt.DescendingOrder)
    assert table.item(0, SIZE).text() == "5.00 GiB"


def test_selecting_a_buffer_outlines_its_defining_op(qtbot, view):
    table = view.buffers
    row = next(r for r in range(table.rowCount()) if table.item(r, 0).text() == "copy-start{0}")
    with qtbot.waitSignal(view.highlightRequested) as blocker:
        table.selectRow(row)
    matches = blocker.args[0]
    assert matches and all(len(rows) for _, rows in matches)
    names = {track.event_name(int(rows[0])) for track, rows in matches}
    assert all(name.startswith("%copy-start = ") for name in names)


def test_allocator_chart_names_every_allocator(view):
    text = view.allocators_label.text()
    assert all(f"allocator {i}</b>" in text for i in "0123")
    assert "lifetime peak 15.00 GiB" in text


def test_double_clicking_the_allocator_chart_shows_that_moment(qtbot, view, tpu_trace):
    allocator = view.report.allocators[0]
    t_ms = allocator.peak_time_ps / 1e9
    zooms = []
    view.zoomRequested.connect(lambda t0, t1: zooms.append((t0, t1)))
    pos = chart_position(view.time_plot, t_ms, allocator.peak_in_profile_bytes / 2**30 / 2)
    qtbot.mouseClick(view.time_plot.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert zooms == [], "a single click does not zoom"
    double_click(qtbot, view.time_plot.viewport(), pos)
    assert len(zooms) == 1
    t0, t1 = zooms[0]
    half = 0.02 * tpu_trace.duration_ps  # the view shows 2% of the profile on each side
    assert t1 - t0 == pytest.approx(2 * half)
    # Where the mouse was, to within a pixel of the chart.
    box = view.time_plot.getPlotItem().vb
    (x0_ms, x1_ms), _ = box.viewRange()
    pixel_ps = (x1_ms - x0_ms) * 1e9 / box.width()
    assert (t0 + t1) / 2 == pytest.approx(allocator.peak_time_ps, abs=2 * pixel_ps)


def test_the_view_and_the_memory_rules_share_one_report(qtbot, tpu_trace):
    """The tab gets the report from the hub, computed off the UI thread; the diagnosis, asked for after,
    gets the same one instead of making its own."""
    analysis = TraceAnalysis(tpu_trace)
    widget = MemoryView()
    qtbot.addWidget(widget)
    widget.hub.set_analysis(analysis)
    assert widget.report is None and "memory_report" not in analysis.computed  # hidden: not asked for yet
    widget.show()
    qtbot.waitUntil(lambda: widget.report is not None, timeout=60_000)
    assert widget.program_combo.count() == len(widget.report.programs) > 0
    reports = []
    widget.hub.request(REPORT, reports.append)
    qtbot.waitUntil(lambda: bool(reports), timeout=120_000)
    assert not {"memory_growth", "memory_pressure", "padding_waste"} & set(reports[0].rule_errors)
    assert analysis.computed.count("memory_report") == 1
    assert analysis.computed.index("memory_report") < analysis.computed.index("report")
    assert analysis.get(MEMORY_REPORT) is widget.report


def test_profile_without_memory_data(qtbot, tmp_path):
    from tpuscope.readers.xplane import xplane_pb2

    space = xplane_pb2.XSpace()
    space.planes.add(id=1, name="/host:CPU").lines.add(id=1, name="main")
    path = tmp_path / "empty.xplane.pb"
    path.write_bytes(space.SerializeToString())
    widget = MemoryView()
    qtbot.addWidget(widget)
    widget.set_trace(open_trace(path))
    widget.show()
    qtbot.waitUntil(lambda: widget.summary_label.text() == "This profile has no memory data.", timeout=60_000)
    assert not widget.program_combo.isEnabled()


def _view(t0, t1, width=800.0):
    return Viewport(t0, t1, 0.0, width, 0.0, 0.0)


def test_counter_keeps_the_peak_when_zoomed_out():
    n = 1_000_000
    values = np.zeros(n)
    values[123_457] = 5.0  # one sample spike among a million
    series = CounterSeries("k", "spiky", np.arange(n, dtype=np.int64) * 10, values)
    x, shown = visible_samples(series, _view(0, n * 10))
    assert len(x) <= 2 * 800 and shown.max() == 5.0
    points = step_area(series, _view(0, n * 10), 0.0, 40.0)
    assert points.shape[1] == 2 and points[:, 1].min() < 10  # the spike reaches near the top


def test_counter_window_cuts_by_time():
    series = CounterSeries("k", "steps", np.array([0, 100, 200, 300]), np.array([1.0, 2.0, 3.0, 4.0]))
    x, shown = visible_samples(series, _view(150, 250))
    assert shown.tolist() == [2.0, 3.0, 4.0]  # the value holding at the left edge, the one inside, the next
    assert series.value_at(250) == 3.0 and series.value_at(-1) is None


def test_memory_counters_on_the_timeline(qtbot, window):
    open_and_wait(qtbot, window, TPU_TRACE, view="timeline")
    rows = [r for r in window.timeline.layout_.rows if r.kind == "counter"]
    assert [r.label for r in rows] == [f"memory in use, allocator {i}" for i in "0123"]
    series = rows[0].counter
    assert series.max_value == pytest.approx(21_492_569_216)
    window.timeline.zoom_to_range(4e12, 18e12)
    image = window.timeline.grab()
    assert not image.isNull()
    tip = window.timeline.tooltip_at(window.timeline.mapFromParent(window.timeline.rect().center()))
    assert isinstance(tip, str)


def test_memory_tab_is_in_the_window(qtbot, window):
    open_and_wait(qtbot, window, TPU_TRACE, view="memory")
    memory = window.views["memory"]
    assert memory.current_program().module_name == "jit_f"


def test_counter_series_from_report(tpu_trace):
    series = memory_counter_series(memory_report(tpu_trace).allocators)
    assert len(series) == 4 and all(s.ceiling == 33_550_237_696 for s in series)


def test_counters_sit_after_the_devices_and_collapse(tpu_trace):
    from tpuscope.ui.timeline.counters import COUNTERS_GROUP
    from tpuscope.ui.timeline.layout import TimelineLayout

    series = memory_counter_series(memory_report(tpu_trace).allocators)
    layout = TimelineLayout(tpu_trace, counters=series)
    groups = [r.group[1] for r in layout.rows if r.kind == "group"]
    assert groups.index("Counters") == groups.index("/host:CPU") - 1
    counter_rows = [r for r in layout.rows if r.kind == "counter"]
    assert len(counter_rows) == 4 and all(r.counter is not None for r in counter_rows)
    layout.toggle(COUNTERS_GROUP)
    assert not [r for r in layout.rows if r.kind == "counter"]
