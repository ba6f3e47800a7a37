"""The pod page from the light pass, then each host's diagnosis in the background (tpuscope.app.hosts).

A run of MANY_HOSTS host files (copies of one real JAX CPU recording under distinct host names) opens
to the page from the host summaries computed in worker processes; the hosts' own findings fill in as
their diagnosis comes in, and once every host is diagnosed the page's findings are the CLI's
host-by-host answer. Cancel during the light pass and Stop during the diagnosis terminate the worker
processes. A host file that cannot be read is named and the others shown. The summaries are cached
small: the trace cache holds no host's columns, and a second open reads no host file.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from tpuscope.app import hosts
from tpuscope.app.where import MANY_HOSTS
from tpuscope.errors import LoadCancelled
from tpuscope.store import pod_results, traces
from tpuscope.ui.pod.page import FINDING_ROLE

WAIT_MS = 180_000


def _workers_gone(qtbot) -> None:
    """No worker process of either pass is left running."""
    qtbot.waitUntil(lambda: multiprocessing.active_children() == [], timeout=20_000)


def _listed(page) -> list[dict]:
    return [page.findings.item(k).data(FINDING_ROLE) for k in range(page.findings.count())]


def test_the_page_shows_the_summaries_first_and_fills_in_every_hosts_diagnosis(
    qtbot, window, many_hosts, tmp_path
):
    files = sorted(str(f) for f in many_hosts.iterdir())
    traces_before = set(traces.cache_dir().glob("*.trace"))
    at_first: list[tuple] = []
    window.pods.podShown.connect(
        lambda r: at_first.append(
            (
                set(r.diagnosed),
                [bool(h.report.get("checked") or h.op_rows) for h in r.run.hosts],  # diagnosed hosts'
                window.pods.page.panel.table.rowCount(),
            )
        )
    )
    with qtbot.waitSignal(window.pods.podShown, timeout=WAIT_MS) as shown:
        window.open_path(many_hosts)
    result = shown.args[0]
    page = window.pods.page
    # What the page shows first came from the light pass: every host's summary, no host diagnosed
    # (nothing was cached), the rows and heat map already drawn.
    diagnosed, reports, rows = at_first[0]
    assert diagnosed == set() and reports == [False] * MANY_HOSTS and rows == MANY_HOSTS
    assert result.files == files and len(result.hosts) == MANY_HOSTS
    assert page.panel.heatmap.hosts == result.hosts
    assert "in the background" in page.diagnosis_label.text()
    assert window.trace is None  # no host's events in the window

    with qtbot.waitSignal(window.pods.diagnosisFinished, timeout=WAIT_MS):
        pass
    QApplication.processEvents()
    _workers_gone(qtbot)
    assert result.diagnosed == set(range(MANY_HOSTS))
    assert page.diagnosis_label.text().startswith(f"Every host diagnosed ({MANY_HOSTS} of {MANY_HOSTS})")
    assert not page.stop_button.isVisible()
    # Once every host is diagnosed the page's findings are the CLI's host-by-host answer.
    cli = subprocess.run(
        [sys.executable, "-m", "tpuscope", "diagnose", str(many_hosts), "--json"],
        capture_output=True, text=True, timeout=600, env=dict(os.environ, TPUSCOPE_NO_CACHE="1"),
    )  # fmt: skip
    assert cli.returncode in (0, 1), cli.stderr
    answer = json.loads(cli.stdout)
    ours = [(f["id"], f["severity"], f["title"]) for f in result.run.findings()]
    assert ours == [(f["id"], f["severity"], f["title"]) for f in answer["findings"]]
    listed = [f for f in _listed(page) if f]
    assert sorted(f["id"] for f in listed) == sorted(f["id"] for f in answer["findings"])

    # The summaries are cached small, the host traces not at all: the trace cache holds no host file's
    # columns, and a second open reads no host file (every host's full result is in the pod cache).
    assert set(traces.cache_dir().glob("*.trace")) == traces_before
    stored = [pod_results.load(f, pod_results.FULL) for f in files]
    assert all(s is not None and len(s) == 1 for s in stored)
    sizes = [p.stat().st_size for p in pod_results.folder().glob("*.full")]
    assert sizes and max(sizes) < Path(files[0]).stat().st_size  # a summary, not the trace
    window.pods.close()
    with qtbot.waitSignal(window.pods.diagnosisFinished, timeout=WAIT_MS) as again:
        window.open_path(many_hosts)
    second = again.args[0]
    assert second.diagnosed == set(range(MANY_HOSTS)) and second.pool is not None and second.pool.closed
    assert [f["id"] for f in second.run.findings()] == [f["id"] for f in result.run.findings()]


def test_no_host_trace_goes_to_the_trace_cache(many_hosts):
    """The light pass opens each host file without the trace cache: only its summary is stored."""
    before = set(traces.cache_dir().glob("*.trace"))
    results, kind = hosts.read_host_file(many_hosts / "host03.xplane.pb", pod_results.LIGHT)
    assert kind == pod_results.LIGHT and len(results) == 1 and results[0].report == {}
    assert set(traces.cache_dir().glob("*.trace")) == before
    assert pod_results.load(many_hosts / "host03.xplane.pb", pod_results.LIGHT) is not None
    # A full result serves the light pass too; a light one does not serve the full pass.
    assert pod_results.load(many_hosts / "host03.xplane.pb", pod_results.FULL) is None
    full, kind = hosts.read_host_file(many_hosts / "host03.xplane.pb", pod_results.FULL)
    assert kind == pod_results.FULL and full[0].report.get("checked")
    assert hosts.read_host_file(many_hosts / "host03.xplane.pb", pod_results.LIGHT)[1] == pod_results.FULL


def test_cancel_during_the_light_pass_stops_its_workers(qtbot, window, many_hosts):
    messages: list[str] = []
    window.progress.valueChanged.connect(lambda _v: messages.append(window.status_label.text()))
    window.open_path(many_hosts)
    # Cancel once the workers are summarizing (before the page: the run's hosts are still being read).
    qtbot.waitUntil(
        lambda: (
            any("summarizing host files on" in m for m in messages)
            and bool(multiprocessing.active_children())
        ),
        timeout=WAIT_MS,
    )
    assert window.pods.page is None
    window.cancel_load()
    qtbot.waitUntil(lambda: not window.workers, timeout=WAIT_MS)
    QApplication.processEvents()
    assert window.pods.page is None and window.status_label.text() == "Loading cancelled."
    _workers_gone(qtbot)


def test_stop_during_the_diagnosis_stops_its_workers_and_keeps_the_page(qtbot, window, many_hosts):
    with qtbot.waitSignal(window.pods.podShown, timeout=WAIT_MS) as shown:
        window.open_path(many_hosts)
    result = shown.args[0]
    page = window.pods.page
    assert page.stop_button.isVisibleTo(page)
    with qtbot.waitSignal(window.pods.diagnosisFinished, timeout=WAIT_MS):
        page.stop_button.click()
    QApplication.processEvents()
    _workers_gone(qtbot)
    assert len(result.diagnosed) < MANY_HOSTS
    assert page.diagnosis_label.text().startswith("Diagnosis stopped")
    assert window.pods.page is page and page.panel.table.rowCount() == MANY_HOSTS


def test_a_missing_and_an_unreadable_host_file_are_named_and_the_others_shown(qtbot, window, many_hosts):
    (many_hosts / "host04.xplane.pb").unlink()
    (many_hosts / "host04.xplane.pb").symlink_to(many_hosts / "gone.xplane.pb")  # its file was removed
    (many_hosts / "host09.xplane.pb").unlink()
    (many_hosts / "host09.xplane.pb").write_bytes(b"not a profile\n" * 50)
    with qtbot.waitSignal(window.pods.diagnosisFinished, timeout=WAIT_MS) as finished:
        window.open_path(many_hosts)
    result = finished.args[0]
    QApplication.processEvents()
    assert len(result.hosts) == MANY_HOSTS - 2 and not {"host04", "host09"} & set(result.hosts)
    named = " ".join(result.unreadable)
    assert "host04.xplane.pb" in named and "host09.xplane.pb" in named
    assert all(sentence.endswith(".") for sentence in result.unreadable)
    assert "host09.xplane.pb" in window.notice.text.text()
    page = window.pods.page
    assert page.panel.table.rowCount() == MANY_HOSTS - 2
    assert "2 host file(s) could not be read" in page.caption.text()
    _workers_gone(qtbot)


def test_both_passes_give_the_same_results_on_local_processes_and_on_a_dask_cluster(
    many_hosts, monkeypatch, dask_scheduler
):
    """HostPool's places to run: this machine's processes, and a Dask scheduler (a real local
    cluster here; on a pod, one near the data). Cancel on Dask stops the pass."""
    if dask_scheduler is None:
        pytest.skip("Dask is not installed")
    monkeypatch.setenv("TPUSCOPE_NO_CACHE", "1")
    files = sorted(str(f) for f in many_hosts.iterdir())[:4]

    def summaries(pool: hosts.HostPool, kind: str) -> list:
        outcomes: list[hosts.HostOutcome] = []
        try:
            hosts.pass_over(pool, files, kind, lambda: False, outcomes.append)
        finally:
            pool.close()
        found = sorted(outcomes, key=lambda o: o.index)
        assert [o.error for o in found] == [None] * len(files)
        return [
            (r.host, r.event_count, r.summary.step_number.tolist(), r.summary.parts["collective"].tolist(),
             r.report.get("findings"))
            for o in found for r in o.results
        ]  # fmt: skip

    local = summaries(hosts.HostPool("2"), pod_results.FULL)
    on_dask = hosts.HostPool(dask_scheduler)
    assert on_dask.where == f"the Dask cluster at {dask_scheduler}"
    assert summaries(on_dask, pod_results.FULL) == local
    stopping = hosts.HostPool(dask_scheduler)
    with pytest.raises(LoadCancelled):
        hosts.pass_over(stopping, files, pod_results.LIGHT, lambda: True, lambda _o: None)
    assert stopping.closed
