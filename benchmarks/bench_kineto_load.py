"""Loading a 1M-event PyTorch profiler (Kineto) trace: the C decoder against the msgspec path it
replaced, same file, same run, against Perfetto's trace processor's JSON rate.

For each of `.json` and `.json.gz` (benchmarks/generate_kineto.py), in fresh subprocesses (imports
not charged): the reader alone (`read_file`: bytes to columns) and the whole `open_trace` (columns to
the model too), each with the C decoder and with the msgspec path (`use_c=False`), as MB/s of JSON
text and peak memory (the process's peak RSS, VmHWM, and above its RSS before the load) against the
text's size. CPU seconds are printed beside wall seconds: on a machine others share, the CPU rate is
the one an idle machine would see. Perfetto: `trace_processor_shell` when installed is timed on the
same `.json`; else its published figure is cited (google/perfetto PR #1641, "speed up JSON
tokenization/parsing by ~9x": a 453.80 MB JSON trace in 2.56 s, 177.1 MB/s). HTA's TraceAnalysis is
timed too when installed. On a machine shared with others, run it alone.

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

PERFETTO_PUBLISHED_MB_S = 177.1  # google/perfetto PR #1641: 453.80 MB in 2.56 s
PERFETTO_SOURCE = "google/perfetto PR #1641 (453.80 MB JSON in 2.56 s)"


def _status_bytes(field: str) -> int:
    """A /proc/self/status memory figure (VmRSS now, VmHWM the peak): unlike getrusage's maxrss,
    VmHWM is not inherited from the parent across fork and exec."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def worker(kind: str, decoder: str, path: str) -> dict:
    from functools import partial

    from tpuscope.app.opener import open_trace
    from tpuscope.readers.trace_event import reader

    use_c = decoder == "c"
    before = _status_bytes("VmRSS")
    began, began_cpu = time.perf_counter(), time.process_time()
    if kind == "read":
        file = reader.read_file(Path(path), use_c=use_c)
        events, used = len(file.events), file.decoder
    else:
        reader.read_file = partial(reader.read_file, use_c=use_c)  # type: ignore[assignment]
        trace = open_trace(path, use_cache=False)
        events, used = trace.event_count, decoder
    seconds, cpu = time.perf_counter() - began, time.process_time() - began_cpu
    peak = _status_bytes("VmHWM")
    return {"s": seconds, "cpu": cpu, "events": events, "peak": peak, "above": peak - before, "decoder": used}


def worker_hta(folder: str) -> dict:
    from hta.trace_analysis import TraceAnalysis

    began = time.perf_counter()
    analysis = TraceAnalysis(trace_dir=folder)
    frames = [analysis.t.get_trace(rank) for rank in analysis.t.get_ranks()]
    return {"s": time.perf_counter() - began, "events": int(sum(len(f) for f in frames))}


def _run(*args: str) -> dict:
    command = [sys.executable, __file__, "--worker", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=3600)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _perfetto(path: Path) -> float | None:
    """Seconds trace_processor_shell takes to load the file, None when it is not installed."""
    binary = shutil.which("trace_processor_shell") or shutil.which("trace_processor")
    if binary is None:
        return None
    began = time.perf_counter()
    subprocess.run([binary, "-q", "/dev/null", str(path)], capture_output=True, check=True, timeout=3600)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", nargs="+")
    args = parser.parse_args()
    if args.worker:
        if args.worker[0] == "hta":
            print(json.dumps(worker_hta(args.worker[1])))
        else:
            print(json.dumps(worker(*args.worker)))
        return
    folder = Path(tempfile.mkdtemp(prefix="bench_kineto_"))
    try:
        plain = generate_kineto.write_kineto(folder / "rank0.pt.trace.json", args.events)
        packed = generate_kineto.write_kineto(folder / "rank0.pt.trace.json.gz", args.events, compress=True)
        text_mb = plain.stat().st_size / 1e6
        print(f"Kineto trace: {text_mb:.1f} MB JSON ({packed.stat().st_size / 1e6:.1f} MB gzipped)")
        published = f"Perfetto's published {PERFETTO_PUBLISHED_MB_S:.0f} MB/s ({PERFETTO_SOURCE})"
        measured = _perfetto(plain)
        perfetto_rate = text_mb / measured if measured else PERFETTO_PUBLISHED_MB_S
        print(
            f"  Perfetto trace_processor on this machine: {measured:.2f} s ({perfetto_rate:.0f} MB/s)"
            if measured
            else f"  trace_processor is not installed: the ratio is to {published}"
        )
        for path in (plain, packed):
            for kind in ("read", "open"):
                rows = {}
                for decoder in ("c", "msgspec"):
                    runs = [_run(kind, decoder, str(path)) for _ in range(args.repeats)]
                    seconds = statistics.median(r["s"] for r in runs)
                    runs[0]["cpu"] = statistics.median(r["cpu"] for r in runs)
                    rows[decoder] = (seconds, runs[0])
                c_s, c_run = rows["c"]
                m_s, m_run = rows["msgspec"]
                what = "read_file " if kind == "read" else "open_trace"
                print(f"  {path.name} {what} ({c_run['events']:,} events, decoder {c_run['decoder']!r}):")
                for name, (seconds, run) in (("C decoder", rows["c"]), ("msgspec  ", rows["msgspec"])):
                    print(
                        f"    {name}: {seconds:.2f} s  {text_mb / seconds:5.0f} MB/s "
                        f"(CPU {run['cpu']:.2f} s, {text_mb / run['cpu']:.0f} MB/s)  "
                        f"peak {run['peak'] / 1e6:,.0f} MB ({run['peak'] / 1e6 / text_mb:.2f}x the text; "
                        f"{run['above'] / 1e6:,.0f} MB above the start, {run['above'] / 1e6 / text_mb:.2f}x)"
                    )
                print(
                    f"    -> C {m_s / c_s:.1f}x faster than msgspec; {text_mb / c_s / perfetto_rate:.2f}x "
                    f"Perfetto's rate ({text_mb / c_run['cpu'] / perfetto_rate:.2f}x by CPU time)"
                )
        try:
            import hta  # noqa: F401
        except ImportError:
            print("  HTA is not installed: not timed")
        else:
            hta_dir = folder / "hta"
            hta_dir.mkdir()
            (hta_dir / "rank-0.json").symlink_to(plain)
            hta_run = _run("hta", str(hta_dir))
            print(f"  HTA TraceAnalysis: {hta_run['s']:.2f} s ({hta_run['events']:,} rows)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
