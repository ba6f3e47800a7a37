"""`tpuscope comms` of a pod against `tpuscope info` of the same run folder (issue 35: at most 1.5x).

    python benchmarks/bench_comms.py                              # 4 hosts of 200k events, 1 round
    python benchmarks/bench_comms.py --hosts 16 --events-per-host 1000000 --repeat 3   # the issue's pod

Each host file is the generator's TPU-shaped XSpace (benchmarks/generate_xspace.py, with all-reduce ops
among its categories), and the run folder holds one hard link per host (`bench_pods.make_run`).
`comms --json --per-host` goes through the host-by-host engine (`tpuscope.app.hosts`) as a pod of 16
hosts or more does without being asked; `info` decodes every host. Each is a whole `tpuscope` process
with the trace cache off (`TPUSCOPE_NO_CACHE=1`: the pod results cache too), the two alternate round
after round, and the medians of wall time, peak RSS and CPU seconds are printed with their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_pods import make_run, timed_cpu  # noqa: E402

TARGET_RATIO = 1.5  # issue 35: comms of a pod takes at most this many times info


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--events-per-host", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--workers", default=None, help="--workers for comms (default: one per core)")
    args = parser.parse_args()
    folder = ROOT / "benchmarks" / "data" / f"comms_{args.events_per_host}"
    run = make_run(folder, args.hosts, args.events_per_host)
    commands = {
        "info": ["info", str(run)],
        "comms --json": ["comms", str(run), "--json", "--per-host"]
        + (["--workers", args.workers] if args.workers else []),
    }
    times: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
    for _ in range(args.repeat):
        for name, command in commands.items():
            times[name].append(timed_cpu(command))
    print(f"run of {args.hosts} hosts x {args.events_per_host:,} events ({run}), {args.repeat} round(s):")
    medians = {n: [statistics.median(v[k] for v in rows) for k in range(3)] for n, rows in times.items()}
    info_wall, _, info_cpu = medians["info"]
    for name, (wall, rss, cpu) in medians.items():
        print(
            f"  {name:<14} wall {wall:7.2f} s {wall / info_wall:5.2f}x info   peak RSS {rss:8.1f} MB   "
            f"cpu {cpu:7.2f} s {cpu / info_cpu:5.2f}x info"
        )
    print(f"  target: comms at most {TARGET_RATIO}x info (wall)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
