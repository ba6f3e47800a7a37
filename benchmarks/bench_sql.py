"""SQL over a trace: `tpuscope sql FILE "... GROUP BY name"` against `tpuscope info FILE`, as whole processes.

    python benchmarks/bench_sql.py                        # benchmarks/data/tpu_10M (generate it first)
    python benchmarks/bench_sql.py --file F.xplane.pb --repeat 7
    python benchmarks/bench_sql.py --kineto T.json.gz     # also the peer on a Kineto trace
    python benchmarks/bench_sql.py --before SRC           # also the sql command of an older tree
                                                          # (SRC holds its tpuscope/: git archive)
    python benchmarks/bench_sql.py --phases               # where the sql command's time goes

What a user waits for: launch to answer. Both commands read the same file from our columnar cache
(filled once first, so neither pays the first parse) and the page cache; trials alternate between
them so the shared machine's load hits both alike; medians are printed with the ratio. Also timed:
`python -c "import duckdb, pyarrow"` (the engine's own start, which `info` never pays).
Target (issue 21): the query at most 1.5x `info`.

The peer (same run, one Kineto file): the same questions (count and total duration per name; the 10
longest events) answered by our `sql` command and by pandas over HTA's per-rank DataFrame
(`TraceAnalysis(trace_files=...).t.get_trace(0)`, names through its symbol table), each a whole
process; the peer runs in `--peer-python` (an interpreter with `tpuscope[bench]`'s HolisticTraceAnalysis,
which brings pandas); without them the peer is skipped and says so.

    python benchmarks/bench_sql.py --kineto TRACE.json.gz \
        --peer-python VENV/bin/python
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_FILE = HERE / "data" / "tpu_10M" / "tpu_10M.xplane.pb"
GROUP_BY_NAME = "SELECT name, count(*), sum(dur_ps) FROM events GROUP BY name"
LONGEST = "SELECT name, dur_ps FROM events ORDER BY dur_ps DESC LIMIT 10"


def _tpuscope() -> list[str]:
    return [sys.executable, "-m", "tpuscope"]


def _timed(argv: list[str], env: dict) -> float:
    return _timed_cpu(argv, env)[0]


def _timed_cpu(argv: list[str], env: dict) -> tuple[float, float]:
    """(wall, CPU) seconds of one run; CPU (user + system of the process and its threads) moves less
    than wall time when other work shares the machine."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, argv)
    return wall, usage.ru_utime + usage.ru_stime


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
    cpu: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(repeat):
        for name, argv in contenders.items():
            wall, used = _timed_cpu(argv, env)
            times[name].append(wall)
            cpu[name].append(used)
    info, info_cpu = statistics.median(times["info"]), statistics.median(cpu["info"])
    print(f"{path.name}: whole process, warm cache, median of {repeat} (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")  # fmt: skip
    for name, values in times.items():
        median, used = statistics.median(values), statistics.median(cpu[name])
        print(f"  {name:<24} {median * 1000:8.0f} ms wall ({median / info:.2f}x info), "
              f"{used * 1000:6.0f} ms CPU ({used / info_cpu:.2f}x info)")  # fmt: skip


PHASES = ("import numpy", "import tpuscope, load (cache)", "import duckdb", "import pyarrow, tpuscope.query",
          "open DuckDB (connect, lock)", "build events (name, dur_ps)", "GROUP BY name, fetch")  # fmt: skip


def phases(path: Path, repeat: int) -> None:
    """The sql command's steps timed in fresh processes (`--phase-worker`, in the command's order),
    medians of `repeat`, beside `info` as a whole process in the same run: what each step costs in
    units of `info`, so the floor of any query through DuckDB is seen."""
    env = dict(os.environ, TPUSCOPE_CACHE_DIR=tempfile.mkdtemp(prefix="tpuscope-bench-sql-"),
               OPENBLAS_NUM_THREADS="1")  # fmt: skip  # as the CLI sets it (tpuscope/cli.py)
    subprocess.run([*_tpuscope(), "info", str(path)], env=env, check=True, stdout=subprocess.DEVNULL)
    worker = [sys.executable, str(Path(__file__).resolve()), "--phase-worker", str(path)]
    info_wall, info_cpu, steps = [], [], []
    for _ in range(repeat):
        wall, used = _timed_cpu([*_tpuscope(), "info", str(path)], env)
        info_wall.append(wall)
        info_cpu.append(used)
        done = subprocess.run(worker, env=env, check=True, capture_output=True, text=True)
        steps.append(json.loads(done.stdout.strip().splitlines()[-1]))
    wall, used = statistics.median(info_wall), statistics.median(info_cpu)
    print(f"{path.name}: the sql command's steps, fresh processes, median of {repeat} (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores); info: {wall * 1000:.0f} ms wall, "
          f"{used * 1000:.0f} ms CPU")  # fmt: skip
    for k, name in enumerate(PHASES):
        w = statistics.median(s[k][0] for s in steps)
        c = statistics.median(s[k][1] for s in steps)
        print(f"  {name:<30} {w * 1000:6.0f} ms wall ({w / wall:.2f}x info), "
              f"{c * 1000:5.0f} ms CPU ({c / used:.2f}x info)")  # fmt: skip


def phase_worker(path: Path) -> None:
    """Runs in a fresh process: each of PHASES in turn; one JSON line of [wall, CPU] seconds each."""
    import resource

    def now() -> tuple[float, float]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return time.perf_counter(), usage.ru_utime + usage.ru_stime

    marks = [now()]
    import numpy  # noqa: F401

    marks.append(now())
    from tpuscope.opener import open_trace

    trace = open_trace(str(path))
    marks.append(now())
    import duckdb  # noqa: F401

    marks.append(now())
    import pyarrow  # noqa: F401

    from tpuscope.query.engine import open_locked
    from tpuscope.query.tables import TraceColumns

    marks.append(now())
    connection = open_locked()  # inline here; the sql command opens it in a thread beside the load
    marks.append(now())
    connection.register("events", TraceColumns(trace, lambda: None).table({"name", "dur_ps"}))  # type: ignore[arg-type,return-value]
    marks.append(now())
    connection.sql(GROUP_BY_NAME).fetchall()
    marks.append(now())
    print(json.dumps([[b[0] - a[0], b[1] - a[1]] for a, b in zip(marks, marks[1:], strict=False)]))


def peer(kineto: Path, peer_python: str, repeat: int) -> None:
    """The same two questions on one Kineto file: our `sql` command against HTA (pandas), both as whole
    processes from launch to answer (ours from a warm cache, HTA parsing the JSON as it always does),
    with the peer's own phases (import, parse to DataFrames, each question) and both answers' row
    counts, so a difference in what each counts is seen."""
    print(f"\n{kineto.name}: the same questions, ours against HTA's pandas DataFrames, median of {repeat}")
    env = dict(os.environ, TPUSCOPE_CACHE_DIR=tempfile.mkdtemp(prefix="tpuscope-bench-sql-"))
    fill = [*_tpuscope(), "info", str(kineto)]
    subprocess.run(fill, env=env, check=True, stdout=subprocess.DEVNULL)  # the cache, as whole_process
    worker = [peer_python, str(Path(__file__).resolve()), "--peer-worker", str(kineto)]
    probe = subprocess.run(worker + ["--probe"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"  peer skipped: {probe.stdout.strip() or probe.stderr.strip().splitlines()[-1]}")
        return
    ours_total = 0.0
    for label, query in (("count and total per name", GROUP_BY_NAME), ("10 longest events", LONGEST)):
        argv = [*_tpuscope(), "sql", str(kineto), query, "--json"]
        rows = len(json.loads(subprocess.run(argv, env=env, check=True, capture_output=True).stdout)["rows"])
        ours = statistics.median(_timed(argv, env) for _ in range(repeat))
        ours_total += ours
        print(f"  tpuscope sql, {label}: {ours * 1000:.0f} ms whole process ({rows} rows)")
    walls, reports = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(worker, capture_output=True, text=True, check=True)
        walls.append(time.perf_counter() - started)
        reports.append(json.loads(done.stdout.strip().splitlines()[-1]))
    middle = reports[walls.index(statistics.median_low(walls))]
    theirs = statistics.median(walls)
    print(f"  HTA {middle['version']} + pandas {middle['pandas']}: {theirs * 1000:.0f} ms whole process, "
          f"both questions ({theirs / ours_total:.1f}x our two commands; "
          f"import {middle['import_s'] * 1000:.0f} ms, parse to DataFrames "
          f"{middle['parse_s'] * 1000:.0f} ms, count and total per name {middle['group_s'] * 1000:.1f} ms "
          f"({middle['group_rows']} rows), 10 longest {middle['longest_s'] * 1000:.1f} ms)")  # fmt: skip


def peer_worker(kineto: Path, probe: bool) -> None:
    """Runs in the peer's interpreter: HTA's parse, then the two questions with pandas; one JSON line."""
    try:
        started = time.perf_counter()
        import pandas as pd
        from hta.trace_analysis import TraceAnalysis
    except ImportError as error:
        print(f"HTA and pandas are not installed for {sys.executable} ({error}); "
              "pip install 'tpuscope[bench]', or give --peer-python")  # fmt: skip
        raise SystemExit(1) from None
    if probe:
        return
    import importlib.metadata
    import logging

    logging.disable(logging.INFO)
    imported = time.perf_counter()
    analysis = TraceAnalysis(trace_files={0: str(kineto)}, trace_dir=str(kineto.parent))
    frame = analysis.t.get_trace(0)
    symbols = pd.Series(analysis.t.symbol_table.get_sym_table())
    parsed = time.perf_counter()
    per_name = frame.groupby("name")["dur"].agg(["count", "sum"])
    per_name.index = symbols[per_name.index].to_numpy()  # HTA keeps names as symbol ids
    grouped = time.perf_counter()
    longest = frame.nlargest(10, "dur")[["name", "dur"]]
    longest = longest.assign(name=symbols[longest["name"]].to_numpy())
    done = time.perf_counter()
    print(json.dumps({
        "version": importlib.metadata.version("HolisticTraceAnalysis"), "pandas": pd.__version__,
        "import_s": imported - started, "parse_s": parsed - imported, "group_s": grouped - parsed,
        "longest_s": done - grouped, "group_rows": len(per_name), "longest_rows": len(longest),
    }))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--kineto", type=Path, help="a Kineto trace for the peer (HTA over pandas)")
    parser.add_argument("--peer-python", default=sys.executable,
                        help="the interpreter that has HTA and pandas (default: this one)")  # fmt: skip
    parser.add_argument("--peer-worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--before", type=Path, help="a folder holding an older tpuscope/ to time too")
    parser.add_argument("--phases", action="store_true", help="time the sql command's steps instead")
    parser.add_argument("--phase-worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer_worker:
        peer_worker(args.peer_worker, args.probe)
        return
    if args.phase_worker:
        phase_worker(args.phase_worker)
        return
    if args.phases:
        phases(args.file, args.repeat)
        return
    whole_process(args.file, args.repeat, args.before)
    if args.kineto:
        peer(args.kineto, args.peer_python, args.repeat)


if __name__ == "__main__":
    main()
