"""The Compare view on real JAX CPU pairs: verdict, cards, table order and filter, aligned timelines,
an op row outlining its events in both; and File > Compare with... in the main window."""

from __future__ import annotations

from PySide6.QtCore import QSettings

from tests.ui.widgets import show_exposed
from tpuscope.ui.compare_view import DELTA_COLUMN, CompareView, compare_paths
from tpuscope.ui.main_window import MainWindow
from tpuscope.ui.timeline.view import PICKED_LAYER

TIMEOUT_MS = 120_000


def test_view_shows_the_verdict_the_ops_by_change_and_outlines_an_op_in_both(qtbot, pair_paths, tmp_path):
    view = show_exposed(qtbot, CompareView(), 1500, 1300)
    view.set_result(compare_paths(pair_paths["plain"], pair_paths["extra_op"]))
    assert "slower" in view.summary.text() and "sort" in view.summary.text()
    # Largest change first: the sort only NEW has.
    assert view.table.item(0, 0).text().startswith("sort")
    assert view.table.horizontalHeader().sortIndicatorSection() == DELTA_COLUMN
    view.filter.setText("only_new")
    visible = [r for r in range(view.table.rowCount()) if not view.table.isRowHidden(r)]
    assert visible and all(view.table.item(r, 3).text() == "only_new" for r in visible)
    view.filter.setText("")
    # An op both runs have: its events are outlined in both timelines.
    shared = next(r for r in view.rows if r.match == "stripped_name" and r.base_self_ps > 0)
    assert view.select_op(shared.name)
    assert view.base_timeline.highlights.get(PICKED_LAYER) and view.new_timeline.highlights.get(PICKED_LAYER)
    # The sort: nothing in BASE to outline.
    assert view.select_op(view.table.item(0, 0).text())
    assert not view.base_timeline.highlights.get(PICKED_LAYER) and view.new_timeline.highlights.get(
        PICKED_LAYER
    )
    # Both timelines start just before their median step, at one time scale.
    c = view.result.comparison
    base_k, new_k = c.base.median_step(), c.new.median_step()
    assert (view.base_step.value(), view.new_step.value()) == (base_k, new_k)
    windows = []
    for timeline, run, k in ((view.base_timeline, c.base, base_k), (view.new_timeline, c.new, new_k)):
        port = timeline.viewport()
        start = float(run.overview.series.start_ps[k])
        assert port.t0_ps <= start < port.t1_ps  # the chosen step is on screen
        windows.append((port.t1_ps - port.t0_ps, start - port.t0_ps, float(timeline.trace.duration_ps)))
    (base_width, base_lead, base_span), (new_width, new_lead, new_span) = windows
    if base_width < base_span and new_width < new_span:  # neither window reaches past its trace
        assert abs(base_width - new_width) < 1e-3 * base_width  # one time scale
    image = view.grab()
    image.save(str(tmp_path / "compare.png"))
    assert image.width() >= 1500


def test_main_window_compares_and_opens_base_in_the_other_views(qtbot, tmp_path, pair_paths):
    win = show_exposed(qtbot, MainWindow(QSettings(str(tmp_path / "t.ini"), QSettings.IniFormat)), 1400, 900)
    try:
        win.open_comparison(pair_paths["input_bound"], pair_paths["prefetched"])
        view = win.views["compare"]
        qtbot.waitUntil(lambda: view.result is not None and win.trace is not None, timeout=TIMEOUT_MS)
        assert win.tabs.currentWidget() is view
        assert "faster" in view.summary.text()
        assert win.trace is view.result.base.trace  # BASE is the open profile, loaded once
    finally:
        win.wait_for_background_work()


def test_a_missing_profile_is_said_in_the_view(qtbot, pair_paths, tmp_path):
    view = show_exposed(qtbot, CompareView(), 800, 600)
    with qtbot.waitSignal(view.compareFailed, timeout=TIMEOUT_MS) as failed:
        view.compare_paths(pair_paths["plain"], tmp_path / "missing.xplane.pb")
    assert "missing.xplane.pb" in failed.args[0]
    assert "Cannot compare" in view.summary.text()
    view.shutdown()


def test_compare_with_reuses_the_open_base(qtbot, tmp_path, pair_paths):
    from tests.ui.conftest import open_and_wait

    win = show_exposed(qtbot, MainWindow(QSettings(str(tmp_path / "t.ini"), QSettings.IniFormat)), 1400, 900)
    try:
        open_and_wait(qtbot, win, pair_paths["plain"])
        opened = win.trace
        win.open_comparison(win.path, pair_paths["extra_op"])
        view = win.views["compare"]
        qtbot.waitUntil(lambda: view.result is not None, timeout=TIMEOUT_MS)
        assert view.result.base.trace is opened and win.trace is opened  # not loaded again
        assert "slower" in view.summary.text()
    finally:
        win.wait_for_background_work()


def test_a_comparison_opens_beside_the_open_profile_and_closes_with_it(qtbot, tmp_path, pair_paths):
    """Issue 33: comparing two other runs (a click in History) does not replace the profile the user
    opened; opening another profile closes the Compare tab, which was about the one before."""
    from tests.ui.conftest import open_and_wait

    win = show_exposed(qtbot, MainWindow(QSettings(str(tmp_path / "t.ini"), QSettings.IniFormat)), 1400, 900)
    try:
        open_and_wait(qtbot, win, pair_paths["plain"])
        opened, path = win.trace, win.path
        win.open_comparison(pair_paths["input_bound"], pair_paths["prefetched"])
        view = win.views["compare"]
        qtbot.waitUntil(lambda: view.result is not None, timeout=TIMEOUT_MS)
        assert win.trace is opened and win.path == path  # the open profile stays in the other tabs
        assert win.tabs.currentWidget() is view and "faster" in view.summary.text()
        assert "stays open in the other tabs" in win.status_label.text()
        open_and_wait(qtbot, win, pair_paths["extra_op"])
        titles = [win.tabs.tabText(i) for i in range(win.tabs.count())]
        assert "compare" not in win.made_views and "Compare" not in titles  # closed (and deleted)
    finally:
        win.wait_for_background_work()
