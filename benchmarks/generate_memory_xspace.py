"""Writes a host plane of N allocator events (a BFC allocator's `MemoryAllocation` / `MemoryDeallocation`).

    python benchmarks/generate_memory_xspace.py --events 1000000 [--out FILE] [--steps 100] [--leak BYTES]

Shape (like the allocator events of the real TPU v6e sample in ../shared/traces/tpu): instant
events on a `/host:CPU` thread line, each with the allocator's state after the call as int stats
`index_on_host`, `bytes_reserved`, `bytes_allocated`, `bytes_available`, `peak_bytes_in_use`,
`requested_bytes`, `allocation_bytes`, `addr`; plus a `train` line of step annotations carrying
`step_num`, as JAX's `StepTraceAnnotation` writes them. Each step allocates buffers and frees
them before it ends; with `--leak`, each step also keeps one buffer of that many bytes (a loop that
holds on to every step's output), so memory in use rises step over step.

Events are encoded column-wise with numpy (benchmarks/generate_xspace.py), no Python object per event.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.generate_xspace import (  # noqa: E402
    BASE_NS,
    _length_prefixed,
    _line_bytes,
    _stat_metadata,
    encode_events,
)
from tpuscope.readers.xplane import xplane_pb2 as pb  # noqa: E402

DEFAULT_DIR = Path(__file__).resolve().parent / "data"
CAPACITY_BYTES = 33_550_237_696  # the TPU v6e sample's allocator capacity (in use + free)
STEP_PS = 10_000_000_000  # 10 ms per step
ALLOCATION_STATS = ["index_on_host", "bytes_reserved", "bytes_allocated", "bytes_available",
                    "peak_bytes_in_use", "requested_bytes", "allocation_bytes", "addr",
                    "step_num"]  # fmt: skip
ALLOC_META, FREE_META, STEP_META = 1, 2, 3


def allocator_columns(n_events: int, steps: int, leak_bytes: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The events' columns in time order: time, is-allocation, size, address, and the allocator's state."""
    rng = np.random.default_rng(seed)
    pairs = max(n_events // 2, steps)
    step_of = np.sort(rng.integers(0, steps, pairs))
    sizes = (rng.integers(1, 64, pairs) * 4096).astype(np.int64)  # 4 KiB - 256 KiB
    # Allocated somewhere in the first 60% of the step, freed before 95% of it.
    start = step_of * STEP_PS + (rng.random(pairs) * 0.6 * STEP_PS).astype(np.int64)
    end = start + (rng.random(pairs) * 0.3 * STEP_PS).astype(np.int64) + 1
    kept = np.zeros(pairs, dtype=bool)
    if leak_bytes > 0:
        first_in_step = np.flatnonzero(np.diff(np.concatenate([[-1], step_of])) > 0)
        kept[first_in_step] = True
        sizes[first_in_step] = leak_bytes
    address = (1 << 20) + np.arange(pairs, dtype=np.int64) * 4096
    times = np.concatenate([start, end[~kept]])
    is_alloc = np.concatenate([np.ones(pairs, bool), np.zeros(int((~kept).sum()), bool)])
    size = np.concatenate([sizes, sizes[~kept]])
    addr = np.concatenate([address, address[~kept]])
    order = np.argsort(times, kind="stable")
    times, is_alloc, size, addr = times[order], is_alloc[order], size[order], addr[order]
    allocated = np.cumsum(np.where(is_alloc, size, -size))
    return {
        "time_ps": times,
        "is_allocation": is_alloc,
        "bytes": size,
        "addr": addr,
        "bytes_allocated": allocated,
        "peak_bytes_in_use": np.maximum.accumulate(allocated),
        "bytes_available": CAPACITY_BYTES - allocated,
        "step": times // STEP_PS,
    }


def allocator_plane(n_events: int, steps: int, leak_bytes: int, seed: int = 0) -> bytes:
    plane = pb.XPlane(id=100, name="/host:CPU")
    sid = _stat_metadata(plane, ALLOCATION_STATS)
    for meta, name in (
        (ALLOC_META, "MemoryAllocation"),
        (FREE_META, "MemoryDeallocation"),
        (STEP_META, "train"),
    ):
        plane.event_metadata[meta].id = meta
        plane.event_metadata[meta].name = name
    header = plane.SerializeToString()
    c = allocator_columns(n_events, steps, leak_bytes, seed)
    n = len(c["time_ps"])
    events = encode_events(
        np.where(c["is_allocation"], ALLOC_META, FREE_META),
        c["time_ps"],
        np.zeros(n, np.int64),
        {
            sid["index_on_host"]: np.zeros(n, np.int64),
            sid["bytes_reserved"]: np.zeros(n, np.int64),
            sid["bytes_allocated"]: c["bytes_allocated"],
            sid["bytes_available"]: c["bytes_available"],
            sid["peak_bytes_in_use"]: c["peak_bytes_in_use"],
            sid["requested_bytes"]: c["bytes"],
            sid["allocation_bytes"]: c["bytes"],
            sid["addr"]: c["addr"],
        },
    )
    step_numbers = np.arange(steps, dtype=np.int64)
    step_events = encode_events(
        np.full(steps, STEP_META), step_numbers * STEP_PS, np.full(steps, STEP_PS - 1000),
        {sid["step_num"]: step_numbers},
    )  # fmt: skip
    lines = [_line_bytes(1, "train", BASE_NS, step_events), _line_bytes(2, "allocator/1", BASE_NS, events)]
    return _length_prefixed(0x0A, header + b"".join(lines))


def generate(n_events: int, out: Path, steps: int = 100, leak_bytes: int = 0, seed: int = 0) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".partial")
    with open(tmp, "wb") as handle:
        handle.write(allocator_plane(n_events, steps, leak_bytes, seed))
        handle.write(_length_prefixed(0x22, b"benchmark-host"))  # XSpace.hostnames
    tmp.replace(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--leak", type=int, default=0, help="bytes each step keeps alive (0: none)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or DEFAULT_DIR / f"memory_{args.events}" / f"memory_{args.events}.xplane.pb"
    print(generate(args.events, out, args.steps, args.leak))
    return 0


if __name__ == "__main__":
    sys.exit(main())
