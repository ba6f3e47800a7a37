"""SQL over a trace: `tpuscope sql FILE "... GROUP BY name"` against `tpuscope info FILE`, as whole processes.

    python benchmarks/bench_sql.py                        # benchmarks/data/tpu_10M (generate it first)
    python benchmarks/bench_sql.py --file F.xplane.pb --repeat 7
    python benchmarks/bench_sql.py --kineto T.json.gz     # also the peer on a Kineto trace
    python benchmarks/bench_sql.py --before SRC           # also the sql command of an older tree
                                                          # (SRC holds its tpuscope/: git archive)
    python benchmarks/bench_sql.py --phases               # where the sql command's time goes
    python benchmarks/bench_sql.py --overlap              # a first open's imports beside the decode

What a user waits for: launch to answer, for both opens. Warm: both commands read the same file
from our columnar cache (filled once first) and the page cache. First open: both decode the file
(`TPUSCOPE_NO_CACHE=1`, so none writes an entry), as on a profile never opened. Trials alternate
between the contenders so the shared machine's load hits all alike; medians of wall and CPU time
are printed with the ratios. Also timed (warm): `python -c "import duckdb, pyarrow"` (the engine's
own start, which `info` never pays). Target (issue 21): the query at most 1.5x `info`.

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
    """Both opens a user meets: from the warm cache (a profile queried before), and first, with the
    cache off (a new profile: `TPUSCOPE_NO_CACHE=1` for every contender, so nothing is written)."""
    env = dict(os.environ, TPUSCOPE_CACHE_DIR=tempfile.mkdtemp(prefix="tpuscope-bench-sql-"),
               PYTHONDONTWRITEBYTECODE="")  # fmt: skip
    subprocess.run([*_tpuscope(), "info", str(path)], env=env, check=True, stdout=subprocess.DEVNULL)  # fill
    contenders = {
        "info": [*_tpuscope(), "info", str(path)],
        "sql GROUP BY name": [*_tpuscope(), "sql", str(path), GROUP_BY_NAME],
    }
    if before is not None:
        contenders["sql, before"] = [*_tpuscope_from(before), "sql", str(path), GROUP_BY_NAME]
    cached = dict(contenders, **{"import duckdb, pyarrow": [sys.executable, "-c", "import duckdb, pyarrow"]})
    _alternating(f"{path.name}: whole process, warm cache", cached, env, repeat)
    _alternating(f"{path.name}: whole process, first open (TPUSCOPE_NO_CACHE=1)", contenders,
                 dict(env, TPUSCOPE_NO_CACHE="1"), repeat)  # fmt: skip


def _alternating(title: str, contenders: dict[str, list[str]], env: dict, repeat: int) -> None:
    """Trials alternating between the contenders; medians of wall and CPU, each against `info`'s."""
    times: dict[str, list[float]] = {k: [] for k in contenders}
    cpu: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(repeat):
        for name, argv in contenders.items():
            wall, used = _timed_cpu(argv, env)
            times[name].append(wall)
            cpu[name].append(used)
    info, info_cpu = statistics.median(times["info"]), statistics.median(cpu["info"])
    print(f"{title}, median of {repeat} (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for name, values in times.items():
        median, used = statistics.median(values), statistics.median(cpu[name])
        print(f"  {name:<24} {median * 1000:8.0f} ms wall ({median / info:.2f}x info), "
              f"{used * 1000:6.0f} ms CPU ({used / info_cpu:.2f}x info)")  # fmt: skip


# One fresh process of `--overlap`: what `tpuscope sql` does up to the query on a first open, with the
# engine's imports on the main thread before the load ("serial") or in the connection's thread while
# the file decodes ("thread"), the decode's pool capped at argv[2] threads (or the reader's default).
OVERLAP_CHILD = """
import sys
import tpuscope.readers.xplane.decode as decode
if sys.argv[2] != "default":
    decode._MAX_THREADS = int(sys.argv[2])
from tpuscope.commands.sql import QUERY_MODULES
from tpuscope.app.opener import open_trace
from tpuscope.query.engine import OpeningConnection
if sys.argv[1] == "serial":
    import duckdb, pyarrow, tpuscope.query.session
opening = OpeningConnection(imports=QUERY_MODULES if sys.argv[1] == "thread" else ())
open_trace(sys.argv[3], use_cache=False)
opening.result()
"""


def overlap(path: Path, repeat: int) -> None:
    """The first-open overlap alone, in fresh processes, alternating and paired: with the decode's
    default pool (it fills this machine's cores) and with one decode thread (a core left free, as on
    a machine with more cores than the decode's pool); the paired difference cancels load drifts."""
    print(f"{path.name}: first open, engine imports serial vs in the connection's thread, median of {repeat}")
    for threads in ("default", "1"):
        walls: dict[str, list[float]] = {"serial": [], "thread": []}
        cpus: dict[str, list[float]] = {"serial": [], "thread": []}
        for trial in range(repeat):
            for mode in ("serial", "thread") if trial % 2 == 0 else ("thread", "serial"):
                argv = [sys.executable, "-c", OVERLAP_CHILD, mode, threads, str(path)]
                wall, used = _timed_cpu(argv, os.environ.copy())
                walls[mode].append(wall)
                cpus[mode].append(used)
        paired = [t - s for t, s in zip(walls["thread"], walls["serial"], strict=True)]
        wall = {mode: statistics.median(values) * 1000 for mode, values in walls.items()}
        cpu = {mode: statistics.median(values) * 1000 for mode, values in cpus.items()}
        print(f"  decode threads {threads:<7}: serial {wall['serial']:5.0f} ms wall {cpu['serial']:5.0f} ms "
              f"CPU, thread {wall['thread']:5.0f} ms wall {cpu['thread']:5.0f} ms CPU; paired thread-serial "
              f"{statistics.median(paired) * 1000:+.0f} ms, thread faster in {sum(d < 0 for d in paired)} of "
              f"{repeat} (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")  # fmt: skip


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
    from tpuscope.app.opener import open_trace

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
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--kineto", type=Path, help="a Kineto trace for the peer (HTA over pandas)")
    parser.add_argument("--peer-python", default=sys.executable,
                        help="the interpreter that has HTA and pandas (default: this one)")  # fmt: skip
    parser.add_argument("--peer-worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--before", type=Path, help="a folder holding an older tpuscope/ to time too")
    parser.add_argument("--phases", action="store_true", help="time the sql command's steps instead")
    parser.add_argument("--phase-worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--overlap", action="store_true",
                        help="time a first open's engine imports beside the decode instead")  # fmt: skip
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
    if args.overlap:
        overlap(args.file, args.repeat)
        return
    whole_process(args.file, args.repeat, args.before)
    if args.kineto:
        peer(args.kineto, args.peer_python, args.repeat)


if __name__ == "__main__":
    main()
