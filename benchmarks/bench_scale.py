"""Loader scaling to 100M events: tpuscope at 10M and 60M (and more) events vs xprof-rs, in one run.

    python benchmarks/bench_scale.py                 # 10M and 60M, 3 trials
    python benchmarks/bench_scale.py --events 10000000 60000000 100000000 --repeat 1
    python benchmarks/bench_scale.py --no-peer                                  # tpuscope only

Issue 12's targets: the 60M load takes at most 6x the 10M load (linear), and is
at least 4x faster than the xprof-rs server's cold `trace_viewer@` on the same
file; peak memory stays near file size plus model size. The files (2.1 GB at
60M, 3.5 GB at 100M) are generated into --dir (default: the system temp
folder, never the repository) when missing and kept for the next run; the
60M peer needs ~10 GB of RAM, so hold the machine's heavy-job lock around it.

Each trial loads every size once with tpuscope (a fresh subprocess each,
through bench_load's worker: cold, no cache) and then runs the peer on the
same files, so a change in the shared machine's load hits both. Medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_load  # noqa: E402
import generate_xspace  # noqa: E402

# Issue 12 ("Linear to 100M events").
MAX_SCALE_RATIO = 6.0  # the 60M load over the 10M load, for 6x the events
MIN_PEER_RATIO = 4.0  # xprof-rs's cold load over ours, at 60M


def _label(events: int) -> str:
    return f"{events // 1_000_000}M" if events % 1_000_000 == 0 else str(events)


def _file_for(folder: Path, events: int) -> Path:
    path = folder / f"tpu_{_label(events)}.xplane.pb"
    if not path.exists():
        print(f"generating {path} ...", flush=True)
        generate_xspace.generate(events, path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[10_000_000, 60_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-peer", action="store_true", help="skip xprof-rs")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "tpuscope-bench")
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    files = {events: _file_for(args.dir, events) for events in args.events}
    for file in files.values():
        with open(file, "rb") as handle:  # into the page cache, the same for every contender
            while handle.read(1 << 26):
                pass
    ours: dict[int, list[dict]] = {events: [] for events in files}
    peer: dict[int, list[dict]] = {events: [] for events in files}
    with_peer = not args.no_peer and bench_load.XPROF_RS is not None
    for trial in range(args.repeat):
        for events, file in files.items():
            ours[events].append(bench_load._worker("cold", file))
            run = ours[events][-1]
            print(f"  trial {trial + 1}: tpuscope {_label(events)} {run['load_s']:.2f} s, "
                  f"peak {run['peak_delta'] / 1e9:.2f} GB", flush=True)  # fmt: skip
        if with_peer:
            for events, file in files.items():
                result = bench_load.bench_xprof_rs_server(file, 1)
                if result is not None:
                    peer[events].append(result)
                    print(
                        f"  trial {trial + 1}: xprof-rs {_label(events)} {result['load_s']:.2f} s", flush=True
                    )
    print(f"\n== cold loads, median of {args.repeat} trials (TPU-shaped files, page cache warm for the file)")
    summary = {}
    for events, file in files.items():
        size = file.stat().st_size
        runs = ours[events]
        row = {
            "load_s": statistics.median(r["load_s"] for r in runs),
            "cpu_s": statistics.median(r["cpu_s"] for r in runs),
            "peak": statistics.median(r["peak_delta"] for r in runs),
            "worst_peak": max(r["peak_delta"] for r in runs),
            "model": runs[0]["model_bytes"],
            "progress_calls": runs[0]["progress_calls"],
        }
        summary[events] = row
        line = (
            f"{_label(events):>5} events, {size / 1e9:5.2f} GB: tpuscope {row['load_s']:6.2f} s "
            f"(CPU {row['cpu_s']:.2f} s), peak {row['peak'] / 1e9:.2f} GB = {row['peak'] / size:.2f}x file "
            f"(worst trial {row['worst_peak'] / 1e9:.2f} GB; "
            f"file + model = {(size + row['model']) / 1e9:.2f} GB), "
            f"model {row['model'] / runs[0]['events']:.1f} B/event, {row['progress_calls']} progress calls"
        )
        if peer[events]:
            theirs = statistics.median(r["load_s"] for r in peer[events])
            their_peak = statistics.median(r["peak"] for r in peer[events])
            row["peer_s"] = theirs
            line += (
                f"\n{'':>14}xprof-rs server cold trace_viewer@ {theirs:6.2f} s, "
                f"peak {their_peak / 1e9:.2f} GB -> tpuscope {theirs / row['load_s']:.2f}x as fast"
            )
        print(line)
    ok = True
    sizes = sorted(summary)
    if 10_000_000 in summary and 60_000_000 in summary:
        ratio = summary[60_000_000]["load_s"] / summary[10_000_000]["load_s"]
        cpu_ratio = summary[60_000_000]["cpu_s"] / summary[10_000_000]["cpu_s"]
        met = ratio <= MAX_SCALE_RATIO
        ok &= met
        print(
            f"  [{'ok' if met else 'MISSED'}] 60M load / 10M load = {ratio:.2f}x for 6x the events "
            f"(target <= {MAX_SCALE_RATIO:g}x; CPU {cpu_ratio:.2f}x)"
        )
        if "peer_s" in summary[60_000_000]:
            peer_ratio = summary[60_000_000]["peer_s"] / summary[60_000_000]["load_s"]
            met = peer_ratio >= MIN_PEER_RATIO
            ok &= met
            print(f"  [{'ok' if met else 'MISSED'}] xprof-rs / tpuscope at 60M = {peer_ratio:.2f}x "
                  f"(target >= {MIN_PEER_RATIO:g}x)")  # fmt: skip
    elif len(sizes) > 1:
        low, high = sizes[0], sizes[-1]
        scale = summary[high]["load_s"] / summary[low]["load_s"]
        print(f"  {_label(high)} / {_label(low)} load = {scale:.2f}x for {high / low:.1f}x the events")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
