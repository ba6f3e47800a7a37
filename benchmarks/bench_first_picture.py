"""Time to the first useful picture: whole process, from launch to the Overview painted (issue 12).

    python benchmarks/bench_first_picture.py [--file F] [--before REF] [--repeat 5]

Each trial starts a fresh Python process that opens the desktop window offscreen, opens the file
through the window's own loader (its worker thread, as File > Open does) and reports, on one clock
shared by all processes (CLOCK_MONOTONIC), when:

- `window`: the empty window (welcome page) was first painted;
- `usable`: the window first painted the loaded trace (tabs, timeline and Overview can be used);
- `figures`: the Overview was painted with its numbers, step chart and op table (its findings may
  still be on their way: the rules take longest);
- `overview`: the Overview was painted with every number, chart and finding filled in.

With `--timeline [FILE]` (default the 10M-event TPU-shaped file), also the whole process of
`tpuscope screenshot FILE --view timeline` against `tpuscope info FILE` (its load: read, columns
built, a summary printed), both with an empty cache, for each contender (issue 23: the timeline in
at most 2.5x the load).

The peer is this same checkout at an earlier commit (`--before`, default the commit before the
shared analyses landed), run alternately with the current checkout on the same file in the same
run, so the machine's load hits both alike. Each trial gets an empty cache folder (a cold open: the
file is in the page cache, our columnar cache is not); `--warm` re-opens with the cache filled.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILE = ROOT / "benchmarks" / "data" / "tpu_1M" / "tpu_1M.xplane.pb"
# The last commit before the shared analyses (tpuscope.analysis.session) landed.
DEFAULT_BEFORE = "22e7242"
BIG_FILE = ROOT / "benchmarks" / "data" / "tpu_10M" / "tpu_10M.xplane.pb"
MILESTONES = ("window", "usable", "figures", "overview")
TRIAL_TIMEOUT_S = 300

# Runs in the child: the real window, the real loader, paint events watched application-wide.
CHILD = r"""
import sys, time, tempfile
from pathlib import Path
checkout, path = sys.argv[1], sys.argv[2]
sys.path.insert(0, checkout)
import os
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from PySide6.QtCore import QEvent, QObject, QSettings, QTimer
from tpuscope.ui.app import application
from tpuscope.ui.main_window import MainWindow

stamps = {}
app = application()
settings = QSettings(str(Path(tempfile.mkdtemp()) / "s.ini"), QSettings.IniFormat)
window = MainWindow(settings)
# The Overview is looked up once the trace is loaded: asking for the views sooner would make them
# before the first paint, which the window itself puts off until after it.
state = {"loaded": False, "ready": False, "overview": None}

class Watch(QObject):
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint:
            now = time.monotonic()
            stamps.setdefault("window", now)
            overview = state["overview"]
            inside = overview is not None and obj.isWidgetType()
            inside = inside and (obj is overview or overview.isAncestorOf(obj))
            if state["loaded"] and inside:
                stamps.setdefault("usable", now)
                if getattr(overview, "overview", None) is not None:
                    stamps.setdefault("figures", now)
            if state["ready"] and inside and "overview" not in stamps:
                stamps["overview"] = now
                QTimer.singleShot(0, app.quit)
        return False

watch = Watch()
app.installEventFilter(watch)

def ready(_overview=None):
    state["ready"] = True
    state["overview"].update()

def loaded(_trace):
    overview = state["overview"] = window.views["overview"]
    state["loaded"] = True
    overview.overviewReady.connect(ready)
    if getattr(overview.overview, "report", None) is not None:  # already shown with its findings
        ready()
    overview.update()

window.traceLoaded.connect(loaded)
window.loadFailed.connect(lambda message: (print(message, file=sys.stderr), app.exit(2)))
window.resize(1600, 1000)
window.show()
QTimer.singleShot(0, lambda: window.open_path(path))
code = app.exec()
window.wait_for_background_work()
print("STAMPS " + " ".join(f"{k}={v:.6f}" for k, v in stamps.items()))
sys.exit(code)
"""


def run_trial(checkout: Path, path: Path, cache_dir: str) -> dict[str, float]:
    env = dict(os.environ, XDG_CACHE_HOME=cache_dir, QT_QPA_PLATFORM="offscreen")
    env.pop("PYTHONPATH", None)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(checkout), str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=TRIAL_TIMEOUT_S,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("STAMPS ")), None)
    if done.returncode != 0 or line is None:
        raise SystemExit(f"trial in {checkout} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    stamps = dict(item.split("=") for item in line.split()[1:])
    return {k: float(v) - started for k, v in stamps.items()}


def run_command(checkout: Path, argv: list[str], cache_dir: str) -> float:
    """Seconds for the whole `python -m tpuscope ARGV` process of `checkout` (run from its folder)."""
    env = dict(os.environ, XDG_CACHE_HOME=cache_dir, QT_QPA_PLATFORM="offscreen")
    env.pop("PYTHONPATH", None)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tpuscope", *argv],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=TRIAL_TIMEOUT_S,
    )
    if done.returncode != 0:
        raise SystemExit(f"tpuscope {' '.join(argv)} in {checkout} failed:\n{done.stderr[-2000:]}")
    return time.monotonic() - started


def timeline_trials(contenders: dict[str, Path], path: Path, repeat: int, scratch: str) -> list[str]:
    """`screenshot --view timeline` against `info` of the same file, per contender, alternated: the
    lines of its table."""
    times: dict[str, dict[str, list[float]]] = {name: {"info": [], "timeline": []} for name in contenders}
    shot = str(Path(scratch) / "timeline.png")
    for k in range(repeat):
        for name, checkout in contenders.items():
            for kind, argv in (
                ("info", ["info", str(path)]),
                ("timeline", ["screenshot", str(path), shot, "--view", "timeline"]),
            ):
                times[name][kind].append(run_command(checkout, argv, tempfile.mkdtemp(dir=scratch)))
        print(f"timeline trial {k + 1}/{repeat} done", file=sys.stderr)
    lines = [
        f"{path.name}: whole process, seconds (median; min-max), empty cache:",
        f"{'':<22}{'info (load)':>22}{'screenshot timeline':>22}{'timeline / load':>18}",
    ]
    for name, runs in times.items():
        cells = [f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})" for v in runs.values()]
        ratio = statistics.median(runs["timeline"]) / statistics.median(runs["info"])
        lines.append(f"{name:<22}" + "".join(f"{c:>22}" for c in cells) + f"{ratio:>17.2f}x")
    return lines


def checkout_at(ref: str, into: Path) -> Path:
    """The repository's files at `ref` (a plain copy, with the C extension built in place)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=into,
        check=True,
        capture_output=True,
    )
    return into


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--before", default=DEFAULT_BEFORE, help="git ref of the peer (default %(default)s)")
    parser.add_argument(
        "--now",
        metavar="REF",
        help="measure this git ref instead of the working tree (a snapshot others' edits cannot change)",
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warm", action="store_true", help="re-open with the columnar cache filled")
    parser.add_argument("--json", type=Path, help="also write the medians here")
    parser.add_argument(
        "--timeline",
        type=Path,
        nargs="?",
        const=BIG_FILE,
        help="also time screenshot --view timeline against info on this file (default %(const)s)",
    )
    args = parser.parse_args()
    if args.timeline is not None and not args.timeline.exists():
        raise SystemExit(
            f"{args.timeline} does not exist (benchmarks/generate_xspace.py --events 10000000 writes it)."
        )
    if not args.file.exists():
        if args.file != DEFAULT_FILE:
            raise SystemExit(f"{args.file} does not exist.")
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "generate_xspace.py")], check=True)
    with tempfile.TemporaryDirectory(prefix="tpuscope-first-picture-") as scratch:
        before = checkout_at(args.before, Path(tempfile.mkdtemp(dir=scratch)))
        now = checkout_at(args.now, Path(tempfile.mkdtemp(dir=scratch))) if args.now else ROOT
        contenders = {f"before ({args.before})": before, "now": now}
        trials: dict[str, list[dict[str, float]]] = {name: [] for name in contenders}
        for k in range(args.repeat):
            for name, checkout in contenders.items():  # alternate, so both see the same machine load
                cache = tempfile.mkdtemp(dir=scratch)
                if args.warm:
                    run_trial(checkout, args.file, cache)
                trials[name].append(run_trial(checkout, args.file, cache))
            print(f"trial {k + 1}/{args.repeat} done", file=sys.stderr)
        timeline_table = (
            timeline_trials(contenders, args.timeline, args.repeat, scratch) if args.timeline else []
        )
    medians = {
        name: {m: statistics.median(t[m] for t in runs) for m in MILESTONES} for name, runs in trials.items()
    }
    size_mb = args.file.stat().st_size / 1e6
    print(
        f"{args.file.name} ({size_mb:.1f} MB), {'warm' if args.warm else 'cold'} open, {args.repeat} trials"
    )
    print("whole process, seconds from launch (median; min-max):")
    print(f"{'':<22}" + "".join(f"{m:>22}" for m in MILESTONES))
    for name, runs in trials.items():
        cells = []
        for m in MILESTONES:
            values = [t[m] for t in runs]
            cells.append(f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})")
        print(f"{name:<22}" + "".join(f"{c:>22}" for c in cells))
    now, peer = medians["now"], medians[f"before ({args.before})"]
    print("before / now:        " + "".join(f"{peer[m] / now[m]:>21.2f}x" for m in MILESTONES))
    for line in timeline_table:
        print(line)
    if args.json:
        args.json.write_text(json.dumps(medians, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
