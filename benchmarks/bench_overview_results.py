"""Each result of `tpuscope overview PATH --json`: its thread CPU time and page faults, in whole processes.

    python benchmarks/bench_overview_results.py               # the 1M JAX CPU recording (recorded if missing)
    python benchmarks/bench_overview_results.py PATH --repeat 9
    python benchmarks/bench_overview_results.py --before SRC  # another tree too (SRC holds its tpuscope/)

Each round is a fresh process that runs the command as the `tpuscope` script does (the trace cache
off, stdout captured) and records, for every result it computes (`ResultStore.get`), the CPU time
and the minor page faults of the thread that computed it, each including the results it asked for
first: in a fresh process most of a result's cost is faulting in the fresh pages of its arrays
(~0.45 ms per MB on our 2-core machine), and what one result no longer allocates the next may
(the figures move from result to result; the process's total is what counts). Thread times, not
wall times: the pod table runs on a second thread (`ResultStore.start`), and the two share the
interpreter lock. `main()`'s wall time (the load, the analyses and the JSON) is in the table too.
Modules are byte-compiled once into a temporary folder for every process, as an installed package
keeps them.

`--before SRC` runs another tree in the same rounds, process after process alternating with this
one (SRC: `git archive REF tpuscope | tar -x -C SRC`, with the built `.so` files copied in), for
before/after figures that one busy minute cannot skew.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.record_jax_profile import find_or_record  # noqa: E402

# Run in the measured process: the command as `tpuscope` runs it, each result's thread CPU and faults.
CHILD = r"""
import contextlib, io, json, resource, sys, threading, time
import tpuscope.analysis.results as results
from tpuscope import gc_policy
gc_policy.one_command_process()

def faults():
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt

found, original = {}, results.ResultStore.get
def get(self, result):
    if result.name in self._values:
        return self._values[result.name]
    cpu, paged = time.thread_time(), faults()
    try:
        return original(self, result)
    finally:
        thread = "main" if threading.current_thread() is threading.main_thread() else "ahead"
        found[f"{result.name} ({thread})"] = [1e3 * (time.thread_time() - cpu), faults() - paged]
results.ResultStore.get = get
from tpuscope.cli import main
started = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    main(["overview", sys.argv[1], "--json"])
found["main(): load and all, wall"] = [1e3 * (time.perf_counter() - started), 0]
print(json.dumps(found))
"""


def _run(tree: Path | None, path: str, bytecode: str) -> dict[str, list[float]]:
    """One process of `tree` (None: this checkout's tpuscope), modules byte-compiled into `bytecode`
    as an installed package keeps them (both trees alike, whatever this environment says)."""
    env = dict(os.environ, TPUSCOPE_NO_CACHE="1", PYTHONPYCACHEPREFIX=bytecode)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, path], env=env, capture_output=True, text=True, check=True, cwd="/"
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", nargs="?", help="an XPlane file (default: the 1M-event JAX CPU recording)")
    parser.add_argument("--repeat", type=int, default=7, help="processes per tree (default 7)")
    parser.add_argument("--before", type=Path, help="another tree to time alternately (holds its tpuscope/)")
    args = parser.parse_args()
    path = args.path or str(find_or_record(1_000_000))
    trees: dict[str, Path | None] = {"this tree": None}
    if args.before is not None:
        trees = {"before": args.before.resolve(), **trees}
    rounds: dict[str, list[dict[str, list[float]]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as bytecode:
        for tree in trees.values():  # an untimed first process writes the tree's bytecode
            _run(tree, path, bytecode)
        for _ in range(args.repeat):
            for name, tree in trees.items():
                rounds[name].append(_run(tree, path, bytecode))
    names = sorted({key for runs in rounds.values() for run in runs for key in run})
    print(f"{Path(path).name}, TPUSCOPE_NO_CACHE=1, medians of {args.repeat} processes, alternating")
    print(f"{'result (thread)':44s}" + "".join(f"{name:>24s}" for name in trees))
    for key in names:
        cells = []
        for name in trees:
            values = [run[key] for run in rounds[name] if key in run]
            cpu = statistics.median(v[0] for v in values) if values else float("nan")
            paged = statistics.median(v[1] for v in values) if values else float("nan")
            cells.append(f"{cpu:9.1f} ms {paged:7.0f} pf")
        print(f"{key:44s}" + "".join(f"{cell:>24s}" for cell in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
