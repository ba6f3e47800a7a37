"""SQL over a trace: `tpuscope sql FILE "... GROUP BY name"` against `tpuscope info FILE`, as whole processes.

    python benchmarks/bench_sql.py                        # benchmarks/data/tpu_10M (generate it first)
    python benchmarks/bench_sql.py --file F.xplane.pb --repeat 7
    python benchmarks/bench_sql.py --kineto T.json.gz     # also the peer on a Kineto trace
    python benchmarks/bench_sql.py --before SRC           # also the sql command of an older tree
                                                          # (SRC holds its tpuscope/: git archive)

What a user waits for: launch to answer. Both commands read the same file from our columnar cache
(filled once first, so neither pays the first parse) and the page cache; trials alternate between
them so the shared machine's load hits both alike; medians are printed with the ratio. Also timed:
`python -c "import duckdb, pyarrow"` (the engine's own start, which `info` never pays).
Target (issue 21): the query at most 1.5x `info`.

The peer (same run, one Kineto file): the same question (count and total duration per name) and
"the 10 longest kernels" answered by our `sql` command and by pandas over HTA's per-rank DataFrame
(`TraceAnalysis(trace_files=...).t.get_trace(0)`); without HTA installed, by pandas over a DataFrame
built from the trace's `traceEvents` (what HTA's parser builds, minus its clean-up); without pandas,
the peer is skipped and says so.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_FILE = HERE / "data" / "tpu_10M" / "tpu_10M.xplane.pb"
GROUP_BY_NAME = "SELECT name, count(*), sum(dur_ps) FROM events GROUP BY name"
LONGEST = "SELECT name, dur_ps FROM events ORDER BY dur_ps DESC LIMIT 10"


def _tpuscope() -> list[str]:
    return [sys.executable, "-m", "tpuscope"]


def _timed(argv: list[str], env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def _tpuscope_from(source: Path) -> list[str]:
    """`python -m tpuscope` of the package under `source` instead of the installed (editable) one."""
    code = (
        "import sys; sys.meta_path = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]; "
        f"sys.path.insert(0, {str(source)!r}); sys.argv[0] = 'tpuscope'; "
        "from tpuscope.cli import console_main; raise SystemExit(console_main())"
    )
    return [sys.executable, "-c", code]


def whole_process(path: Path, repeat: int, before: Path | None = None) -> None:
    env = dict(os.environ, TPUSCOPE_CACHE_DIR=tempfile.mkdtemp(prefix="tpuscope-bench-sql-"),
               PYTHONDONTWRITEBYTECODE="")  # fmt: skip
    subprocess.run([*_tpuscope(), "info", str(path)], env=env, check=True, stdout=subprocess.DEVNULL)  # fill
    contenders = {
        "info": [*_tpuscope(), "info", str(path)],
        "sql GROUP BY name": [*_tpuscope(), "sql", str(path), GROUP_BY_NAME],
        "import duckdb, pyarrow": [sys.executable, "-c", "import duckdb, pyarrow"],
    }
    if before is not None:
        contenders["sql, before"] = [*_tpuscope_from(before), "sql", str(path), GROUP_BY_NAME]
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(repeat):
        for name, argv in contenders.items():
            times[name].append(_timed(argv, env))
    info = statistics.median(times["info"])
    print(f"{path.name}: whole process, warm cache, median of {repeat}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<24} {median * 1000:8.0f} ms  ({median / info:.2f}x info)")


def peer(kineto: Path) -> None:
    print(f"\n{kineto.name}: the same questions, ours against pandas")
    env = dict(os.environ, TPUSCOPE_CACHE_DIR=tempfile.mkdtemp(prefix="tpuscope-bench-sql-"))
    for label, query in (("count and total per name", GROUP_BY_NAME), ("10 longest events", LONGEST)):
        subprocess.run(
            [*_tpuscope(), "sql", str(kineto), query], env=env, check=True, stdout=subprocess.DEVNULL
        )
        ours = statistics.median(_timed([*_tpuscope(), "sql", str(kineto), query], env) for _ in range(3))
        print(f"  tpuscope sql, {label}: {ours * 1000:.0f} ms (whole process, warm cache)")
    try:
        import pandas as pd
    except ImportError:
        print("  peer skipped: neither HTA nor pandas is installed (pip install 'tpuscope[bench]').")
        return
    started = time.perf_counter()
    try:
        from hta.trace_analysis import TraceAnalysis

        frame = TraceAnalysis(trace_files={0: str(kineto)}, trace_dir=str(kineto.parent)).t.get_trace(0)
        which = "pandas over HTA's DataFrame (TraceAnalysis.t.get_trace)"
    except ImportError:
        opener = gzip.open if kineto.suffix == ".gz" else open
        with opener(kineto, "rt") as f:
            events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
        frame = pd.DataFrame(
            {"name": [e.get("name", "") for e in events], "dur": [e.get("dur", 0) for e in events]}
        )
        which = "pandas over a DataFrame of the trace's X events (HTA is not installed)"
    load = time.perf_counter() - started
    started = time.perf_counter()
    frame.groupby("name")["dur"].agg(["count", "sum"])
    group = time.perf_counter() - started
    started = time.perf_counter()
    frame.nlargest(10, "dur")
    longest = time.perf_counter() - started
    print(f"  {which}: load {load * 1000:.0f} ms, group by name {group * 1000:.1f} ms, "
          f"10 longest {longest * 1000:.1f} ms")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--kineto", type=Path, help="a Kineto trace for the pandas peer")
    parser.add_argument("--before", type=Path, help="a folder holding an older tpuscope/ to time too")
    args = parser.parse_args()
    whole_process(args.file, args.repeat, args.before)
    if args.kineto:
        peer(args.kineto)


if __name__ == "__main__":
    main()
