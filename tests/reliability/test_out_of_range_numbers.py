"""Numbers out of range (issue 39), on small generated profiles: an XPlane event whose time lies
near 2**63 is dropped and counted in the load warning, and a step marker numbered past int64
(`ProfilerStep#99999999999999999999`) is numbered by its position; never a traceback, never a
numpy RuntimeWarning (the module's warnings filter turns one into a failure)."""

from __future__ import annotations

import json

import pytest

from tests.diagnose.xspace_builder import Op, PlaneBuilder, TpuSteps, tpu_profile
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

# int64's largest value: an event offset near it overflows any sum of times.
NEAR_INT64_MAX = 2**63 - 1_000
MATMUL = Op("fusion.1", "%fusion.1 = bf16[8,8] fusion(...)", "convolution fusion", 1024, 256)


def _damaged_xplane(path):
    """A TPU profile of 5 steps whose `XLA Ops` line gets 2 events with damaged times (generated)."""

    def damaged_line(space):
        plane = PlaneBuilder(space, 100, "/host:CPU")
        ok = plane.metadata("host_work")
        events = [(ok, 0, 1_000_000), (ok, NEAR_INT64_MAX, 1_000_000), (ok, 2_000_000, 2**62)]
        plane.line(1, "python", events, [{"step_num": 1}, {"step_num": 2}, None])

    program = TpuSteps([(MATMUL, 500_000)], steps=5)
    path = tpu_profile(path, program, extra=damaged_line)
    return path


def test_events_with_times_near_2_63_are_dropped_and_counted(tmp_path, capsys):
    path = _damaged_xplane(tmp_path / "damaged.xplane.pb")
    trace = open_trace(path, use_cache=False)
    assert any("2 events" in w and "dropped" in w for w in trace.load_warnings), trace.load_warnings
    for track in trace.tracks():
        if len(track):
            assert int(track.start_ps.min()) >= 0
            assert int((track.start_ps + track.duration_ps).max()) < 2**62
    host = [t for t in trace.tracks() if t.name == "python"]
    assert [len(t) for t in host] == [1]
    analysis = TraceAnalysis(trace)
    assert analysis.report is not None
    for command in ("info", "ops", "diagnose", "overview"):
        assert main([command, str(path), "--json", "--no-cache"]) == 0, command
        json.loads(capsys.readouterr().out)


def _kineto(path, names):
    events = []
    for k, name in enumerate(names):
        events.append({"ph": "X", "cat": "user_annotation", "name": name, "ts": 200 * k, "dur": 100,
                       "pid": 1, "tid": 1})  # fmt: skip
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 200 * k + 10, "dur": 50,
                       "pid": 1, "tid": 1})  # fmt: skip
    path.write_text(json.dumps({"traceEvents": events}))
    return path


@pytest.mark.parametrize(
    "names, numbers",
    [
        (["ProfilerStep#99999999999999999999", "ProfilerStep#100000000000000000000"], [0, 1]),
        (["ProfilerStep#9223372036854775807", "ProfilerStep#99999999999999999999"], [0, 1]),
        (["ProfilerStep#7", "ProfilerStep#8"], [7, 8]),
    ],
)
def test_step_numbers_past_int64_are_numbered_by_position(tmp_path, capsys, names, numbers):
    path = _kineto(tmp_path / "steps.json", names)
    analysis = TraceAnalysis(open_trace(path, use_cache=False))
    assert analysis.steps.number.tolist() == numbers
    # Dropped numbers are counted where the steps are described (every output that names the steps)
    beyond = sum(not -(2**63) <= int(n.split("#")[1]) < 2**63 for n in names)
    said = f"numbered by position: {beyond} marker number(s) beyond the int64 range"
    assert (said in analysis.steps.description) == bool(beyond)
    assert main(["diagnose", str(path), "--json", "--no-cache"]) == 0
    assert "Traceback" not in capsys.readouterr().err
