"""Pods host by host: 1 vs 2 Dask workers on a 16-host run, and the memory bound on a 64-host run.

Each host file is the generator's TPU-shaped XSpace (benchmarks/generate_xspace.py); the run
folder holds one hard link per host, so 64 hosts of 100 MB cost 100 MB of disk. Every figure is
a whole `tpuscope diagnose RUN --json` process (peak RSS over it and its worker processes), with
the one-trace load of the same run beside it where that fits in memory.

    python benchmarks/bench_pods.py --hosts 16 --events-per-host 1000000
    python benchmarks/bench_pods.py --hosts 64 --events-per-host 3000000 --skip-workers
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def make_run(folder: Path, hosts: int, events: int) -> Path:
    source = folder / "host.xplane.pb"
    if not source.exists():
        subprocess.run(
            [sys.executable, str(HERE / "generate_xspace.py"), "--events", str(events), "--out", str(source)],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    run = folder / "plugins" / "profile" / f"run_{hosts}"
    run.mkdir(parents=True, exist_ok=True)
    for i in range(hosts):
        link = run / f"host{i:03d}.xplane.pb"
        if not link.exists():
            os.link(source, link)
    return run


# Runs one command and prints the largest RSS among it and its descendants (KiB), on its own line.
_MEASURE = (
    "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
    "sys.stderr.write(r.stderr); print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def timed(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of a whole tpuscope process (its largest process, workers included)."""
    env = dict(os.environ, TPUSCOPE_NO_CACHE="1")
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, sys.executable, "-m", "tpuscope", *args],
        capture_output=True, text=True, env=env, timeout=3600,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    code, peak_kib = result.stdout.split()
    if int(code) not in (0, 1):
        raise SystemExit(f"tpuscope {' '.join(args)} failed: {result.stderr.strip()}")
    return seconds, int(peak_kib) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--events-per-host", type=int, default=1_000_000)
    parser.add_argument("--dir", default=None, help="where to keep the generated run (default: a temp dir)")
    parser.add_argument("--skip-workers", action="store_true", help="only the in-process, host-by-host run")
    parser.add_argument("--skip-whole", action="store_true", help="skip loading the run as one trace")
    args = parser.parse_args()
    folder = Path(args.dir or tempfile.mkdtemp(prefix="tpuscope_pods_"))
    folder.mkdir(parents=True, exist_ok=True)
    run = make_run(folder, args.hosts, args.events_per_host)
    host_mb = (run / "host000.xplane.pb").stat().st_size / 1e6
    print(f"{args.hosts} hosts x {args.events_per_host:,} events ({host_mb:.0f} MB per host file)")
    seconds, peak = timed(["diagnose", str(run), "--per-host", "--json"])
    print(
        f"host by host, in process:      {seconds:7.1f} s, peak RSS {peak:7.0f} MB "
        f"({peak / host_mb:.1f}x one host file)"
    )
    if not args.skip_workers:
        for workers in (1, 2):
            seconds_w, peak_w = timed(["diagnose", str(run), "--workers", str(workers), "--json"])
            print(
                f"host by host, {workers} Dask worker(s): {seconds_w:7.1f} s, "
                f"largest process {peak_w:7.0f} MB"
            )
    if not args.skip_whole:
        seconds_all, peak_all = timed(
            ["diagnose", str(run), "--json"] if args.hosts < 16 else ["info", str(run)]
        )
        what = "diagnose" if args.hosts < 16 else "info (load only)"
        print(f"one trace of every host, {what}: {seconds_all:7.1f} s, peak RSS {peak_all:7.0f} MB")


if __name__ == "__main__":
    main()
