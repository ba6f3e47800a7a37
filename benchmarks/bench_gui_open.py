"""Opening a big profile in the real window: progress, Cancel, and how responsive the window stays.

    python benchmarks/bench_gui_open.py --path BIG_DIR/tpu_100M.xplane.pb

Issue 12: a 100M-event file (~3.5 GB, benchmarks/generate_xspace.py --events
100000000) opens in the GUI with progress and Cancel. The real MainWindow
(offscreen) opens the file through its loader thread, exactly as File > Open
does. Reported: time to the first progress update and to the loaded trace,
the number of progress updates and the longest gap between two, how long the
window's event loop was ever blocked while loading (a 20 ms timer measures
its own lateness: what a user dragging or clicking would feel), and the
process's peak memory. Then a second open is cancelled at about a third of
the way, and the time from Cancel to the window saying so is reported.
Screenshots of the window mid-load and after are written to --shots.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QElapsedTimer, QSettings, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from tpuscope.ui.app import application  # noqa: E402
from tpuscope.ui.main_window import MainWindow  # noqa: E402

TICK_MS = 20  # the responsiveness probe's period
CANCEL_AT = 0.3  # fraction of progress at which the second open is cancelled
SIZE = (1600, 1000)


class Probe:
    """Records progress updates and the event loop's worst lateness while a load runs."""

    def __init__(self, window: MainWindow):
        self.window = window
        self.clock = QElapsedTimer()
        self.progress: list[tuple[float, float]] = []  # (seconds since open, fraction)
        self.worst_stall_ms = 0.0
        self.last_tick = 0.0
        self.timer = QTimer()
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        window.progress.valueChanged.connect(self._on_progress)

    def start(self) -> None:
        self.progress.clear()
        self.worst_stall_ms = 0.0
        self.clock.start()
        self.last_tick = 0.0
        self.timer.start()

    def _tick(self) -> None:
        now = self.clock.nsecsElapsed() / 1e6
        self.worst_stall_ms = max(self.worst_stall_ms, now - self.last_tick - TICK_MS)
        self.last_tick = now

    def _on_progress(self, value: int) -> None:
        self.progress.append((self.clock.nsecsElapsed() / 1e9, value / 1000))

    def seconds(self) -> float:
        return self.clock.nsecsElapsed() / 1e9


def wait_until(app: QApplication, done, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.002)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=Path, required=True)
    parser.add_argument("--shots", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args(argv)
    os.environ["TPUSCOPE_NO_CACHE"] = "1"  # a cold open each time; the cache is not what is measured
    app = application()
    settings_dir = tempfile.TemporaryDirectory(prefix="tpuscope-bench-")
    window = MainWindow(QSettings(str(Path(settings_dir.name) / "s.ini"), QSettings.IniFormat))
    window.resize(*SIZE)
    window.show()
    app.processEvents()
    # The window makes its views just after it first paints (tpuscope.ui.main_window.MainWindow.views);
    # a user opens a file after that, so the probe measures the load alone, not the window's start.
    assert window.views
    app.processEvents()
    probe = Probe(window)
    loaded: list[float] = []
    window.traceLoaded.connect(lambda trace: loaded.append(probe.seconds()))
    shot_mid = args.shots / "tpuscope_open_progress.png"
    shot_done = args.shots / "tpuscope_open_loaded.png"

    probe.start()
    window.open_path(args.path)
    wait_until(app, lambda: any(f >= 0.5 for _, f in probe.progress), args.timeout)
    window.grab().save(str(shot_mid))
    wait_until(app, lambda: bool(loaded), args.timeout)
    probe.timer.stop()
    if not loaded:
        print(f"the load did not finish in {args.timeout:.0f} s")
        return 1
    window.show_view("timeline")
    app.processEvents()
    window.grab().save(str(shot_done))
    trace = window.trace
    times = [t for t, _ in probe.progress]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    print(f"== {args.path.name}: {args.path.stat().st_size / 1e9:.2f} GB, {trace.event_count:,} events")
    print(f"first progress update  {times[0]:8.2f} s after Open")
    print(f"loaded and shown       {loaded[0]:8.2f} s, {len(times)} progress updates, "
          f"longest gap {max(gaps):.2f} s")  # fmt: skip
    print(f"event loop worst stall {probe.worst_stall_ms:8.0f} ms while loading")
    print(f"process peak memory    {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:8.2f} GB")
    print(f"screenshots: {shot_mid}, {shot_done}")

    window.trace = None  # the second open replaces the first trace
    cancelled: list[float] = []
    window.status_label.setText("")
    cancel_clock = QElapsedTimer()
    probe.start()
    window.open_path(args.path)
    wait_until(app, lambda: any(f >= CANCEL_AT for _, f in probe.progress), args.timeout)
    cancel_clock.start()
    window.cancel_load()
    wait_until(app, lambda: not window.is_loading(), args.timeout)
    cancelled.append(cancel_clock.nsecsElapsed() / 1e9)
    probe.timer.stop()
    said = window.status_label.text()
    print(f"Cancel at {CANCEL_AT:.0%}: the loader stopped {cancelled[0]:.2f} s later; status bar: {said!r}")
    window.close()
    return 0 if said == "Loading cancelled." else 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    # Not sys.exit: the views' analyses of the first trace may still run in their threads, for
    # minutes at 100M events, and are not what this measures.
    os._exit(code)
