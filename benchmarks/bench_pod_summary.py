"""The pod result (`POD`: one host's `summarize_host` and the pod table) timed in-process, per host file.

    python benchmarks/bench_pod_summary.py                  # the 1M JAX CPU recording (recorded if missing)
    python benchmarks/bench_pod_summary.py PATH [PATH ...]  # other host files (bench_comms' 1M TPU hosts)
    python benchmarks/bench_pod_summary.py --before SRC     # another tree too (SRC holds its tpuscope/)

`POD` runs once per host in a pod read host by host (`tpuscope.analysis.pod_run`), so its cost is
paid 16 times by `overview`, `comms` and `diagnose` of a 16-host run (issues 32 and 35). Each round
makes a fresh analysis of the loaded file, computes what POD reads that other results own (devices,
steps, the host-name index), then times POD alone in thread CPU time (less noisy than wall time on
a shared machine), the garbage collector held off. The first round of a process pays the one-time
costs (regex compiles, numpy's lazy imports) and is printed apart from the median of the others.

`--before SRC` times another tree in the same run, process after process alternating with this one
(SRC: `git archive REF tpuscope | tar -x -C SRC`, with the built `.so` files copied in), for
before/after figures that one busy minute cannot skew.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(path: str, rounds: int) -> list[float]:
    """POD's thread CPU ms in each of `rounds` fresh analyses of the file at `path` (with the tpuscope
    this process imports)."""
    from tpuscope.analysis.pod.results import POD
    from tpuscope.analysis.session import TraceAnalysis
    from tpuscope.app.opener import open_trace

    trace = open_trace(path, use_cache=False)
    times = []
    for _ in range(rounds):
        trace._name_classes = None  # the names' classes are POD's to compute first, as in a command
        analysis = TraceAnalysis(trace)
        _ = (analysis.devices, analysis.steps, analysis.context, analysis.host_names)  # POD's inputs first
        gc.collect()
        gc.disable()
        started = time.thread_time()
        analysis.get(POD)
        times.append((time.thread_time() - started) * 1e3)
        gc.enable()
    return times


def _run(tree: Path, path: str, rounds: int) -> list[float]:
    """`measure` in a fresh process importing tpuscope from `tree`."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    # This file's folder after the tree's: tpuscope is the tree's, `benchmarks` this checkout's.
    script = f"import json, sys; sys.path.append({str(ROOT)!r}); "
    script += "from benchmarks.bench_pod_summary import measure; "
    script += f"print(json.dumps(measure({path!r}, {rounds})))"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd="/")
    if done.returncode != 0:
        raise SystemExit(f"POD of {path} with the tree {tree} failed: {done.stderr.strip()}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="host files (default: the 1M JAX CPU recording)")
    parser.add_argument("--processes", type=int, default=4, help="processes per tree (default 4)")
    parser.add_argument("--rounds", type=int, default=6, help="analyses per process (default 6)")
    parser.add_argument("--before", type=Path, metavar="SRC", help="also time the tree SRC, alternating")
    args = parser.parse_args()
    if args.paths:
        paths = [str(Path(p).resolve()) for p in args.paths]  # the timed processes run elsewhere
    else:
        sys.path.insert(0, str(ROOT))
        from benchmarks.record_jax_profile import find_or_record

        paths = [str(find_or_record(1_000_000))]
    trees = ([args.before] if args.before else []) + [ROOT]
    for path in paths:
        first: dict[Path, list[float]] = {tree: [] for tree in trees}
        later: dict[Path, list[float]] = {tree: [] for tree in trees}
        for _ in range(args.processes):
            for tree in trees:
                times = _run(tree, path, args.rounds)
                first[tree].append(times[0])
                later[tree] += times[1:]
        print(f"POD of {path} ({args.processes} processes x {args.rounds} analyses, thread CPU ms):")
        for tree in trees:
            name = "this tree" if tree == ROOT else str(tree)
            print(
                f"  {name:<28} first in a process {statistics.median(first[tree]):7.1f}   "
                f"later median {statistics.median(later[tree]):7.1f}   min {min(later[tree]):7.1f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
