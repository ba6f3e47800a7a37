"""Real Kineto traces with Python frames for the tests: a real GPU trace whose CPU ops are given the
real Python frames of a real recording.

No machine here records a GPU trace, and the GPU traces of the shared folder were recorded without
`with_stack`. So the tests graft, minimally: `data/torch_cpu_with_stack.json.gz` (recorded with
torch 2.14 by `data/record_torch_with_stack.py`) holds the `python_function` events around its model's
`aten::conv2d` and `aten::linear`; each `aten::conv2d` and `aten::linear` of the real A100 AlexNet
trace gets a copy of those events (names and args as recorded, Python ids renumbered), placed to
enclose it on its thread. Its launches, flows and kernels stay as recorded, so a kernel reaches its
Python line exactly as in a trace recorded with `with_stack=True` on a GPU.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

from tests.readers.trace_event.conftest import A100

DATA = Path(__file__).parent / "data"
RECORDING = DATA / "torch_cpu_with_stack.json.gz"
RECORDER = DATA / "record_torch_with_stack.py"
RECORDED_FILE = RECORDER.name  # as the frames name it (recorded from its folder)
# Each grafted frame starts this much (in the trace's microseconds) before the one inside it and ends
# as much after: a quarter is the finest step float64 holds at the A100 trace's timestamps (~1.7e15).
MARGIN_US = 0.25
GRAFTED_OPS = ("aten::conv2d", "aten::linear")


def marked_line(marker: str) -> int:
    """The line of the recorder holding `marker` (CONV_LINE, LINEAR_LINE)."""
    lines = RECORDER.read_text().splitlines()
    return next(k for k, line in enumerate(lines, 1) if line.rstrip().endswith(f"# {marker}"))


def load(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def recorded_chain(recording: dict, op_name: str) -> list[dict]:
    """The `python_function` events around the recording's first `op_name`, outermost first."""
    events = [e for e in recording["traceEvents"] if e.get("ph") == "X"]
    op = next(e for e in events if e.get("cat") == "cpu_op" and e["name"] == op_name)
    around = [
        e for e in events
        if e.get("cat") == "python_function" and e["tid"] == op["tid"]
        and e["ts"] <= op["ts"] and e["ts"] + e["dur"] >= op["ts"] + op["dur"]
    ]  # fmt: skip
    return sorted(around, key=lambda e: (e["ts"], -e["dur"]))


def graft(document: dict, chains: dict[str, list[dict]], call_stack: bool = False) -> dict:
    """`document` with each op named in `chains` enclosed by a copy of its chain (or, with
    `call_stack`, carrying the chain's frames as the older `Call stack` arg instead)."""
    out = copy.deepcopy(document)
    added: list[dict] = []
    next_id = 1_000_000
    for record in out["traceEvents"]:
        chain = chains.get(record.get("name", "")) if record.get("cat") == "cpu_op" else None
        if not chain:
            continue
        if call_stack:
            record.setdefault("args", {})["Call stack"] = call_stack_text(chain)
            continue
        ids = {e["args"]["Python id"]: next_id + k for k, e in enumerate(chain)}
        next_id += len(chain)
        for depth, frame in enumerate(chain):
            margin = MARGIN_US * (len(chain) - depth)
            copied = copy.deepcopy(frame)
            copied.update(pid=record["pid"], tid=record["tid"], ts=record["ts"] - margin)
            copied["dur"] = record["dur"] + 2 * margin
            args = copied["args"]
            args["Python id"] = ids[args["Python id"]]
            if "Python parent id" in args:
                args["Python parent id"] = ids.get(args["Python parent id"], 0)
            added.append(copied)
    out["traceEvents"].extend(added)
    return out


def call_stack_text(chain: list[dict]) -> str:
    """The chain's function frames as PyTorch writes a `Call stack`: `file(line): function`, the
    line each is at (its callee's `CallFrom`), innermost first, joined by `;`."""
    frames = []
    for k, event in enumerate(chain):
        if not event["name"].endswith(")") and "(" in event["name"] and "): " in event["name"]:
            file_line, function = event["name"].split("): ", 1)
            file, line = file_line.rsplit("(", 1)
            inner = chain[k + 1] if k + 1 < len(chain) else None
            called = inner["args"].get("CallFrom", "") if inner else ""
            if called.rsplit(":", 1)[0] == file:
                line = called.rsplit(":", 1)[1]
            frames.append(f"{file}({line}): {function}")
    return ";".join(reversed(frames))


def grafted_trace(folder: Path, call_stack: bool = False, edit=None) -> Path:
    """The A100 trace with the recording's frames grafted (see the module docstring), written to
    `folder`; `edit(document)` may damage it further first."""
    recording = load(RECORDING)
    chains = {name: recorded_chain(recording, name) for name in GRAFTED_OPS}
    document = graft(load(A100), chains, call_stack)
    if edit is not None:
        edit(document)
    path = folder / ("call_stack.pt.trace.json.gz" if call_stack else "with_stack.pt.trace.json.gz")
    path.write_bytes(gzip.compress(json.dumps(document).encode()))
    return path
