"""A 64-host run in the GUI: the pod page (summaries, one host at a time) against one trace of every host.

    python benchmarks/bench_pod_gui.py --hosts 64 --events-per-host 3000000   # ~100 MB per host file
    python benchmarks/bench_pod_gui.py --hosts 16 --events-per-host 1000000 --skip-whole

Issue 20: the page shows first what the light pass finds (each host summarized in worker processes,
one per core), within 1.5x the time `tpuscope info RUN` takes to decode the same hosts (timed in the
same run, beside it); then every host's diagnosis comes in, in the background.

Issue 13: a run folder of 64+ hosts opens without holding every host's events. The real MainWindow
(offscreen, with the app's garbage collector set-up) opens the run folder through its loader thread
as File > Open Folder does. Each path runs in a process of its own, so each peak RSS is its own:

- pod page (the new path): time from open to the pod page and the peak RSS until then (the
  window's; each worker process holds one host at a time), the time until every host is diagnosed
  and the largest worker's peak RSS; then the
  time to open one host (to its timeline, through the usual hub and views) and to switch to another,
  the RSS once each host's Overview analyses are done, and the peak RSS over the whole session.
- one trace of every host (the old path, the peer; forced by raising the pod page's threshold):
  time to the loaded trace (the timeline can paint; the Overview's analyses of every host still
  to come) and its peak RSS.

The run folder holds one hard link per host to one generated TPU-shaped file
(benchmarks/bench_pods.py make_run), so 64 hosts of 100 MB cost 100 MB of disk. The trace cache
is off (TPUSCOPE_NO_CACHE) in both, so every host is decoded from its file.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

SIZE = (1600, 1000)
TIMEOUT_S = 3600


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20  # MiB, as ru_maxrss


def _wait(app, done, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not done():
        app.processEvents()
        time.sleep(0.005)
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not finish in {TIMEOUT_S} s")


def child(mode: str, run: str, shot: str | None) -> None:
    """One measured GUI session; prints one JSON line."""
    from PySide6.QtCore import QSettings

    from tpuscope.ui.app import application
    from tpuscope.ui.main_window import MainWindow
    from tpuscope.ui.pod import open_run as pod_open

    app = application()
    settings = QSettings(str(Path(tempfile.mkdtemp()) / "tpuscope.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings)
    window.resize(*SIZE)
    window.show()
    failures: list[str] = []
    window.loadFailed.connect(failures.append)
    figures: dict[str, float | int | str] = {"mode": mode, "start_rss_mb": round(_rss_mb())}
    if mode == "whole":
        pod_open.POD_PAGE_MIN_HOSTS = 1 << 30  # the old path: every host into one trace
        loaded: list[object] = []
        window.traceLoaded.connect(loaded.append)
        started = time.perf_counter()
        window.open_path(run)
        _wait(app, lambda: loaded or failures, "the one-trace load")
        if failures:
            raise SystemExit(failures[0])
        figures.update(seconds=time.perf_counter() - started, peak_rss_mb=round(_peak_mb()))
        figures["events"] = window.trace.event_count if window.trace is not None else 0
    else:
        shown: list[object] = []
        hosts: list[str] = []
        diagnosed: list[object] = []
        window.pods.podShown.connect(shown.append)
        window.pods.diagnosisFinished.connect(diagnosed.append)
        window.pods.hostShown.connect(hosts.append)
        started = time.perf_counter()
        window.open_path(run)
        _wait(app, lambda: shown or failures, "the pod summary")
        if failures:
            raise SystemExit(failures[0])
        figures.update(
            seconds=time.perf_counter() - started,
            peak_rss_mb=round(_peak_mb()),
            rss_at_page_mb=round(_rss_mb()),
            hosts=len(window.pods.result.hosts) if window.pods.result else 0,
        )
        _wait(app, lambda: diagnosed or failures, "every host's diagnosis")
        figures["diagnosed_seconds"] = time.perf_counter() - started
        figures["diagnosed_peak_rss_mb"] = round(_peak_mb())
        figures["largest_worker_rss_mb"] = round(
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        )  # the workers have exited: their peaks are in
        if shot:
            app.processEvents()
            window.grab().save(shot)
        page = window.pods.page
        assert page is not None
        for key, host in (("open_host", page.result.hosts[0]), ("switch_host", page.result.hosts[1])):
            started = time.perf_counter()
            page.open_host(host)
            _wait(app, lambda h=host: h in hosts or failures, f"opening {host}")
            if failures:
                raise SystemExit(failures[0])
            figures[f"{key}_seconds"] = time.perf_counter() - started
            window.hub.wait()  # the host's Overview analyses, then the host at rest
            app.processEvents()
            gc.collect()
            figures[f"{key}_rss_mb"] = round(_rss_mb())
        figures["session_peak_rss_mb"] = round(_peak_mb())
    print(json.dumps(figures), flush=True)
    os._exit(0)  # the analyses still running for the trace shown are not waited for


def measure(mode: str, run: Path, shot: str | None) -> dict:
    env = dict(os.environ, TPUSCOPE_NO_CACHE="1", QT_QPA_PLATFORM="offscreen")
    command = [sys.executable, __file__, "--child", mode, "--run", str(run)]
    if shot:
        command += ["--shot", shot]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        raise SystemExit(f"the {mode} session failed: {result.stderr.strip()[-2000:]}")
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--events-per-host", type=int, default=3_000_000)
    parser.add_argument("--dir", default=None, help="where to keep the generated run (default: a temp dir)")
    parser.add_argument("--shot", default=None, help="save the pod page as this PNG")
    parser.add_argument("--skip-whole", action="store_true", help="skip the one-trace load (the old path)")
    parser.add_argument("--child", choices=("pod", "whole"), help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.run, args.shot)
        return
    from bench_pods import make_run

    folder = Path(args.dir or tempfile.mkdtemp(prefix="tpuscope_pod_gui_"))
    folder.mkdir(parents=True, exist_ok=True)
    run = make_run(folder, args.hosts, args.events_per_host)
    host_mb = (run / "host000.xplane.pb").stat().st_size / 1e6
    print(f"{args.hosts} hosts x {args.events_per_host:,} events ({host_mb:.0f} MB per host file)")
    from bench_pods import timed

    info_s, info_peak = timed(["info", str(run)])
    pod = measure("pod", run, args.shot)
    print(f"tpuscope info (decode every host, one trace): {info_s:7.1f} s, peak RSS {info_peak:6.0f} MB")
    print(
        f"pod page (new):  {pod['seconds']:7.1f} s to the page = {pod['seconds'] / info_s:.2f}x info, "
        f"window peak RSS {pod['peak_rss_mb']:6.0f} MB "
        f"(RSS at the page {pod['rss_at_page_mb']} MB, {pod['peak_rss_mb'] / host_mb:.1f}x one host file)"
    )
    print(
        f"  every host diagnosed: {pod['diagnosed_seconds']:6.1f} s after the open "
        f"({pod['diagnosed_seconds'] / info_s:.2f}x info); largest worker process "
        f"{pod['largest_worker_rss_mb']} MB, window {pod['diagnosed_peak_rss_mb']} MB"
    )
    print(
        f"  open one host: {pod['open_host_seconds']:6.1f} s to its timeline, "
        f"RSS {pod['open_host_rss_mb']} MB "
        f"once its analyses are done; switch to another: {pod['switch_host_seconds']:.1f} s, "
        f"RSS {pod['switch_host_rss_mb']} MB; "
        f"peak over the session {pod['session_peak_rss_mb']} MB"
    )
    if not args.skip_whole:
        whole = measure("whole", run, None)
        print(
            f"one trace (old): {whole['seconds']:7.1f} s to the loaded trace ({whole['events']:,} events), "
            f"peak RSS {whole['peak_rss_mb']:6.0f} MB"
        )
        print(
            f"ratio: peak RSS {whole['peak_rss_mb'] / pod['session_peak_rss_mb']:.1f}x lower on the pod path "
            f"(whole session, two hosts opened), first picture {pod['seconds'] / whole['seconds']:.1f}x "
            "the one-trace time"
        )


if __name__ == "__main__":
    main()
