"""Every command stays fast on the shapes a fuzzer found quadratic (issue 39; generated data,
tests/degenerate/profiles.py): 20,000 identical ops, nesting 20,000 deep, shared timestamps, zero
durations and a staircase of overlaps, as an XSpace and as a PyTorch profiler JSON.

Each command runs in-process (`tpuscope.cli.main`) with a generous time bound: the linear code takes
well under a second per file here (the quadratic self time took 1.2 s on the 20,000-deep file and
16 s on 80,000 identical ops); the self-time kernel alone meets ten times as many events, minutes
for the quadratic code. The ops table must also be right: an op's self time on a line of one op
is the line's busy time, however its events repeat or nest."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from tests.degenerate.profiles import SHAPES, write_all
from tpuscope.analysis.ops import self_times
from tpuscope.cli import main

COMMANDS = ("info", "ops", "overview", "diagnose", "memory")
# Shapes whose events nest or coincide: their self times tile the line (sum to the time covered). A
# staircase's events overlap without nesting; `self_times` subtracts only nested events' time there.
TILING_SHAPES = ("repeated", "deeply_nested", "shared_timestamps", "zero_durations")
SECONDS_PER_COMMAND = 5.0  # a bound for slow shared machines; the linear code takes well under 1 s


@pytest.fixture(scope="module")
def profiles(tmp_path_factory) -> list[Path]:
    return write_all(tmp_path_factory.mktemp("degenerate"))


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_reads_each_degenerate_profile_in_bounded_time(profiles, command, capsys):
    slow = []
    for profile in profiles:
        began = time.perf_counter()
        code = main([command, str(profile), "--json", "--no-cache"])
        took = time.perf_counter() - began
        out = capsys.readouterr().out
        assert code == 0, f"{command} {profile.name} exited {code}"
        json.loads(out)  # one whole JSON document
        if took > SECONDS_PER_COMMAND:
            slow.append(f"{profile.name}: {took:.1f} s")
    assert not slow, f"{command} took over {SECONDS_PER_COMMAND} s on {slow}"


def test_self_time_of_one_op_is_its_lines_busy_time_however_its_events_repeat_or_nest(profiles, capsys):
    for profile in profiles:
        if not profile.name.startswith(TILING_SHAPES):
            continue
        assert main(["ops", str(profile), "--json", "--no-cache"]) == 0
        table = json.loads(capsys.readouterr().out)
        (row,) = table["rows"]
        assert row["self_time_us"] == pytest.approx(table["busy_time_us"], abs=1e-6), profile.name
        if "zero_durations" not in profile.name:
            assert table["busy_time_us"] > 0, profile.name


# Ten times the file's events, straight into the self-time kernel: the quadratic version took about
# 16 s for 80,000 identical ops, so this size would take minutes; the linear one takes milliseconds.
KERNEL_EVENTS = 200_000


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_self_times_is_linear_in_the_events_of_a_degenerate_line(shape):
    events = np.array(SHAPES[shape](KERNEL_EVENTS), dtype=np.int64)
    start, duration = events[:, 0], events[:, 1]
    began = time.perf_counter()
    own = self_times(start, duration)
    took = time.perf_counter() - began
    assert took < SECONDS_PER_COMMAND, f"{took:.1f} s for {len(start)} events"
    assert (own >= 0).all() and (own <= duration).all()
    if shape not in TILING_SHAPES:
        return
    # Self times tile the line: their sum is the time some event covers (the union of the events).
    order = np.argsort(start, kind="stable")
    reach = np.maximum.accumulate(start[order] + duration[order])
    gaps = np.maximum(start[order][1:] - reach[:-1], 0)
    union = int(reach[-1] - start[order][0] - gaps.sum())
    assert int(own.sum()) == union
