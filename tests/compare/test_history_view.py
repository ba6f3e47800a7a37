"""The History view on real JAX CPU runs: a point per run with its interval, changed runs marked,
the table with causes; clicking a run opens the Compare view on it and the run before it."""

from __future__ import annotations

from PySide6.QtCore import QSettings

from tests.compare.test_history import _add_run
from tests.ui.widgets import show_exposed
from tpuscope.app.history import read_history
from tpuscope.ui.history_view import CHANGE_COLUMN, SLOWER_COLOR, HistoryView
from tpuscope.ui.main_window import MainWindow

TIMEOUT_MS = 120_000
SCREEN = (1366, 768)


def _logdir(tmp_path, paths):
    root = tmp_path / "logdir"
    for k, scenario in enumerate(("machine_base", "small_extra", "machine_slow", "machine_base")):
        _add_run(root, f"2026_01_0{k + 1}_12_00_00", paths[scenario])
    return root


def test_view_charts_every_run_marks_the_changes_and_compares_a_clicked_run(
    qtbot, tmp_path, uniformly_slowed_machine_paths, monkeypatch
):
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    root = _logdir(tmp_path, uniformly_slowed_machine_paths)
    view = show_exposed(qtbot, HistoryView(), *SCREEN)
    history = read_history([str(root)])
    view.set_history(history)
    assert view.table.rowCount() == 4 and view.plotted == [0, 1, 2, 3]
    assert "4 runs" in view.summary.text()
    slow_row = 2
    assert view.table.item(slow_row, CHANGE_COLUMN).text().startswith("slower")
    assert view.table.item(slow_row, CHANGE_COLUMN).foreground().color() == SLOWER_COLOR
    assert view.table.item(slow_row, CHANGE_COLUMN + 1).text() == "machine"
    assert "Cause: the machine" in view.table.item(slow_row, 0).toolTip()
    spots = view.points.points()
    assert len(spots) == 4
    # The machine's change is drawn hollow: its point's fill is white, its outline the verdict's colour.
    machine_spot = next(s for s in spots if s.data() == slow_row)
    assert machine_spot.brush().color().name() == "#ffffff" and machine_spot.pen().color() == SLOWER_COLOR
    with qtbot.waitSignal(view.compareRequested) as asked:
        view._on_point_clicked(view.points, [machine_spot])
    assert asked.args == [history.where("2026_01_02_12_00_00"), history.where("2026_01_03_12_00_00")]
    assert not view.compare_entry(0)  # the first run has nothing before it
    image = view.grab()
    image.save(str(tmp_path / "history.png"))
    assert (image.width(), image.height()) == SCREEN


def test_main_window_reads_a_history_and_opens_a_pair_in_compare(
    qtbot, tmp_path, uniformly_slowed_machine_paths, monkeypatch
):
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    root = _logdir(tmp_path, uniformly_slowed_machine_paths)
    win = show_exposed(qtbot, MainWindow(QSettings(str(tmp_path / "t.ini"), QSettings.IniFormat)), *SCREEN)
    try:
        win.open_history([str(root)])
        view = win.views["history"]
        qtbot.waitUntil(lambda: view.history is not None, timeout=TIMEOUT_MS)
        assert win.tabs.currentWidget() is view and view.table.rowCount() == 4
        win.grab().save(str(tmp_path / "window_history.png"))
        assert view.compare_entry(2)
        compare = win.views["compare"]
        qtbot.waitUntil(lambda: compare.result is not None, timeout=TIMEOUT_MS)
        assert win.tabs.currentWidget() is compare
        assert "slower" in compare.summary.text() and "Cause: the machine" in compare.summary.text()
        # With no profile open, BASE becomes the other views' profile, and History stays open (issue 33).
        assert win.trace is compare.result.base.trace and win.tabs.indexOf(view) >= 0
    finally:
        win.wait_for_background_work()
