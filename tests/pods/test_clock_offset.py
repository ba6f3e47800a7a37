"""Clocks across hosts and devices: a host whose clock is off is named with its offset, the same on
the one-trace and host-by-host paths, and the merged timeline aligned by it lines its collectives up
again; healthy recordings (one machine, one clock) get no finding; a device whose ops start before
their launches is named too.

The off clock is made the way a VM with a drifting clock would write it: one host file of a real
4-process JAX recording (tests/pods/recordings.py) rewritten with every line's `timestamp_ns` moved
by a known offset.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import require_shared_traces
from tests.paths import SHARED_TRACES
from tpuscope.analysis.clock_alignment import align_clocks
from tpuscope.analysis.diagnose import clock_offset
from tpuscope.analysis.pod.clocks import APPLIED_SHIFTS, estimate_offsets, launch_skew
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.model.clock_shift import shift_hosts
from tpuscope.readers.xplane import xplane_pb2

SHIFTED_HOST = "worker1"
SHIFT_MS = 100.0  # longer than a collective instance of the recordings, so the shift is visible
# The shift measured back: the host's own median skew at the collectives on the unshifted run is
# what the estimate adds (exactly); against the shift alone, well inside a step of the recording.
ESTIMATE_TOLERANCE_MS = 15.0


def _shift_host_file(run: Path, into: Path, host: str, shift_ns: int) -> Path:
    """A copy of the run folder with `host`'s file's line timestamps moved by `shift_ns`."""
    copy = into / run.name
    shutil.copytree(run, copy)
    path = copy / f"{host}.xplane.pb"
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    for plane in space.planes:
        for line in plane.lines:
            line.timestamp_ns += shift_ns
    path.write_bytes(space.SerializeToString())
    return copy


def _diagnose(run: Path, *options: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "tpuscope", "diagnose", str(run), "--json", "--no-cache", *options],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _clock_findings(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["id"] == clock_offset.RULE_ID]


def _collective_ends(trace) -> dict[str, np.ndarray]:
    pod = TraceAnalysis(trace).pod
    return {s.host: s.collective_ends for s in pod.summaries}


@pytest.fixture(scope="module")
def shifted(pod_run, tmp_path_factory):
    return _shift_host_file(
        pod_run("balanced"), tmp_path_factory.mktemp("shifted"), SHIFTED_HOST, int(SHIFT_MS * 1e6)
    )


@pytest.mark.parametrize("scenario", ["balanced", "healthy", "straggler"])
def test_hosts_sharing_one_clock_get_no_finding(pod_trace, scenario):
    """One machine, one clock: however unevenly the hosts arrive (a straggler included), no host's
    collectives lie outside the others'."""
    report = TraceAnalysis(pod_trace(scenario)).report
    assert [f for f in report.findings if f.id == clock_offset.RULE_ID] == []
    line = next(c["summary"] for c in report.checked if c["rule"] == clock_offset.RULE_ID)
    assert line.startswith("0 of "), line


def test_two_real_gpu_ranks_get_no_finding(tmp_path):
    """HTA's two sampled ranks of one job: their NCCL kernels are SendRecv (point to point, pipelined
    between the ranks, not a meeting point), so nothing is matched and nothing said."""
    require_shared_traces()
    for rank in (0, 1):
        shutil.copy(SHARED_TRACES / "kineto" / f"trace_filter__sampled_rank-{rank}.json.gz", tmp_path)
    report = TraceAnalysis(open_trace(tmp_path, use_cache=False)).report
    assert report.rule_errors == {}
    assert [f for f in report.findings if f.id == clock_offset.RULE_ID] == []


def test_a_host_with_a_shifted_clock_is_named_with_its_offset_on_both_paths(pod_trace, shifted):
    unshifted = estimate_offsets(list(_collective_ends(pod_trace("balanced")).items()))
    before = next(h.offset_ps for h in unshifted.hosts if h.host == SHIFTED_HOST)
    answers = {name: _diagnose(shifted, *options) for name, options in
               {"one trace": [], "per host": ["--per-host"]}.items()}  # fmt: skip
    one, per_host = (_clock_findings(r) for r in answers.values())
    assert one == per_host, "the two paths disagree"
    assert [f["metrics"]["host"] for f in one] == [SHIFTED_HOST]
    offset_ms = one[0]["metrics"]["offset_ms"]
    # The shift comes back exactly on top of the host's own skew, and near the shift alone.
    assert offset_ms == pytest.approx(SHIFT_MS + before / 1e9, abs=0.002)
    assert offset_ms == pytest.approx(SHIFT_MS, abs=ESTIMATE_TOLERANCE_MS)
    # It costs no step time and misleads no other rule (they compare hosts by their own durations).
    assert one[0]["severity"] == "info" and one[0]["impact"] is None and one[0]["impact_note"]
    assert SHIFTED_HOST in one[0]["title"] and "ahead of" in one[0]["title"]


def test_of_two_hosts_the_second_is_measured_against_the_first(pod_run, pod_trace, tmp_path):
    """Two hosts cannot say which clock is off: the second is measured against the first's."""
    before = estimate_offsets(list(_collective_ends(pod_trace("healthy")).items()))
    assert before.reference == "worker0's" and before.off == []
    run = _shift_host_file(pod_run("healthy"), tmp_path, SHIFTED_HOST, -int(SHIFT_MS * 1e6))
    after = estimate_offsets(list(_collective_ends(open_trace(run, use_cache=False)).items()))
    assert [h.host for h in after.off] == [SHIFTED_HOST]
    moved = after.off[0].offset_ps - before.hosts[1].offset_ps
    assert moved == pytest.approx(-SHIFT_MS * 1e9, abs=1e6)  # exactly the shift, to 1 us


def test_the_aligned_timeline_lines_the_collectives_up_again(shifted):
    trace = open_trace(shifted, use_cache=False)
    estimate = estimate_offsets(list(_collective_ends(trace).items()))
    offsets = estimate.offsets_ps()
    assert list(offsets) == [SHIFTED_HOST]
    aligned = shift_hosts(trace, offsets)
    after = estimate_offsets(list(_collective_ends(aligned).items()))
    assert after.off == []
    moved = next(h for h in after.hosts if h.host == SHIFTED_HOST)
    assert abs(moved.offset_ps) < ESTIMATE_TOLERANCE_MS * 1e9  # its ends sit among the others' again
    assert moved.disjoint == 0


def _shift_device(trace, offset_ps: int):
    """`trace` with its first device plane's ops moved by `offset_ps` (a device clock that is off)."""
    device = next(p for p in trace.planes if p.is_device)
    for track in device.tracks:
        track.start_ps = track.start_ps + offset_ps
    return trace, device


def test_device_ops_before_their_launches_are_named_with_the_offset():
    """No shared trace has a device op before its launch: a real GPU trace with its device plane moved
    earlier by a known offset has, and the measured offset is that shift less the shortest launch lag
    (a JAX run on an MI300X: its ops start 10 to 120 us after their launches)."""
    require_shared_traces()
    path = SHARED_TRACES / "gpu" / "jax_mi300x_attention.xplane.pb"
    healthy = open_trace(path, use_cache=False)
    assert not [s for s in launch_skew(healthy) if s.visibly_off]
    report = TraceAnalysis(healthy).report
    assert [f for f in report.findings if f.id == clock_offset.RULE_ID] == []
    shift_ps = 1_000_000_000  # 1 ms
    trace, device = _shift_device(open_trace(path, use_cache=False), -shift_ps)
    skews = [s for s in launch_skew(trace) if s.visibly_off]
    assert [s.device for s in skews] == [device.name]
    assert 0 < shift_ps - skews[0].offset_ps < shift_ps * 0.1  # the shift, less the shortest lag
    found = [f for f in TraceAnalysis(trace).report.findings if f.id == clock_offset.RULE_ID]
    assert len(found) == 1 and device.name in found[0].title
    assert found[0].metrics["offset_ms"] == pytest.approx(-skews[0].offset_ps / 1e9, abs=0.001)
    # As the app loads it: the device moved after its launches, the finding still the recorded one.
    aligned = align_clocks(trace)
    assert aligned.get(APPLIED_SHIFTS) == {device.name: skews[0].offset_ps}
    assert not [s for s in launch_skew(trace) if s.early]
    assert [f.to_json() for f in aligned.report.findings if f.id == clock_offset.RULE_ID] == [
        f.to_json() for f in found
    ]


def _collective_end_medians(trace) -> dict[str, float]:
    return {h: float(np.median(e.end_ps)) for h, e in _collective_ends(trace).items()}


def test_the_app_aligns_the_run_and_says_so_and_view_menu_turns_it_off(qtbot, tmp_path, shifted):
    """On by default: the status bar names the shifted host and its shift, its collectives end among
    the others' on the timeline's trace, and the finding is the CLI's; View > Align Host Clocks off
    (saved) loads the run again with the recorded times."""
    from PySide6.QtCore import QSettings

    from tests.ui.conftest import open_and_wait
    from tests.ui.widgets import show_exposed
    from tpuscope.ui.loader import OPTIONS
    from tpuscope.ui.main_window import MainWindow

    settings = QSettings(str(tmp_path / "tpuscope.ini"), QSettings.IniFormat)
    win = show_exposed(qtbot, MainWindow(settings), 1366, 768)
    try:
        assert win.align_clocks_action.isChecked()
        open_and_wait(qtbot, win, shifted)
        status = win.status_label.text()
        assert f"clocks aligned: {SHIFTED_HOST} -" in status, status
        ends = _collective_end_medians(win.trace)
        others = [v for h, v in ends.items() if h != SHIFTED_HOST]
        assert abs(ends[SHIFTED_HOST] - np.median(others)) < ESTIMATE_TOLERANCE_MS * 1e9
        found = [f for f in win.hub.analysis.report.findings if f.id == clock_offset.RULE_ID]
        assert [f.metrics["host"] for f in found] == [SHIFTED_HOST]
        assert found[0].metrics["offset_ms"] == pytest.approx(SHIFT_MS, abs=ESTIMATE_TOLERANCE_MS)
        with qtbot.waitSignal(win.traceLoaded, timeout=120_000):
            win.align_clocks_action.trigger()  # off: the run loads again
        qtbot.waitUntil(lambda: not win.workers, timeout=120_000)
        win.hub.wait()
        assert "clocks aligned" not in win.status_label.text()
        assert str(settings.value("view/align_clocks")).lower() == "false"
        ends = _collective_end_medians(win.trace)
        others = [v for h, v in ends.items() if h != SHIFTED_HOST]
        assert ends[SHIFTED_HOST] - np.median(others) > (SHIFT_MS - ESTIMATE_TOLERANCE_MS) * 1e9
    finally:
        win.wait_for_background_work()
        OPTIONS.align_clocks = True
