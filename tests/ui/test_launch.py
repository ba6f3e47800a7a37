"""`tpuscope BASE --compare NEW`, `tpuscope PATH --at 12.3ms[:45.6ms]` and `--op NAME` (issue 37): the
command line is read into one request, the real window opens there, and View > Copy Link writes the
command line that opens the same place."""

from __future__ import annotations

import shlex

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

from tests.conftest import SAMPLES, TPU_TRACE
from tests.ui.conftest import LOAD_TIMEOUT_MS
from tests.ui.widgets import show_exposed
from tpuscope.cli import main
from tpuscope.ui import launch
from tpuscope.ui.app import open_request
from tpuscope.ui.main_window import MainWindow

BASE = SAMPLES / "jax_cpu_healthy.xplane.pb"
NEW = SAMPLES / "jax_cpu_input_bound.xplane.pb"


def test_times_and_ranges_read_with_their_units():
    assert launch.parse_time_ps("12.3ms") == pytest.approx(12.3e9)
    assert launch.parse_time_ps("450 us") == pytest.approx(450e6)
    assert launch.parse_time_ps("1.5s") == pytest.approx(1.5e12)
    assert launch.parse_time_ps("2") == pytest.approx(2e9)  # a bare number is milliseconds
    assert launch.parse_range_ps("12.3ms:45.6ms") == (pytest.approx(12.3e9), pytest.approx(45.6e9))
    assert launch.parse_range_ps("7ms") == (pytest.approx(7e9), None)
    for bad in ("12.3 parsecs", "", "ms", "-3ms"):
        with pytest.raises(launch.LaunchError, match="is not a time"):
            launch.parse_time_ps(bad)
    with pytest.raises(launch.LaunchError, match="ends before it starts"):
        launch.parse_range_ps("5ms:2ms")


def test_the_command_line_reads_into_one_request():
    assert launch.parse(["base.pb", "--compare", "new.pb"]) == launch.LaunchRequest(
        "base.pb", ("base.pb", "new.pb")
    )
    assert launch.parse(["--compare", "base.pb", "new.pb"]).compare == ("base.pb", "new.pb")
    request = launch.parse(["p.pb", "--at", "1ms:2ms", "--op", "fusion.3"])
    assert request.path == "p.pb" and request.op == "fusion.3"
    assert request.at_ps == (pytest.approx(1e9), pytest.approx(2e9))
    for bad, words in (
        (["--compare", "a.pb"], "takes two runs"),
        (["a.pb", "--compare", "b.pb", "c.pb"], "takes two runs"),
        (["--at", "3ms"], "need a profile"),
    ):
        with pytest.raises(launch.LaunchError, match=words):
            launch.parse(bad)


def test_a_bad_deep_link_is_one_sentence_and_exit_2(capsys):
    assert main([str(TPU_TRACE), "--at", "soon"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'soon' is not a time" in err


def test_the_link_round_trips_through_the_parser():
    line = launch.command_line("/runs/a b/x.pb", 12.3e9, 45.6e9, "fusion 3")
    words = shlex.split(line)
    assert words[0] == "tpuscope"
    request = launch.parse(words[1:])
    assert request.path == "/runs/a b/x.pb" and request.op == "fusion 3"
    assert request.at_ps == (pytest.approx(12.3e9), pytest.approx(45.6e9))


def test_base_compare_new_opens_the_app_on_compare(qtbot, settings, tmp_path, monkeypatch):
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    window = show_exposed(qtbot, MainWindow(settings), 1280, 720)
    open_request(window, launch.parse([str(BASE), "--compare", str(NEW)]))
    compare = window.views["compare"]
    qtbot.waitUntil(lambda: compare.result is not None and window.trace is not None, timeout=LOAD_TIMEOUT_MS)
    QApplication.processEvents()
    assert window.tabs.currentWidget() is compare
    assert window.path is not None and str(window.path).endswith(BASE.name)  # BASE in the other views
    assert (window.width(), window.height()) == (1280, 720)  # Compare does not grow the window
    window.wait_for_background_work()


def _visible_window_ps(window: MainWindow) -> tuple[float, float]:
    return window.timeline.t0_ps, window.timeline.t1_ps


def test_at_opens_the_timeline_on_the_range_and_copy_link_gives_it_back(qtbot, settings):
    window = show_exposed(qtbot, MainWindow(settings), 1280, 720)
    with qtbot.waitSignal(window.traceLoaded, timeout=LOAD_TIMEOUT_MS):
        open_request(window, launch.parse([str(TPU_TRACE), "--at", "1.5ms:2.5ms"]))
    qtbot.waitUntil(lambda: window.tabs.currentWidget() is window.views["timeline"], timeout=LOAD_TIMEOUT_MS)
    t0, t1 = _visible_window_ps(window)
    assert (t0, t1) == (pytest.approx(1.5e9), pytest.approx(2.5e9))
    window.menus.actions["view.copy_link"].trigger()
    words = shlex.split(QApplication.clipboard().text())
    assert words[:2] == ["tpuscope", str(TPU_TRACE)]
    assert launch.parse(words[1:]).at_ps == (pytest.approx(1.5e9), pytest.approx(2.5e9))
    window.wait_for_background_work()


def test_op_opens_the_timeline_on_the_ops_longest_event(qtbot, settings):
    window = show_exposed(qtbot, MainWindow(settings), 1280, 720)
    with qtbot.waitSignal(window.traceLoaded, timeout=LOAD_TIMEOUT_MS):
        window.open_path(TPU_TRACE)
    trace = window.trace
    device = next(t for t in trace.tracks() if t.plane.name.startswith("/device:TPU:0") and len(t))
    name = trace.strings[int(device.name_id[np.argmax(device.duration_ps)])]
    window.wait_for_background_work()
    other = show_exposed(qtbot, MainWindow(settings), 1280, 720)
    with qtbot.waitSignal(other.traceLoaded, timeout=LOAD_TIMEOUT_MS):
        open_request(other, launch.parse([str(TPU_TRACE), "--op", name]))
    qtbot.waitUntil(lambda: other.timeline.selected is not None, timeout=LOAD_TIMEOUT_MS)
    track, index = other.timeline.selected
    assert other.trace.strings[int(track.name_id[index])] == name
    longest = max(int(t.duration_ps[i].max()) for t, i in other.trace.events_named(name))
    assert int(track.duration_ps[index]) == longest
    assert other.tabs.currentWidget() is other.views["timeline"]
    t0, t1 = _visible_window_ps(other)
    start = float(track.start_ps[index])
    assert t0 <= start and start + float(track.duration_ps[index]) <= t1
    other.menus.actions["view.copy_link"].trigger()
    assert "--at" in shlex.split(QApplication.clipboard().text())
    other.wait_for_background_work()
