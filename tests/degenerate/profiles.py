"""Small generated profiles of the shapes a fuzzer found quadratic (issue 39): events that repeat,
nest deep, share timestamps, have no duration or overlap like a staircase. Each shape is written as
an XSpace (a TPU device's op line, as tests/diagnose/xspace_builder.py writes it) and as a PyTorch
profiler JSON (Kineto: a CPU op thread and a GPU stream), so both readers and every command meet it.

`python -m tests.degenerate.profiles FOLDER [EVENTS]` writes them larger, to time the commands.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from benchmarks.generate_xspace import TPU_V6E_PLANE_STATS
from tests.diagnose.xspace_builder import PROGRAM_ID, Op, PlaneBuilder
from tpuscope.readers.xplane import xplane_pb2 as pb

# Events per generated line: far past where the quadratic code took seconds (its cost grew with the
# events times the deepest nesting), small enough that the linear code reads each file well under 1 s.
EVENTS = 20_000
DEEP_NESTING = 20_000  # the depth the issue names
# Kineto's clock in us: small enough that a float holds each ns of the generated times exactly.
KINETO_BASE_US = 1_000_000
MATMUL = Op(
    "fusion.1", "%fusion.1 = f32[128,128]{1,0} fusion(), kind=kOutput", "convolution fusion", 1 << 20, 1 << 16
)

# (start ps, duration ps) of each event of one line, by shape.
Shape = Callable[[int], list[tuple[int, int]]]


def repeated(n: int) -> list[tuple[int, int]]:
    """The same op n times at the same time: each 'contains' all the others."""
    return [(1_000_000, 5_000_000)] * n


def deeply_nested(n: int) -> list[tuple[int, int]]:
    """n events each inside the one before (a recursion n deep)."""
    return [(1_000_000 + 1000 * k, 2000 * (n - k)) for k in range(n)]


def shared_timestamps(n: int) -> list[tuple[int, int]]:
    """Events in groups of 100 that start at one time, of many lengths (each group nests 100 deep)."""
    return [(1_000_000 + 10_000_000 * (k // 100), 1000 * (1 + k % 997)) for k in range(n)]


def zero_durations(n: int) -> list[tuple[int, int]]:
    """n instants at one time, and as many more spread out, all of zero duration."""
    return [(1_000_000, 0)] * n + [(1_000_000 + 1000 * k, 0) for k in range(n)]


def staircase(n: int) -> list[tuple[int, int]]:
    """Events that each start inside the one before and end after it (overlap, never nest): each
    overlaps the next thousand."""
    return [(1_000_000 + 1000 * k, 1_000_000) for k in range(n)]


SHAPES: dict[str, Shape] = {
    "repeated": repeated,
    "staircase": staircase,
    "deeply_nested": deeply_nested,
    "shared_timestamps": shared_timestamps,
    "zero_durations": zero_durations,
}


def xspace(path: Path, events: list[tuple[int, int]]) -> Path:
    """A TPU device whose op line holds `events` (one op), inside one module and one step."""
    space = pb.XSpace()
    plane = PlaneBuilder(space, 1, "/device:TPU:0", TPU_V6E_PLANE_STATS)
    op = plane.op(MATMUL)
    end = max(start + duration for start, duration in events) + 1000
    step = plane.metadata("train_step")
    module = plane.metadata(f"jit_train_step({PROGRAM_ID})")
    plane.line(1, "Steps", [(step, 0, end)], [{"step_num": 0}])
    plane.line(2, "XLA Modules", [(module, 0, end)])
    plane.line(3, "XLA Ops", [(op, start, duration) for start, duration in events])
    space.hostnames.append("generated-host")
    path.write_bytes(space.SerializeToString())
    return path


def kineto(path: Path, events: list[tuple[int, int]]) -> Path:
    """A PyTorch profiler trace: `events` as CPU ops of one thread and as kernels of one GPU stream
    (times in us, as the profiler writes them; a ProfilerStep over all of them)."""
    base_us = KINETO_BASE_US
    end_us = max(start + duration for start, duration in events) / 1e6 + 1
    records = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
                "ts": base_us, "dur": end_us}]  # fmt: skip
    for start, duration in events:
        ts, dur = base_us + start / 1e6, duration / 1e6
        records.append(
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": ts, "dur": dur}
        )
        records.append({"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7,
                        "ts": ts, "dur": dur, "args": {"device": 0, "stream": 7}})  # fmt: skip
    document = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
                "traceEvents": records}  # fmt: skip
    path.write_text(json.dumps(document))
    return path


def write_all(folder: Path, n: int = EVENTS) -> list[Path]:
    """Every shape in both formats, `n` events a line (the deep nesting is DEEP_NESTING deep)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, shape in SHAPES.items():
        events = shape(max(n, DEEP_NESTING) if name == "deeply_nested" else n)
        written.append(xspace(folder / f"{name}.xplane.pb", events))
        written.append(kineto(folder / f"{name}.pt.trace.json", events))
    return written


if __name__ == "__main__":
    for written_path in write_all(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else EVENTS):
        print(written_path)
