"""Compare speed: `tpuscope compare` on two 1M-event profiles, whole process, beside two plain loads.

    python benchmarks/bench_compare.py                  # two 1M-event TPU-shaped files (generated if missing)
    python benchmarks/bench_compare.py --events 10000000

Target: the comparison adds little to loading the two profiles. Timed whole-process (interpreter
start, imports, both loads without the cache, both analyses, the comparison, the JSON), medians of
`--repeat` runs taken turn about with the peer: a process that only loads the same two files
(`open_trace` each, no cache). Then the in-process split, so the added time has names.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.generate_xspace import generate  # noqa: E402

LOADS_ONLY = (
    "import sys; from tpuscope.app.opener import open_trace; "
    "[open_trace(p, use_cache=False) for p in sys.argv[1:]]"
)


def pair_paths(events: int) -> tuple[Path, Path]:
    """Two files of the same shape from different seeds (different durations, same op names)."""
    found = []
    for seed in (0, 1):
        path = ROOT / "benchmarks" / "data" / f"compare_{events}" / f"seed{seed}.xplane.pb"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            generate(events, path, seed=seed)
        found.append(path)
    return found[0], found[1]


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - started


def in_process_split(base: Path, new: Path) -> None:
    from tpuscope.analysis.compare.runs import analyze_run, compare_runs
    from tpuscope.analysis.session import TraceAnalysis
    from tpuscope.app.opener import open_trace

    marks = [("start", time.perf_counter())]
    traces = [open_trace(p, use_cache=False) for p in (base, new)]
    marks.append(("load both", time.perf_counter()))
    runs = [analyze_run(TraceAnalysis(t)) for t in traces]
    marks.append(("analyze both (overview, diagnose, memory)", time.perf_counter()))
    comparison = compare_runs(*runs)
    marks.append(("compare (statistics, op matching, findings)", time.perf_counter()))
    comparison.to_json(top_ops=None)
    marks.append(("JSON", time.perf_counter()))
    print("in-process split:")
    for (_, before), (name, after) in zip(marks, marks[1:], strict=False):
        print(f"  {name:<46} {(after - before) * 1e3:8.0f} ms")
    matched = f"{len(comparison.ops.rows)} matched op rows {comparison.ops.match_counts()}"
    print(f"  verdict: {comparison.verdict}; {matched}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    base, new = pair_paths(args.events)
    compare_cmd = [sys.executable, "-m", "tpuscope", "compare", str(base), str(new), "--json", "--no-cache"]
    loads_cmd = [sys.executable, "-c", LOADS_ONLY, str(base), str(new)]
    ours, peer = [], []
    for _ in range(args.repeat):
        ours.append(timed(compare_cmd))
        peer.append(timed(loads_cmd))
    compare_s, loads_s = statistics.median(ours), statistics.median(peer)
    print(f"{base.parent.name}: two {args.events:,}-event files, whole process, medians of {args.repeat}")
    print(f"  tpuscope compare --json        {compare_s * 1e3:8.0f} ms")
    print(f"  two plain loads (peer)         {loads_s * 1e3:8.0f} ms")
    print(f"  ratio compare / loads          {compare_s / loads_s:8.2f}x")
    in_process_split(base, new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
