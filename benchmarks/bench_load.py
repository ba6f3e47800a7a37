"""Loader speed and memory: tpuscope vs xprof-rs vs XProf's converter, on the same file, in one run.

    python benchmarks/bench_load.py                # the 1M-event file (generated if missing)
    python benchmarks/bench_load.py --big          # ... and the 10M-event file
    python benchmarks/bench_load.py --no-xprof     # skip XProf's converter (~10 s and ~2 GB per trial)
    python benchmarks/bench_load.py --repeat 5

Every measurement runs in a fresh subprocess, so peak memory is that
process's own high-water mark (ru_maxrss from wait4 for peers; for tpuscope
the peak during the load minus the resident size just before it, so the
interpreter and imports are not charged to the loader). The file is read once
first, so every contender finds it in the OS page cache ("cold" means: not in
any tool's own cache). Times are medians over --repeat trials.

Peers:
- xprof-rs server (the issue's reference: "`pip install xprof-rs` gives its
  server binary"), cold `trace_viewer@` request on a fresh server: it reads
  the file, converts every event into its in-memory trace (what tpuscope's
  load builds too) and renders the first view. This is the target's peer.
- xprof-rs CLI `aggregate_xplane_events`: one process that reads the file and
  sums every event's name and duration, without stats or a kept model: less
  work than a load, reported for transparency; whole process wall time.
- XProf (`xprof.convert.raw_to_tool_data.xspace_to_tool_data`, tool
  `trace_viewer`) on a fresh copy of the file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import generate_xspace  # noqa: E402

PYTHON = sys.executable
_SEARCH_PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
XPROF_RS = shutil.which("xprof-rs", path=_SEARCH_PATH)  # pip puts it beside the venv's python

# Targets from issue 2 ("Speed and memory").
PEAK_MEMORY_FACTOR = 3.0  # peak memory during load < 3x the file size
MODEL_BYTES_PER_EVENT = 48  # resident model < 48 bytes per event
WARM_REOPEN_S = 0.050  # warm re-open from the cache < 50 ms


# ----- workers (run in a subprocess: `bench_load.py --worker KIND FILE`) -------------------------


def _rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_rss_bytes() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def worker_tpuscope(file: Path, use_cache: bool, progress: bool) -> dict:
    began = time.perf_counter()
    from tpuscope.app.opener import open_trace

    imported = time.perf_counter()
    calls: list[float] = []
    callback = (lambda fraction, message: calls.append(fraction)) if progress else None
    rss_before = _rss_bytes()
    start, cpu_start = time.perf_counter(), time.process_time()
    trace = open_trace(file, progress=callback, use_cache=use_cache)
    load_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
    peak = _peak_rss_bytes()
    import gc

    gc.collect()
    return {
        "import_s": imported - began,
        "load_s": load_s,
        "cpu_s": cpu_s,
        "events": trace.event_count,
        "model_bytes": trace.nbytes(),
        "rss_before": rss_before,
        "peak_delta": peak - rss_before,
        "rss_delta_after": _rss_bytes() - rss_before,
        "progress_calls": len(calls),
        "progress_monotonic": calls == sorted(calls),
    }


def worker_xprof(file: Path) -> dict:
    from xprof.convert import raw_to_tool_data

    start = time.perf_counter()
    data, _ = raw_to_tool_data.xspace_to_tool_data([str(file)], "trace_viewer", {})
    return {"load_s": time.perf_counter() - start, "output_bytes": len(data or b"")}


# ----- the harness -------------------------------------------------------------------------------


def _run_measured(argv: list[str], env: dict | None = None) -> tuple[float, int, str]:
    """Runs a command; returns (wall seconds, peak RSS bytes of the child, stdout)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed with exit code {proc.returncode}: {text[-500:]}")
    return wall, usage.ru_maxrss * 1024, text


def _worker(kind: str, file: Path, cache_dir: Path | None = None, extra: list[str] | None = None) -> dict:
    env = dict(os.environ)
    if cache_dir is not None:
        env["TPUSCOPE_CACHE_DIR"] = str(cache_dir)
    wall, peak, text = _run_measured([PYTHON, __file__, "--worker", kind, str(file), *(extra or [])], env)
    result = json.loads(text.strip().splitlines()[-1])
    result["process_s"], result["process_peak"] = wall, peak
    return result


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _summarize_tpuscope(runs: list[dict]) -> dict:
    summary = dict(runs[0])
    for key in ("load_s", "cpu_s", "import_s", "process_s", "peak_delta", "rss_delta_after"):
        summary[key] = _median([r[key] for r in runs])
    summary["peak_delta_max"] = max(r["peak_delta"] for r in runs)
    return summary


def bench_warm(file: Path, repeat: int) -> dict:
    with tempfile.TemporaryDirectory() as cache_dir:
        _worker("warm", file, Path(cache_dir))  # fills the cache
        warm = [_worker("warm", file, Path(cache_dir)) for _ in range(repeat)]
    return {"load_s": _median([r["load_s"] for r in warm]),
            "peak_delta": _median([r["peak_delta"] for r in warm])}  # fmt: skip


def xprof_rs_cli_trial(file: Path) -> tuple[float, int] | None:
    if XPROF_RS is None:
        return None
    wall, peak, _ = _run_measured([XPROF_RS, "aggregate_xplane_events", str(file.parent)])
    return wall, peak


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def xprof_rs_logdir(file: Path, folder: Path) -> Path:
    """A logdir holding `file` as run1/host0, the layout xprof-rs serves."""
    run = folder / "plugins" / "profile" / "run1"
    run.mkdir(parents=True)
    try:
        os.link(file, run / "host0.xplane.pb")
    except OSError:
        shutil.copyfile(file, run / "host0.xplane.pb")
    time.sleep(2.1)  # the server does not cache a file that changed in the last 2 s
    return folder


def bench_xprof_rs_server(file: Path, repeat: int) -> dict | None:
    """Cold trace_viewer@ on a fresh server each trial; peak RSS of the server process."""
    if XPROF_RS is None:
        return None
    times, peaks = [], []
    with tempfile.TemporaryDirectory() as folder:
        logdir = str(xprof_rs_logdir(file, Path(folder)))
        for _ in range(repeat):
            port = _free_port()
            server = subprocess.Popen([XPROF_RS, "--logdir", logdir, "--port", str(port)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
            try:
                base = f"http://127.0.0.1:{port}"
                for _ in range(200):
                    try:
                        urllib.request.urlopen(f"{base}/runs", timeout=1).read()
                        break
                    except OSError:
                        time.sleep(0.02)
                start = time.perf_counter()
                query = f"{base}/data?run=run1&tag=trace_viewer@&host=host0"
                urllib.request.urlopen(query, timeout=120).read()
                times.append(time.perf_counter() - start)
                status = Path(f"/proc/{server.pid}/status").read_text()
                high_water = next(line for line in status.splitlines() if line.startswith("VmHWM"))
                peaks.append(int(high_water.split()[1]) * 1024)
            finally:
                server.terminate()
                server.wait()
    return {"load_s": _median(times), "peak": _median(peaks)}


def bench_xprof(file: Path) -> dict | None:
    try:
        import xprof.convert.raw_to_tool_data  # noqa: F401
    except ImportError:
        return None
    with tempfile.TemporaryDirectory() as folder:  # XProf writes a cache file beside its input
        copy = Path(folder) / file.name
        shutil.copyfile(file, copy)
        result = _worker("xprof", copy)
    return {"load_s": result["load_s"], "peak": result["process_peak"]}


def _mb(n: float) -> str:
    return f"{n / 1e6:,.0f} MB"


def report(file: Path, repeat: int, with_xprof: bool, big: bool) -> bool:
    size = file.stat().st_size
    file.read_bytes()  # into the page cache, the same for every contender
    # Trials alternate between tpuscope and xprof-rs, so a change in the (shared) machine's load
    # affects both alike.
    ours_runs, cli_runs = [], []
    for _ in range(repeat):
        ours_runs.append(_worker("cold", file))
        trial = xprof_rs_cli_trial(file)
        if trial is not None:
            cli_runs.append(trial)
    ours = _summarize_tpuscope(ours_runs)
    cli = {"load_s": _median([w for w, _ in cli_runs]), "peak": _median([p for _, p in cli_runs])} \
        if cli_runs else None  # fmt: skip
    warm = bench_warm(file, repeat)
    ours["warm_s"], ours["warm_peak_delta"] = warm["load_s"], warm["peak_delta"]
    server = None if big else bench_xprof_rs_server(file, repeat)
    xprof = bench_xprof(file) if with_xprof and not big else None
    events = ours["events"]
    print(
        f"\n== {file.name}: {size / 1e6:.1f} MB, {events:,} events, {os.cpu_count()} CPUs, "
        f"median of {repeat} trials"
    )
    print(
        f"tpuscope cold load        {ours['load_s'] * 1e3:8.0f} ms  (CPU {ours['cpu_s'] * 1e3:.0f} ms; "
        f"python start + imports {(ours['process_s'] - ours['load_s']) * 1e3:.0f} ms)"
    )
    print(
        f"  peak memory during load {_mb(ours['peak_delta']):>11} = {ours['peak_delta'] / size:.2f}x file "
        f"(worst trial {ours['peak_delta_max'] / size:.2f}x; process peak {_mb(ours['process_peak'])})"
    )
    print(
        f"  model columns           {ours['model_bytes'] / events:8.1f} B/event; "
        f"RSS kept after load {ours['rss_delta_after'] / events:.1f} B/event"
    )
    print(f"  warm re-open (cache)    {ours['warm_s'] * 1e3:8.1f} ms  (peak {_mb(ours['warm_peak_delta'])})")
    if big:
        print(
            f"  progress callbacks      {ours['progress_calls']:8d}     "
            f"(fractions rise monotonically: {ours['progress_monotonic']})"
        )
    peers = [("xprof-rs CLI aggregate_xplane_events", cli), ("xprof-rs server, cold trace_viewer@", server),
             ("XProf xspace_to_tool_data trace_viewer", xprof)]  # fmt: skip
    for name, peer in peers:
        if peer is not None:
            print(
                f"{name:40s} {peer['load_s'] * 1e3:8.0f} ms  peak {_mb(peer['peak']):>9}  "
                f"(tpuscope: {peer['load_s'] / ours['load_s']:.2f}x as fast)"
            )
    checks = {
        "cold load no slower than xprof-rs (server, cold trace load)": server is None
        or ours["load_s"] <= server["load_s"],
        f"peak memory < {PEAK_MEMORY_FACTOR:g}x file": ours["peak_delta"] < PEAK_MEMORY_FACTOR * size,
        f"model < {MODEL_BYTES_PER_EVENT} B/event": ours["model_bytes"] / events < MODEL_BYTES_PER_EVENT,
        f"warm re-open < {WARM_REOPEN_S * 1e3:g} ms": ours["warm_s"] < WARM_REOPEN_S,
    }
    for name, ok in checks.items():
        print(f"  [{'ok' if ok else 'MISSED'}] {name}")
    if cli is not None and ours["load_s"] > cli["load_s"]:
        # Not the target (see the module docstring), but never hidden.
        print(
            f"  [info] xprof-rs CLI aggregate_xplane_events (names and durations only, no stats, no model)"
            f" is {ours['load_s'] / cli['load_s']:.2f}x as fast as the full tpuscope load"
        )
    return all(checks.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true", help="also the 10M-event file")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-xprof", action="store_true", help="skip XProf's converter")
    parser.add_argument("--file", type=Path, help="benchmark this file instead of the generated ones")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        kind, file = args.worker[0], Path(args.worker[1])
        if kind == "xprof":
            result = worker_xprof(file)
        else:
            result = worker_tpuscope(file, use_cache=kind == "warm", progress=True)
        print(json.dumps(result))
        return 0
    files = [args.file] if args.file else [generate_xspace.default_path(1_000_000)]
    if args.big and not args.file:
        files.append(generate_xspace.default_path(10_000_000))
    ok = True
    for file in files:
        if not file.exists():
            events = 10_000_000 if "10M" in file.name else 1_000_000
            print(f"generating {file} ...")
            generate_xspace.generate(events, file)
        ok &= report(file, args.repeat, not args.no_xprof, big="10M" in file.name)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
