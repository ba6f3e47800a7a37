"""PyTorch traces recorded with `with_stack=True`: each GPU kernel's source is the innermost user
line of the Python code around the CPU op that launched it, so the op table, `ops --by source` and
the Details dock name the user's lines as they do for XLA programs.

The frames are real (a torch 2.14 recording, `data/record_torch_with_stack.py`); the GPU trace is the
real A100 AlexNet trace given those frames around its convolutions and linears, since no machine here
records a GPU trace (`tests/readers/trace_event/python_frames.py` says how, minimally). The older form,
a `Call stack` arg on the CPU op, is the same frames written as PyTorch writes that arg.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.readers.trace_event.python_frames import (
    RECORDED_FILE,
    RECORDING,
    grafted_trace,
    marked_line,
)
from tpuscope.analysis.device_ops import find_devices
from tpuscope.analysis.ops import NO_SOURCE, op_details_of_event
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.model.vocabulary import Stat, TrackKind
from tpuscope.readers.trace_event.python_stacks import MAX_FRAMES, python_sources

CONV = f"{RECORDED_FILE}:{marked_line('CONV_LINE')}"
LINEAR = f"{RECORDED_FILE}:{marked_line('LINEAR_LINE')}"


@pytest.fixture(scope="module")
def with_stack(tmp_path_factory):
    return grafted_trace(tmp_path_factory.mktemp("with_stack"))


@pytest.fixture(scope="module")
def with_call_stack(tmp_path_factory):
    return grafted_trace(tmp_path_factory.mktemp("call_stack"), call_stack=True)


def _by_source(path, capsys) -> list[dict]:
    assert main(["ops", str(path), "--by", "source", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["rows"]


def test_the_recordings_cpu_ops_are_at_the_lines_that_called_them():
    """On the real recording alone: the frames around each CPU op, CallFrom giving each frame's line."""
    trace = open_trace(RECORDING, use_cache=False)
    (track,) = [t for t in trace.host_tracks() if len(t)]
    names = np.array([track.event_name(i) for i in range(len(track))])
    for op, line in (("aten::convolution", CONV), ("aten::addmm", LINEAR), ("aten::relu", CONV)):
        found = python_sources(track, np.flatnonzero(names == op))
        assert found and all(source == line for source, _ in found), op
        stack = found[0][1].splitlines()  # outermost first
        assert stack[0].endswith("\t<module>")
        assert f"{line}:-1\tforward" in stack
        if op != "aten::relu":  # torch.relu is called from forward itself; the others through torch.nn
            assert stack[-1].startswith("torch/nn/modules/"), "the framework's frames stay in the stack"
    # A Python call is its own innermost frame, at its `def` line where nothing inside says more.
    (module,) = np.flatnonzero(np.char.endswith(names.astype(str), "): <module>"))
    assert python_sources(track, np.array([module]))[0][0] == f"{RECORDED_FILE}:{marked_line('MODULE_LINE')}"


@pytest.mark.parametrize("form", ["python_function", "Call stack"])
def test_kernels_are_on_the_line_of_the_op_that_launched_them(form, with_stack, with_call_stack, capsys):
    path = with_stack if form == "python_function" else with_call_stack
    rows = _by_source(path, capsys)
    names = [r["name"] for r in rows]
    assert set(names) == {CONV, LINEAR, NO_SOURCE}
    by_name = {r["name"]: r for r in rows}
    assert by_name[CONV]["function"] == by_name[LINEAR]["function"] == "forward"
    assert any("cudnn" in op or "implicit_gemm" in op for op in by_name[CONV]["ops"])
    assert any("gemm" in op for op in by_name[LINEAR]["ops"])
    analysis = TraceAnalysis(open_trace(path, use_cache=False))
    per_op, by_line = analysis.op_table("op"), analysis.op_table("source")
    assert int(by_line.self_ps.sum()) == int(per_op.self_ps.sum())  # exactly
    assert int(by_line.occurrences.sum()) == int(per_op.occurrences.sum())

    assert main(["ops", str(path), "--json"]) == 0
    ops = json.loads(capsys.readouterr().out)["rows"]
    conv = next(r for r in ops if "implicit_gemm" in r["name"])
    assert conv["source"] == CONV
    assert conv["stack"][-1].startswith("torch/nn/modules/conv.py:")  # outermost first, as written
    assert f"{CONV}:-1" in conv["stack"]
    assert all(":" in frame for frame in conv["stack"])


def test_a_kernels_details_show_its_python_traceback(with_stack):
    trace = open_trace(with_stack, use_cache=False)
    devices = find_devices(trace)
    track = next(t for t in trace.tracks() if t.kind == TrackKind.DEVICE_OPS and Stat.SOURCE in t.stats)
    index = int(track.stats.column(Stat.SOURCE).rows[0])
    details = op_details_of_event(devices, track, index, None)
    assert details is not None
    assert details.code.source in (CONV, LINEAR)
    line = details.code.source.rsplit(":", 1)[1]
    assert f'File "{RECORDED_FILE}", line {line}, in forward' in details.traceback
    assert details.traceback.splitlines()[1].endswith("in <module>")  # as Python prints it


def test_a_kernel_launched_from_two_lines_counts_on_each(with_stack):
    """One kernel name runs for the convolutions and for other ops: each launch on its own line."""
    analysis = TraceAnalysis(open_trace(with_stack, use_cache=False))
    by_line = analysis.op_table("source")
    folded = {by_line.label(by_line.name[r]): set(by_line.folded_ops[r]) for r in range(len(by_line))}
    shared = folded[CONV] & (folded[NO_SOURCE] | folded[LINEAR])
    assert shared, "the A100 trace launches some kernel from both a grafted and another op"


# Bad input: a partial answer and a note, never an error.


def _drop_flows(document: dict, correlations_too: bool = False) -> None:
    """Every other launch flow gone (both its records); with `correlations_too`, also the correlation
    id its kernel carries, so that nothing ties that kernel to its launch."""
    ids = sorted({r["id"] for r in document["traceEvents"] if r.get("cat") == "ac2g"})
    gone = set(ids[::2])
    document["traceEvents"] = [
        r for r in document["traceEvents"] if not (r.get("cat") == "ac2g" and r["id"] in gone)
    ]
    if correlations_too:
        for record in document["traceEvents"]:
            args = record.get("args") or {}
            if record.get("cat") == "kernel" and args.get("correlation") in gone:
                del args["correlation"]


def _placed(trace) -> int:
    return sum(len(k.stats.column(Stat.SOURCE).rows) for k in trace.tracks() if Stat.SOURCE in k.stats)


def test_kernels_without_a_flow_find_their_launch_by_correlation(tmp_path, with_stack):
    full = open_trace(with_stack, use_cache=False)
    trace = open_trace(grafted_trace(tmp_path, edit=_drop_flows), use_cache=False)
    assert len(trace.flows.source_track) < len(full.flows.source_track)
    assert _placed(trace) == _placed(full) > 0


def test_kernels_tied_to_no_launch_are_left_without_a_line(tmp_path, with_stack, capsys):
    full = open_trace(with_stack, use_cache=False)
    path = grafted_trace(tmp_path, edit=lambda document: _drop_flows(document, correlations_too=True))
    trace = open_trace(path, use_cache=False)
    assert any("have no Python stack" in w for w in trace.warnings)
    assert any("have no Python stack" in w for w in full.warnings)  # backward ops have no frames
    assert 0 < _placed(trace) < _placed(full)
    rows = _by_source(path, capsys)
    assert {r["name"] for r in rows} <= {CONV, LINEAR, NO_SOURCE}


def _break_frames(document: dict) -> None:
    """Parent ids that loop, a CallFrom of the wrong type, a frame that names no file, and Python
    calls that cross each other instead of nesting."""
    frames = [r for r in document["traceEvents"] if r.get("cat") == "python_function"]
    for k, record in enumerate(frames):
        args = record["args"]
        if k % 5 == 0:
            args["Python parent id"] = args["Python id"]  # itself
        elif k % 5 == 1:
            args["CallFrom"] = [1, {"a": 2}]
        elif k % 5 == 2:
            record["name"] = "(12): "
        elif k % 5 == 3:
            record["dur"] = record["dur"] / 3  # ends before what it encloses
        else:
            args["Python id"] = "not a number"


def test_broken_frames_give_what_they_can(tmp_path, capsys):
    path = grafted_trace(tmp_path, edit=_break_frames)
    trace = open_trace(path, use_cache=False)
    assert trace.event_count > 0
    rows = _by_source(path, capsys)
    assert sum(r["self_time_us"] for r in rows) > 0
    assert all(r["name"] == NO_SOURCE or r["name"].startswith(RECORDED_FILE) for r in rows)


@pytest.mark.parametrize("value", [12, ["a.py(1): f"], {"a": 1}, "", "no frames here", ";;;", None])
def test_a_call_stack_of_the_wrong_type_or_text(tmp_path, value, capsys):
    def edit(document: dict) -> None:
        for record in document["traceEvents"]:
            if "Call stack" in record.get("args", {}):
                record["args"]["Call stack"] = value

    path = grafted_trace(tmp_path, call_stack=True, edit=edit)
    trace = open_trace(path, use_cache=False)
    rows = _by_source(path, capsys)
    names = {r["name"] for r in rows}
    assert names == {NO_SOURCE}
    if value not in (None, ""):  # an empty stack is no stack; anything else that names no frame is noted
        assert any("names no `file(line): function` frame" in w for w in trace.warnings)


def test_a_deeper_stack_than_python_allows_is_cut(tmp_path, capsys):
    """A chain of MAX_FRAMES + 50 nested calls (each one's CallFrom its caller's line): the user
    line is still found, the stack holds MAX_FRAMES frames, and nothing recurses."""

    def deepen(document: dict) -> None:
        events = document["traceEvents"]
        op = next(r for r in events if r.get("name") == "aten::linear")
        depth = MAX_FRAMES + 50
        step = 0.25
        for k in range(depth):
            events.append(
                {"ph": "X", "cat": "python_function", "name": f"deep.py({k + 1}): f{k}",
                 "pid": op["pid"], "tid": op["tid"], "ts": op["ts"] - step * (depth - k),
                 "dur": op["dur"] + 2 * step * (depth - k),
                 "args": {"Python id": 5_000_000 + k, "CallFrom": f"deep.py:{k}"}}
            )  # fmt: skip

    path = grafted_trace(tmp_path, edit=deepen)
    rows = _by_source(path, capsys)
    assert LINEAR in {r["name"] for r in rows}
    assert main(["ops", str(path), "--json"]) == 0
    stacks = [r["stack"] for r in json.loads(capsys.readouterr().out)["rows"] if r["source"] == LINEAR]
    assert stacks and all(len(s) <= MAX_FRAMES for s in stacks)
