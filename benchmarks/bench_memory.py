"""Memory analysis speed: the largest program in the samples, and 1M allocator events, each against XProf.

    python benchmarks/bench_memory.py                  # both parts; generates the 1M-event file if missing
    python benchmarks/bench_memory.py --events 200000  # a smaller allocator file
    python benchmarks/bench_memory.py --repeat 7

1. Program memory. The largest program (most logical buffers and heap-simulator events) among the
   real profiles in samples/ and the shared traces (tests/paths.py). Ours: decode its buffer
   assignment and compute program memory for every memory space it uses (`decode_program_buffers`
   + `program_memory`). Peer: XProf's Memory Viewer,
   `xspace_to_tool_data([copy], "memory_viewer", {"module_name", "memory_space"})`, one call per
   memory space, on a copy whose `.hlo_proto.pb` files XProf wrote beforehand (its tool_names step,
   not timed); the call reads that file and computes the same peak.
   Also a bigger real program: one training step of an N-layer MLP that the benchmark records with
   JAX on the CPU (benchmarks/record_jax_mlp.py; 64 layers: ~1,100 logical buffers).
2. Memory over time. A generated `/host:CPU` plane of N allocator events
   (benchmarks/generate_memory_xspace.py). Ours: `open_trace` without the cache, then every
   allocator's memory over time (`memory_report`). Peer: XProf's Memory Profile,
   `xspace_to_tool_data([copy], "memory_profile", {})` on a fresh copy: file to per-allocator
   profile. Both read the file from disk; both give the same peaks (printed).

Trials alternate ours and XProf's; medians of --repeat are printed with the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_ops import quiet_native_stderr  # noqa: E402 - XProf's C++ logs to fd 2
from benchmarks.generate_memory_xspace import DEFAULT_DIR, generate  # noqa: E402
from tests.paths import SHARED_TRACES  # noqa: E402
from tpuscope.analysis.memory.programs import memory_spaces, program_memory  # noqa: E402
from tpuscope.analysis.memory.report import memory_report  # noqa: E402
from tpuscope.app.opener import open_trace  # noqa: E402
from tpuscope.model.programs import hlo_proto_blobs  # noqa: E402
from tpuscope.readers.xplane.hlo_memory import decode_program_buffers  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROFILES = sorted(ROOT.glob("samples/*.xplane.pb")) + sorted(SHARED_TRACES.glob("*/*.xplane.pb"))


def largest_program() -> tuple[Path, int, bytes]:
    """The program with the most logical buffers and heap-simulator events (the work both tools do)."""
    best, best_size = None, -1
    for path in PROFILES:
        for program_id, blob in hlo_proto_blobs(open_trace(path)):
            buffers = decode_program_buffers(blob, program_id)
            size = len(buffers.buffer_ids) + len(buffers.event_kind) if buffers is not None else -1
            if size > best_size:
                best, best_size = (path, program_id, blob), size
    if best is None:
        raise SystemExit("no HLO protos in the samples")
    return best


def recorded_mlp(layers: int) -> tuple[Path, int, bytes]:
    """`jit_train_step` of a real JAX CPU recording of an MLP of `layers` layers (record_jax_mlp.py)."""
    import subprocess

    folder = DEFAULT_DIR / f"jax_mlp_{layers}"
    found = sorted(folder.glob("plugins/profile/*/*.xplane.pb"))
    if not found:
        script = Path(__file__).resolve().parent / "record_jax_mlp.py"
        env = {**os.environ, "JAX_PLATFORMS": "cpu"}
        subprocess.run([sys.executable, str(script), str(folder), str(layers)], check=True, env=env,
                       capture_output=True)  # fmt: skip
        found = sorted(folder.glob("plugins/profile/*/*.xplane.pb"))
    path = found[-1]
    for program_id, blob in hlo_proto_blobs(open_trace(path)):
        buffers = decode_program_buffers(blob, program_id)
        if buffers is not None and buffers.module_name == "jit_train_step":
            return path, program_id, blob
    raise SystemExit(f"no jit_train_step in {path}")


def bench_program(repeat: int, chosen: tuple[Path, int, bytes], what: str) -> None:
    from xprof.convert.raw_to_tool_data import xspace_to_tool_data, xspace_to_tool_names

    path, program_id, blob = chosen
    buffers = decode_program_buffers(blob, program_id)
    spaces = memory_spaces(buffers) or [0]
    name = buffers.name

    def ours():
        decoded = decode_program_buffers(blob, program_id)
        return [program_memory(decoded, space) for space in spaces]

    with tempfile.TemporaryDirectory(prefix="tpuscope-xprof-") as folder:
        copy = Path(folder) / "profile.xplane.pb"
        shutil.copyfile(path, copy)
        with quiet_native_stderr():
            xspace_to_tool_names([str(copy)])

        def theirs():
            with quiet_native_stderr():
                return [
                    json.loads(
                        xspace_to_tool_data(
                            [str(copy)], "memory_viewer", {"module_name": name, "memory_space": s}
                        )[0]
                    )
                    for s in spaces
                ]

        times_ours, times_theirs = [], []
        for _ in range(repeat):
            started = time.perf_counter()
            mine = ours()
            times_ours.append(time.perf_counter() - started)
            started = time.perf_counter()
            other = theirs()
            times_theirs.append(time.perf_counter() - started)
    a, b = statistics.median(times_ours), statistics.median(times_theirs)
    peaks = [m.peak_heap_bytes for m in mine]
    xpeaks = [round(o.get("peakHeapMib", 0) * (1 << 20)) for o in other]
    print(f"{what}: {name} from {path.name} ({len(blob):,} bytes of HloProto, "
          f"{len(buffers.buffer_ids):,} logical buffers, {len(buffers.event_kind):,} heap-simulator events, "
          f"{len(spaces)} memory spaces)")  # fmt: skip
    print(f"  tpuscope decode + program memory: {a * 1e3:8.2f} ms   peaks {peaks}")
    print(f"  XProf memory_viewer:              {b * 1e3:8.2f} ms   peaks {xpeaks}   ({b / a:.1f}x ours)")


def bench_allocators(events: int, repeat: int) -> None:
    from xprof.convert.raw_to_tool_data import xspace_to_tool_data

    path = DEFAULT_DIR / f"memory_{events}" / f"memory_{events}.xplane.pb"
    if not path.exists():
        generate(events, path, steps=100)
    times_ours, times_theirs = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        report = memory_report(open_trace(path, use_cache=False))
        times_ours.append(time.perf_counter() - started)
        with tempfile.TemporaryDirectory(prefix="tpuscope-xprof-") as folder:
            copy = Path(folder) / path.name
            shutil.copyfile(path, copy)
            started = time.perf_counter()
            with quiet_native_stderr():
                data = json.loads(xspace_to_tool_data([str(copy)], "memory_profile", {})[0])
            times_theirs.append(time.perf_counter() - started)
    a, b = statistics.median(times_ours), statistics.median(times_theirs)
    ours = {x.id: (x.peak_bytes_in_use, x.capacity_bytes) for x in report.allocators}
    theirs = {
        k: (int(v["profileSummary"]["peakBytesUsageLifetime"]), int(v["profileSummary"]["memoryCapacity"]))
        for k, v in data["memoryProfilePerAllocator"].items()
    }
    print(f"allocator events: {events:,} on a generated host plane ({path.stat().st_size / 1e6:.1f} MB)")
    print(f"  tpuscope open + memory over time: {a * 1e3:8.1f} ms   (peak, capacity) {ours}")
    print(
        f"  XProf memory_profile:             {b * 1e3:8.1f} ms   (peak, capacity) {theirs}"
        f"   ({b / a:.1f}x ours)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--mlp-layers", type=int, default=64, help="layers of the recorded JAX MLP (0: skip it)"
    )
    args = parser.parse_args(argv)
    bench_program(args.repeat, largest_program(), "largest program in the samples")
    if args.mlp_layers:
        bench_program(
            args.repeat, recorded_mlp(args.mlp_layers), f"recorded JAX CPU MLP, {args.mlp_layers} layers"
        )
    bench_allocators(args.events, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
