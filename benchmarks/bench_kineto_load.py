"""Loading a 1M-event PyTorch profiler (Kineto) trace: tpuscope vs HTA's TraceAnalysis, same file, same run.

Also: the JSON parsers tried for the reader (stdlib json, orjson, msgspec, simdjson) on the same
bytes, and tpuscope's cost per event against its XPlane load of a 1M-event file
(benchmarks/generate_xspace.py). Each loader runs in a fresh subprocess (imports not charged).
On a machine shared with others, run it alone: HTA needs several GB.

    python benchmarks/bench_kineto_load.py [--events 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate_kineto  # noqa: E402
import generate_xspace  # noqa: E402


def worker_tpuscope(path: str) -> dict:
    from tpuscope.opener import open_trace

    began = time.perf_counter()
    trace = open_trace(path, use_cache=False)
    return {"load_s": time.perf_counter() - began, "events": trace.event_count}


def worker_hta(folder: str) -> dict:
    from hta.trace_analysis import TraceAnalysis

    began = time.perf_counter()
    analysis = TraceAnalysis(trace_dir=folder)
    frames = [analysis.t.get_trace(rank) for rank in analysis.t.get_ranks()]
    return {"load_s": time.perf_counter() - began, "events": int(sum(len(f) for f in frames))}


def worker_parsers(path: str) -> dict:
    import msgspec
    import orjson
    import simdjson

    data = Path(path).read_bytes()
    out = {}
    for name, parse in (
        ("json", json.loads),
        ("orjson", orjson.loads),
        ("msgspec", msgspec.json.decode),
        ("simdjson", lambda d: simdjson.Parser().parse(d).as_dict()),
    ):
        began = time.perf_counter()
        parse(data)
        out[name] = time.perf_counter() - began
    from tpuscope.readers.trace_event.parse import read_trace_events

    began = time.perf_counter()
    read_trace_events(Path(path), data)
    out["msgspec typed (tpuscope)"] = time.perf_counter() - began
    return out


def _run(kind: str, target: Path) -> dict:
    command = [sys.executable, __file__, "--worker", kind, str(target)]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=3600)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", nargs=2)
    args = parser.parse_args()
    if args.worker:
        kind, target = args.worker
        work = {"tpuscope": worker_tpuscope, "hta": worker_hta, "parsers": worker_parsers}[kind]
        print(json.dumps(work(target)))
        return
    folder = Path(tempfile.mkdtemp(prefix="bench_kineto_"))
    try:
        kineto = generate_kineto.write_kineto(folder / "rank0.pt.trace.json", args.events)
        hta_dir = folder / "hta"
        hta_dir.mkdir()
        (hta_dir / "rank-0.json").symlink_to(kineto)
        xspace = generate_xspace.generate(args.events, folder / "bench.xplane.pb")
        ours = [_run("tpuscope", kineto) for _ in range(args.repeats)]
        xplane = [_run("tpuscope", xspace) for _ in range(args.repeats)]
        hta = [_run("hta", hta_dir) for _ in range(max(1, args.repeats - 1))]
        parsers = _run("parsers", kineto)
        ours_s = statistics.median(r["load_s"] for r in ours)
        xplane_s = statistics.median(r["load_s"] for r in xplane)
        hta_s = statistics.median(r["load_s"] for r in hta)
        n, n_x = ours[0]["events"], xplane[0]["events"]
        size = kineto.stat().st_size / 1e6
        print(f"Kineto trace: {n:,} events ({size:.1f} MB JSON)")
        print(f"  tpuscope open_trace: {ours_s:.2f} s  ({ours_s / n * 1e9:.0f} ns per event)")
        rows = hta[0]["events"]
        print(
            f"  HTA TraceAnalysis:   {hta_s:.2f} s  ({rows:,} rows)  -> tpuscope {hta_s / ours_s:.1f}x faster"
        )
        per_x = xplane_s / n_x * 1e9
        print(f"  tpuscope XPlane load, {n_x:,} events: {xplane_s:.2f} s ({per_x:.0f} ns per event)")
        print(f"  -> trace-event JSON costs {ours_s / n * 1e9 / per_x:.1f}x more per event than XPlane")
        print("  parsing the same bytes: " + ", ".join(f"{k} {v:.2f} s" for k, v in parsers.items()))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
