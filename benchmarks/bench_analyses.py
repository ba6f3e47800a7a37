"""Analyses at decode speed: `overview` and `diagnose` against `info` on a real 1M-event JAX CPU profile.

    python benchmarks/bench_analyses.py                  # the 1M JAX CPU recording (recorded if missing)
    python benchmarks/bench_analyses.py --events 200000 --repeat 5
    python benchmarks/bench_analyses.py --pod 8          # and a run folder of 8 copies of that host file

`info` is the decode alone (read the file, build the columns); `overview --json` and
`diagnose --json` are the same decode and then every analysis. Each is a whole `tpuscope`
process, the three alternate round after round (so a busy neighbour slows them alike), and the
medians and each one's ratio to `info` of the same run are printed. The target (issue 32):
overview and diagnose at most 1.5x info. Both trace-cache modes are timed: `--cache` with the
trace cache warmed by a first untimed round (the decode is a cache read), `--no-cache` with
`TPUSCOPE_NO_CACHE=1` (the decode is the file's); the default is both.

`--pod N` times the same three commands on a run folder holding N hard links of the host file
(N hosts of the same recording, one file's disk), read as one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.record_jax_profile import DEFAULT_DIR, find_or_record  # noqa: E402

COMMANDS = {
    "info": ["info", "{path}"],
    "overview --json": ["overview", "{path}", "--json"],
    "diagnose --json": ["diagnose", "{path}", "--json"],
}
TARGET_RATIO = 1.5  # issue 32: an analysis command takes at most this many times `info`


def timed(args: list[str], use_cache: bool) -> float:
    """Wall seconds of one whole `tpuscope` process (its output is read and dropped)."""
    env = dict(os.environ)
    env.pop("TPUSCOPE_NO_CACHE", None)
    if not use_cache:
        env["TPUSCOPE_NO_CACHE"] = "1"
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "tpuscope", *args], capture_output=True, text=True, env=env, timeout=3600
    )
    seconds = time.perf_counter() - started
    if result.returncode not in (0, 1):  # 1: diagnose found something (no --fail-on: never), kept safe
        raise SystemExit(f"tpuscope {' '.join(args)} failed: {result.stderr.strip()}")
    return seconds


def alternate(path: Path, repeat: int, use_cache: bool) -> dict[str, float]:
    """The median wall seconds of each command, the commands alternating round after round."""
    argv = {name: [a.format(path=path) for a in args] for name, args in COMMANDS.items()}
    if use_cache:
        timed(argv["info"], True)  # writes the cache entry the timed rounds read
    runs: dict[str, list[float]] = {name: [] for name in argv}
    for _ in range(repeat):
        for name, args in argv.items():
            runs[name].append(timed(args, use_cache))
    return {name: statistics.median(seconds) for name, seconds in runs.items()}


def report(label: str, path: Path, repeat: int, modes: list[bool]) -> None:
    for use_cache in modes:
        medians = alternate(path, repeat, use_cache)
        mode = "cache on" if use_cache else "TPUSCOPE_NO_CACHE=1"
        print(f"{label}, {mode}, medians of {repeat}, alternating:")
        info = medians["info"]
        for name, seconds in medians.items():
            ratio = seconds / info
            verdict = "" if name == "info" else ("  ok" if ratio <= TARGET_RATIO else f"  > {TARGET_RATIO}x")
            print(f"  {name:<16} {seconds:7.2f} s  {ratio:5.2f}x info{verdict}")


def make_run(host_file: Path, hosts: int) -> Path:
    """A run folder of `hosts` hard links of one host file (one file's disk)."""
    run = DEFAULT_DIR / f"pod_{hosts}_of_{host_file.parent.name}" / "plugins" / "profile" / "run"
    run.mkdir(parents=True, exist_ok=True)
    for i in range(hosts):
        link = run / f"host{i:03d}.xplane.pb"
        if not link.exists():
            os.link(host_file, link)
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--cache", action="store_true", help="only with the trace cache on")
    mode.add_argument("--no-cache", action="store_true", help="only with TPUSCOPE_NO_CACHE=1")
    parser.add_argument("--pod", type=int, metavar="N", help="also a run folder of N copies of the host file")
    args = parser.parse_args()
    modes = [True] if args.cache else [False] if args.no_cache else [True, False]
    path = find_or_record(args.events)
    report(path.name, path, args.repeat, modes)
    if args.pod:
        report(f"run of {args.pod} x {path.name}", make_run(path, args.pod), args.repeat, modes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
