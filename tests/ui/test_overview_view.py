"""The Overview page on real profiles: the cards' numbers, and every click leads to its view."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from tests.conftest import GPU_TRACE, SAMPLES, TPU_TRACE, require_shared_traces
from tests.ui.widgets import chart_position, double_click, hover, show_exposed
from tpuscope.analysis.device_ops import device_activity, find_devices
from tpuscope.analysis.ops import op_breakdown
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.analysis.steps import find_steps
from tpuscope.app.opener import open_trace
from tpuscope.ui.overview_view import OverviewView
from tpuscope.ui.views import FindingAt, OpRow
from tpuscope.ui.widgets.card import format_headline_duration, format_percent
from tpuscope.ui.widgets.delegates import EXPLANATION_ROLE, MARKED_TITLE_ROLE
from tpuscope.ui.widgets.labels import code_span_words

WAIT_MS = 30_000  # generous: the CI machine is shared
INPUT_BOUND_SAMPLE = SAMPLES / "jax_cpu_input_bound.xplane.pb"


@pytest.fixture(scope="module")
def traces():
    require_shared_traces()
    paths = {"tpu": TPU_TRACE, "input": INPUT_BOUND_SAMPLE, "gpu": GPU_TRACE}
    return {key: open_trace(path, use_cache=False) for key, path in paths.items()}


@pytest.fixture
def view(qtbot):
    widget = show_exposed(qtbot, OverviewView(), 1600, 1000)
    yield widget
    widget.shutdown()


def _load(qtbot, view, trace):
    with qtbot.waitSignal(view.overviewReady, timeout=WAIT_MS) as ready:
        view.set_trace(trace)
    return ready.args[0]


def _bar_position(view, x: float, y: float) -> QPoint:
    return chart_position(view.step_plot, x, y)


def test_cards_show_the_profiles_numbers(qtbot, view, traces):
    trace = traces["tpu"]
    _load(qtbot, view, trace)
    steps = find_steps(trace)
    periods = np.append(steps.start_ps[1:], steps.end_ps[-1]) - steps.start_ps
    planes = trace.device_planes("TPU")
    duty = np.mean([device_activity(d).duty_cycle for d in find_devices(trace)])
    cards = view.cards
    assert cards["devices"].value.text() == f"{len(planes)} × {planes[0].device_type}"
    assert cards["hosts"].value.text() == str(len(trace.hosts))
    assert cards["framework"].value.text() == TraceAnalysis(trace).report.framework.name
    assert cards["span"].value.text() == format_headline_duration(trace.duration_ps)
    assert cards["steps"].value.text() == f"{len(steps):,}"
    assert cards["step_time"].value.text() == format_headline_duration(periods.mean())
    assert f"median {format_headline_duration(np.median(periods))}" in cards["step_time"].detail.text()
    assert f"p95 {format_headline_duration(np.percentile(periods, 95))}" in cards["step_time"].detail.text()
    assert cards["duty_cycle"].value.text() == format_percent(duty)
    assert view.chart_stack.currentWidget() is view.step_plot


def test_clicking_a_card_opens_its_view(qtbot, view, traces):
    _load(qtbot, view, traces["tpu"])
    for key, target in (("duty_cycle", "ops"), ("framework", "diagnostics"), ("steps", "timeline")):
        card = view.cards[key]
        with qtbot.waitSignal(view.openRequested, timeout=1000) as opened:
            qtbot.mouseClick(card, Qt.MouseButton.LeftButton, pos=card.rect().center())
        assert opened.args == [target, None]


def test_clicking_an_op_opens_the_op_breakdown_and_outlines_its_events(qtbot, view, traces):
    trace = traces["tpu"]
    _load(qtbot, view, trace)
    expected = op_breakdown(trace).rows_json(view.ops_table.rowCount())
    assert [view.ops_table.item(r, 0).text() for r in range(len(expected))] == [r["name"] for r in expected]
    row = 2
    opened, outlined = [], []
    view.openRequested.connect(lambda key, target: opened.append((key, target)))
    view.highlightRequested.connect(outlined.append)
    rect = view.ops_table.visualRect(view.ops_table.model().index(row, 0))
    qtbot.mouseClick(view.ops_table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert opened == [("ops", OpRow(row))]
    events = outlined[0]
    assert sum(len(idx) for _, idx in events) == expected[row]["occurrences"]
    assert {t.name for t, _ in events} == {"XLA Ops"}


def test_clicking_a_finding_opens_the_diagnostics(qtbot, view, traces):
    trace = traces["input"]
    overview = _load(qtbot, view, trace)
    assert overview.findings[0].id == "input_bound"
    assert view.findings_list.count() == len(overview.findings)
    opened = []
    view.openRequested.connect(lambda key, target: opened.append((key, target)))
    rect = view.findings_list.visualItemRect(view.findings_list.item(0))
    with qtbot.waitSignal(view.highlightRequested, timeout=1000) as outlined:
        qtbot.mouseClick(view.findings_list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert opened == [("diagnostics", FindingAt(0))]
    assert sum(len(idx) for _, idx in outlined.args[0]) > 0  # the finding's evidence events


def test_double_clicking_a_step_zooms_to_it(qtbot, view, traces):
    overview = _load(qtbot, view, traces["input"])
    series = overview.series
    step = 4
    pos = _bar_position(view, float(series.number[step]), float(series.duration_ps[step]) / 2e12)
    zooms = []
    view.zoomRequested.connect(lambda t0, t1: zooms.append((t0, t1)))
    qtbot.mouseClick(view.step_plot.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert zooms == [], "a single click does not zoom"
    double_click(qtbot, view.step_plot.viewport(), pos)
    assert zooms == [(int(series.start_ps[step]), int(series.end_ps[step]))]


def test_hovering_a_step_tells_its_split(qtbot, view, traces):
    overview = _load(qtbot, view, traces["input"])
    series = overview.series
    step = 4
    viewport = view.step_plot.viewport()
    middle = float(series.duration_ps[step]) / 2e12
    hover(qtbot, viewport, _bar_position(view, float(series.number[step]), middle))
    tooltip = view.step_plot.toolTip()
    assert tooltip.startswith(
        f"step {int(series.number[step])}: {format_headline_duration(series.duration_ps[step])}"
    )
    input_wait = format_headline_duration(float(series.part("input")[step]))
    assert f"waiting for input: {input_wait}" in tooltip
    # Between two bars' slots there is no gap (a slot is a whole step wide); past the last one, nothing.
    hover(qtbot, viewport, _bar_position(view, float(series.number[-1]) + 0.55, middle))
    assert view.step_plot.toolTip() == ""


def test_without_steps_the_chart_shows_slices_of_the_profile(qtbot, view, traces):
    trace = traces["gpu"]
    overview = _load(qtbot, view, trace)
    assert view.cards["steps"].value.text() == "None"
    assert view.cards["step_time"].value.text() == "–"
    assert view.chart_title.text() == "Device activity over the profile"
    slices = overview.slices
    k = int(np.argmax(slices.busy_ps))  # the busiest slice has a bar to hit
    centre = float(slices.start_ps[k] + slices.end_ps[k]) / 2e12
    zooms = []
    view.zoomRequested.connect(lambda t0, t1: zooms.append((t0, t1)))
    double_click(qtbot, view.step_plot.viewport(), _bar_position(view, centre, 1.0))
    assert zooms == [(int(slices.start_ps[k]), int(slices.end_ps[k]))]


def test_a_newer_trace_drops_the_older_result(qtbot, view, traces):
    shown = []
    view.overviewReady.connect(shown.append)
    view.set_trace(traces["tpu"])
    with qtbot.waitSignal(view.overviewReady, timeout=WAIT_MS):
        view.set_trace(traces["input"])
    view.shutdown()
    QApplication.processEvents()
    assert len(shown) == 1 and shown[0].steps.source == find_steps(traces["input"]).source
    assert view.title.text() == INPUT_BOUND_SAMPLE.name
    view.set_trace(None)
    assert view.overview is None and view.cards["steps"].value.text() == "–"


def test_few_steps_get_one_tick_per_bar(qtbot, view, traces):
    _load(qtbot, view, traces["input"])  # 12 annotated steps
    ticks = view.step_plot.getAxis("bottom")._tickLevels
    assert [label for _, label in ticks[0]] == [str(n) for n in find_steps(traces["input"]).number]
    _load(qtbot, view, traces["tpu"])  # 100 steps: automatic ticks again
    assert view.step_plot.getAxis("bottom")._tickLevels is None


def test_code_spans_show_without_their_backticks(qtbot, view, traces):
    """Finding texts and the step description mark code with backticks (`copy-done.4`): the page
    renders them (issue 23), rich text as <code>, painted list items as the code alone."""
    overview = _load(qtbot, view, traces["tpu"])
    marked = [f for f in overview.findings if "`" in f.title + f.explanation]
    assert marked and "`" in overview.steps.description  # the TPU sample's async wait names its ops
    items = [view.findings_list.item(r) for r in range(view.findings_list.count())]
    texts = [i.text() + i.toolTip() for i in items]  # what tests and screen readers read: plain
    assert texts and not any("`" in t for t in texts)
    code = (marked[0].title + marked[0].explanation).split("`")[1]
    assert any(code in t for t in texts)  # the code itself is still there
    # What the delegate paints: the code spans as code pieces (the monospace face), no backticks.
    painted = [
        piece
        for i in items
        for text in (i.data(MARKED_TITLE_ROLE) or "", i.data(EXPLANATION_ROLE) or "")
        for word in code_span_words(text)
        for piece in word
    ]
    assert (code, True) in painted and not any("`" in text for text, _ in painted)
    assert "<code>" in view.status.text() and "`" not in view.status.text()


@pytest.mark.parametrize("width", [900, 1330])
def test_the_cards_wrap_evenly_to_the_width(qtbot, traces, width):
    """The eight cards of the TPU sample (async wait included) on one row where they fit; on a narrow
    page two rows of 4 + 4 (issue 23: a grid cut them off at the right edge), none wider than the page."""
    view = show_exposed(qtbot, OverviewView(), width, 900)
    _load(qtbot, view, traces["tpu"])
    QApplication.processEvents()
    cards = [card for card in view.cards.values() if card.isVisible()]
    rows: dict[int, int] = {}
    for card in cards:
        rows[card.y()] = rows.get(card.y(), 0) + 1
        assert card.x() >= 0 and card.geometry().right() < view.page.width()
    expected = [8] if width >= 1330 else [4, 4]
    assert [rows[y] for y in sorted(rows)] == expected, [rows[y] for y in sorted(rows)]
    view.shutdown()


def test_opened_in_the_window_the_page_names_the_profile_and_its_hosts(qtbot, window):
    """The window makes its views late (after its first paint, or with the first load): each must
    still hear which trace the hub holds, or the Overview shows '–' for its hosts and span."""
    from tests.ui.conftest import open_and_wait

    trace = open_and_wait(qtbot, window, TPU_TRACE)
    view = window.views["overview"]
    assert view.title.text() == TPU_TRACE.name
    assert view.cards["hosts"].value.text() == str(len(trace.hosts))
    assert view.cards["span"].value.text() == format_headline_duration(trace.duration_ps)
