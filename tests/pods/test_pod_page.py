"""The GUI on runs of many hosts: the pod page first, one host's events at a time.

A run of MANY_HOSTS host files (copies of one real JAX CPU recording under distinct host names)
opens to the pod page with no host's events in memory, its rows equal the CLI's host-by-host
answer, and opening a host loads that host alone and drops the one shown before. A broken host
file is left out of the summary, or, when it breaks later, gives one sentence and leaves the page
usable. The recorded 4-process straggler run (tests/pods/recordings.py), opened as a pod, jumps
from its straggler finding to the late host's slowest step.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import weakref
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from tests.conftest import shown_message_boxes
from tests.pods import recordings
from tests.ui.widgets import double_click
from tpuscope.app.where import MANY_HOSTS
from tpuscope.model.trace import Trace
from tpuscope.ui.main_window import MainWindow
from tpuscope.ui.pod import open_run as pod_open
from tpuscope.ui.pod.page import FINDING_ROLE
from tpuscope.ui.widgets.tables import SORT_ROLE

WAIT_MS = 120_000
LATE_HOST = f"worker{recordings.STRAGGLER}"


def _open_pod(qtbot, win: MainWindow, path):
    with qtbot.waitSignal(win.pods.podShown, timeout=WAIT_MS) as blocker:
        win.open_path(path)
    qtbot.waitUntil(lambda: not win.workers, timeout=WAIT_MS)
    QApplication.processEvents()
    return blocker.args[0]


def _open_host(qtbot, win: MainWindow, action) -> None:
    with qtbot.waitSignal(win.pods.hostShown, timeout=WAIT_MS):
        action()
    qtbot.waitUntil(lambda: not win.workers, timeout=WAIT_MS)
    win.hub.wait()
    QApplication.processEvents()


def _traces_of(files: set[str]) -> list[Trace]:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, Trace) and {str(s) for s in o.sources} & files]


def _row_of(table, host: str) -> int:
    return next(r for r in range(table.rowCount()) if table.item(r, 0).text() == host)


def test_many_hosts_open_to_the_pod_page_with_the_clis_rows_and_one_host_at_a_time(
    qtbot, window, many_hosts, tmp_path
):
    files = {str(f) for f in many_hosts.iterdir()}
    result = _open_pod(qtbot, window, many_hosts)
    page = window.pods.page
    assert window.tabs.currentWidget() is page
    assert window.trace is None and window.hub.trace is None and window.timeline.trace is None
    assert _traces_of(files) == []  # the summaries only: no host's events are held
    assert result.hosts == [f"host{i:02d}" for i in range(MANY_HOSTS)]

    # The rows are the CLI's host-by-host answer (a run of MANY_HOSTS files is analysed so unasked).
    cli = subprocess.run(
        [sys.executable, "-m", "tpuscope", "overview", str(many_hosts), "--json"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, TPUSCOPE_NO_CACHE="1"),
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    answer = json.loads(cli.stdout)
    assert answer["analysed"] == "host by host"
    assert result.run.pod.to_json()["per_host"] == answer["pod"]["per_host"]
    table = page.panel.table
    assert table.rowCount() == MANY_HOSTS
    for expected in answer["pod"]["per_host"]:
        row = _row_of(table, expected["host"])
        assert table.item(row, 1).data(SORT_ROLE) == pytest.approx(expected["step_time_us"] * 1e6)
        assert table.item(row, 2).data(SORT_ROLE) == pytest.approx(expected["input_us"] * 1e6)
        assert table.item(row, 3).data(SORT_ROLE) == pytest.approx(expected["collective_us"] * 1e6)
        assert table.item(row, 6).text() == (expected["busiest_op"] or "–")
    heatmap = page.panel.heatmap
    assert heatmap.hosts == result.hosts and len(heatmap.steps) == answer["pod"]["steps"].__len__()
    page.grab().save(str(tmp_path / "pod_page.png"))

    # Double-click host05's row: that host's file alone is loaded, the timeline shows it.
    row = _row_of(table, "host05")
    rect = table.visualItemRect(table.item(row, 0))
    _open_host(qtbot, window, lambda: double_click(qtbot, table.viewport(), rect.center()))
    first = window.trace
    assert [str(s) for s in first.sources] == [str(many_hosts / "host05.xplane.pb")]
    assert len(first.hosts) == 1
    assert window.tabs.currentWidget() is window.views["timeline"]
    assert window.tabs.indexOf(page) == 0  # the pod page stays
    assert "host05" in page.open_label.text()
    held = {str(t.sources[0]) for t in _traces_of(files)}
    assert held == {str(many_hosts / "host05.xplane.pb")}

    # The picker opens another host and the first one's trace is gone.
    gone = weakref.ref(first)
    del first
    page.picker.setCurrentText("host11")
    _open_host(qtbot, window, lambda: qtbot.mouseClick(page.open_button, Qt.MouseButton.LeftButton))
    assert [str(s) for s in window.trace.sources] == [str(many_hosts / "host11.xplane.pb")]
    gc.collect()
    assert gone() is None
    assert {str(t.sources[0]) for t in _traces_of(files)} == {str(many_hosts / "host11.xplane.pb")}


def test_a_broken_host_is_left_out_or_said_in_one_sentence_and_the_page_stays(
    qtbot, window, many_hosts, jax_host_file
):
    (many_hosts / "host15.xplane.pb").unlink()
    (many_hosts / "host15.xplane.pb").write_bytes(b"this is not a profile\n" * 100)
    result = _open_pod(qtbot, window, many_hosts)
    assert len(result.hosts) == MANY_HOSTS - 1 and "host15" not in result.hosts
    assert len(result.unreadable) == 1 and "host15.xplane.pb" in result.unreadable[0]
    assert "host15.xplane.pb" in window.notice.text.text()
    page = window.pods.page
    _open_host(qtbot, window, lambda: page.open_host("host02"))

    # host07 breaks after the summary (a copy cut to its first bytes): one sentence, nothing lost.
    broken = many_hosts / "host07.xplane.pb"
    broken.unlink()
    broken.write_bytes(jax_host_file.read_bytes()[:40])
    shown_message_boxes.clear()
    with qtbot.waitSignal(window.loadFailed, timeout=WAIT_MS) as failed:
        page.open_host("host07")
    qtbot.waitUntil(lambda: not window.workers, timeout=WAIT_MS)
    message = failed.args[0]
    assert "host07.xplane.pb" in message and message.count(". ") == 0 and message.endswith(".")
    assert [box[0] for box in shown_message_boxes] == ["warning"] and message in shown_message_boxes[0]
    assert window.pods.page is page and window.tabs.indexOf(page) == 0
    assert [Path(s).name for s in window.trace.sources] == ["host02.xplane.pb"]
    _open_host(qtbot, window, lambda: page.open_host("host09"))
    assert [Path(s).name for s in window.trace.sources] == ["host09.xplane.pb"]


def test_cancel_stops_the_summary_and_a_smaller_run_opens_as_one_trace(qtbot, window, many_hosts, tmp_path):
    window.open_path(many_hosts)
    window.cancel_load()
    qtbot.waitUntil(lambda: not window.workers, timeout=WAIT_MS)
    QApplication.processEvents()
    assert window.pods.page is None and window.status_label.text() == "Loading cancelled."

    small = tmp_path / "small_run"
    small.mkdir()
    for name in ("host00.xplane.pb", "host01.xplane.pb"):
        shutil.copy(many_hosts / name, small / name)
    with qtbot.waitSignal(window.traceLoaded, timeout=WAIT_MS):
        window.open_path(small)
    qtbot.waitUntil(lambda: not window.workers, timeout=WAIT_MS)
    assert window.pods.page is None and len(window.trace.sources) == 2


def test_the_straggler_finding_opens_the_late_host_at_its_slowest_step(
    qtbot, window, pod_run, monkeypatch, tmp_path
):
    monkeypatch.setattr(pod_open, "POD_PAGE_MIN_HOSTS", recordings.PROCESSES)  # 4 recorded processes
    result = _open_pod(qtbot, window, pod_run("straggler"))
    page = window.pods.page
    findings = page.findings
    listed = [findings.item(k).data(FINDING_ROLE) for k in range(findings.count())]
    row = next(k for k, f in enumerate(listed) if f["id"] == "straggler")
    first = listed[row]
    assert first["metrics"]["straggler"] == LATE_HOST and "host" not in first  # the pod's, not a host's
    window.grab().save(str(tmp_path / "pod_straggler_page.png"))
    focus = next(e for e in first["evidence"] if e.get("focus"))
    offset = result.offset_ps(LATE_HOST)

    rect = findings.visualItemRect(findings.item(row))
    _open_host(qtbot, window, lambda: double_click(qtbot, findings.viewport(), rect.center()))
    timeline = window.timeline
    assert [Path(s).name for s in window.trace.sources] == [f"{LATE_HOST}.xplane.pb"]
    assert window.tabs.currentWidget() is window.views["timeline"]
    assert (timeline.t0_ps, timeline.t1_ps) == (
        pytest.approx(focus["start_ps"] - offset),
        pytest.approx(focus["end_ps"] - offset),
    )
    outlined = [lod.track for layer in timeline.highlights.values() for lod in layer.values()]
    assert any(t.name == focus["track"] for t in outlined)

    # A heat-map cell of another host opens that host at that step (in its own time).
    window.show_view("timeline")
    window.tabs.setCurrentWidget(page)
    QApplication.processEvents()
    heatmap = page.panel.heatmap
    center = heatmap.cell_rect(0, 3).center()
    host = heatmap.hosts[0]
    summary = result.run.pod.host_summaries[0]
    position = int(result.run.pod.positions[0, 3])
    _open_host(
        qtbot,
        window,
        lambda: qtbot.mouseClick(heatmap, Qt.MouseButton.LeftButton, pos=QPoint(center.x(), center.y())),
    )
    assert [Path(s).name for s in window.trace.sources] == [f"{host}.xplane.pb"]
    own = result.offset_ps(host)
    assert timeline.t0_ps == pytest.approx(summary.start_ps[position] - own)
    assert timeline.t1_ps == pytest.approx(summary.end_ps[position] - own)
