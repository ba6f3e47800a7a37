"""The JAX CPU pairs with a known cause (recorded once per session, in one subprocess) and the
compare command run in-process."""

from __future__ import annotations

import numpy as np
import pytest

from tests.compare import recordings
from tpuscope.analysis.compare.runs import RunAnalysis, analyze_run
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace


@pytest.fixture(scope="session")
def pair_paths(tmp_path_factory) -> dict:
    """scenario -> path of a real .xplane.pb recorded by JAX on the CPU (see recordings.py)."""
    return recordings.record_all_in_subprocess(tmp_path_factory.mktemp("compare_pairs"))


@pytest.fixture(scope="session")
def machine_paths(tmp_path_factory) -> dict:
    """`machine_base`, `machine_slow` (the same program on a loaded CPU) and `small_extra` -> path
    (see recordings.record_machine_pairs); recorded only by the tests that ask for them."""
    return recordings.record_machine_pairs(tmp_path_factory.mktemp("machine_pairs"))


# `machine_slow` must have had at most 1 / this of the CPU share `machine_base` had while its loop
# ran, or other work than the busy loops decided how much slower it was. Our heuristic: with 2 busy
# loops on its CPU, 4 recordings on this project's shared 2-core machines had 2.7x to 3.8x less.
MIN_SLOWDOWN_BY_LOAD = 1.5


@pytest.fixture
def slowed_machine_paths(machine_paths) -> dict:
    """`machine_paths`, the test skipped (saying why) when the busy loops were not what slowed
    `machine_slow`: e.g. other work shared the CPU while `machine_base` was recorded."""
    (base_cpu, base_wall), (slow_cpu, slow_wall) = recordings.loop_times(
        machine_paths, ["machine_base", "machine_slow"]
    )
    base_share, slow_share = base_cpu / base_wall, slow_cpu / slow_wall
    if base_share < MIN_SLOWDOWN_BY_LOAD * slow_share:
        pytest.skip(
            f"machine_base had {base_share:.2f} of a CPU and machine_slow {slow_share:.2f}: other work "
            "than the busy loops shared the CPU, so how much slower the second was is not known"
        )
    return machine_paths


@pytest.fixture
def uniformly_slowed_machine_paths(slowed_machine_paths) -> dict:
    """`slowed_machine_paths`, the test skipped (saying why) when the load slowed the host's
    wake-ups but not the ops: the tests that hold the cause to "the machine" need every op slower."""
    machine_paths = slowed_machine_paths
    base_busy, slow_busy = (_median_busy_ms(machine_paths[s]) for s in ("machine_base", "machine_slow"))
    if slow_busy < MIN_OP_SLOWDOWN_BY_LOAD * base_busy:
        pytest.skip(
            f"the busy loops slowed machine_slow's steps but not its ops (device busy {base_busy:.2f} -> "
            f"{slow_busy:.2f} ms per step): the scheduler ran each op in one time slice and delayed only "
            "the host's wake-ups, so the recording is not the uniformly slower machine these tests need"
        )
    return machine_paths


# `machine_slow`'s device busy time per step must be at least this multiple of `machine_base`'s:
# the premise of the machine tests is every op slowed by the load. Our heuristic: earlier kernels'
# schedulers interleaved the busy loops with each op (2.7x to 5.8x on this project's 2-core
# machines); a scheduler that gives a short op one whole time slice (Linux's EEVDF, 6.6 and later,
# https://docs.kernel.org/scheduler/sched-eevdf.html) leaves the ops at ~1.0x and delays only the
# host's wake-ups after each sync, which a trace cannot tell from the host's own code.
MIN_OP_SLOWDOWN_BY_LOAD = 1.5


def _median_busy_ms(path) -> float:
    run = analyze_run(TraceAnalysis(open_trace(path, use_cache=False)))
    return float(np.median(run.part_ps("busy"))) / 1e9


@pytest.fixture(scope="session")
def analyzed(pair_paths, request):
    """analyzed(scenario) -> its RunAnalysis (loaded and analyzed once per session)."""
    cache: dict[str, RunAnalysis] = {}

    def get(scenario: str) -> RunAnalysis:
        if scenario not in cache:
            if scenario in recordings.MACHINE_SCENARIOS:
                path = request.getfixturevalue("machine_paths")[scenario]
            else:
                path = pair_paths[scenario]
            cache[scenario] = analyze_run(TraceAnalysis(open_trace(path, use_cache=False)))
        return cache[scenario]

    return get
