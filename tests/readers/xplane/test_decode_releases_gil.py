"""The C loops of the decode (and the model's kernels) let other Python threads run while they work.

That is what lets the line decoders run on several cores, and another thread (an import, the UI)
go on during a load. How it is checked, without timing thresholds: the switch interval is made so
long that a thread holding the GIL is never made to give it up, so a counting thread advances
during a C call only if that call releases the GIL itself. Before the call nothing else can run (the
main thread holds the GIL in Python code); the counter read after the call has moved only if the
counter thread ran while the C code did.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from tests.conftest import TF_TRACE, require_shared_traces
from tpuscope.model import _kernels
from tpuscope.readers.xplane import _linedecode
from tpuscope.readers.xplane.decode import _cut_into_planes

# Calls of the C function tried before concluding that no other thread ever ran during one: the
# counting thread has to be woken by the OS within one call, which a loaded machine may delay.
ATTEMPTS = 200
# Long enough that no thread is made to drop the GIL while this test runs (Python's default: 5 ms).
NEVER_SWITCH_S = 1000.0


def _counter_moves_during(call: Callable[[], object]) -> bool:
    """Whether a counting thread advanced during one of up to ATTEMPTS calls of `call`."""
    count = [0]
    started, stop = threading.Event(), threading.Event()

    def counting() -> None:
        started.set()
        while not stop.is_set():
            count[0] += 1
            time.sleep(0.0005)  # gives the GIL back, so the main thread can take it after the call

    previous = sys.getswitchinterval()
    sys.setswitchinterval(NEVER_SWITCH_S)
    thread = threading.Thread(target=counting, name="counting")
    try:
        thread.start()
        started.wait()
        for _ in range(ATTEMPTS):
            before = count[0]
            call()
            if count[0] != before:
                return True
        return False
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(previous)


def _biggest_line(path) -> memoryview:
    pieces = _cut_into_planes(memoryview(path.read_bytes()), ends_early=False)
    return max((line for lines in pieces.lines for line in lines), key=len)


@pytest.fixture(scope="module")
def line() -> memoryview:
    require_shared_traces()
    return _biggest_line(TF_TRACE)


def test_scanning_a_line_lets_another_thread_run(line):
    header = _linedecode.scan(line)
    assert header[6] > 1000  # a line big enough to be worth decoding on its own thread
    assert _counter_moves_during(lambda: _linedecode.scan(line))


def test_scanning_a_lines_events_lets_another_thread_run(line):
    assert _counter_moves_during(lambda: _linedecode.scan_events(line))


def test_event_depths_let_another_thread_run():
    """sorted_depth over a track as long as a big profile's (2M events, nested in pairs): a call of
    a few milliseconds, so the counting thread has time to be woken during one."""
    start = np.repeat(np.arange(1_000_000, dtype=np.int64) * 100, 2)
    duration = np.tile(np.array([90, 40], np.int64), 1_000_000)
    depth = np.empty(len(start), np.int16)
    assert _counter_moves_during(lambda: _kernels.sorted_depth(start, duration, depth))
    assert depth[:4].tolist() == [0, 1, 0, 1]


def test_the_check_fails_for_code_that_holds_the_gil(line):
    """The check itself can fail: a C call that keeps the GIL (bytes.count walks the line's bytes
    without releasing it) never lets the counter move."""
    data = bytes(line)
    assert not _counter_moves_during(lambda: data.count(b"\x00"))
