"""Memory in use per allocator as timeline counter tracks (no pyqtgraph: the loader builds them)."""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.memory.over_time import AllocatorMemory
from tpuscope.analysis.memory.report import ALLOCATORS
from tpuscope.analysis.results import Result, ResultSource
from tpuscope.model.units import format_bytes
from tpuscope.ui.timeline.counters import CounterSeries


def memory_counter_series(allocators: list[AllocatorMemory]) -> list[CounterSeries]:
    """Memory in use per allocator as timeline counter tracks, peak marked, capacity as the ceiling."""
    several_hosts = len({a.host for a in allocators}) > 1
    series = []
    for allocator in allocators:
        where = f"{allocator.host}: " if several_hosts else ""
        series.append(
            CounterSeries(
                key=f"memory/{allocator.host}/{allocator.id}",
                label=f"{where}memory in use, allocator {allocator.id}",
                time_ps=allocator.time_ps,
                values=allocator.in_use.astype(np.float64),
                unit="bytes",
                tooltip=(
                    f"Allocator {allocator.id}: peak in profile "
                    f"{format_bytes(allocator.peak_in_profile_bytes)}, "
                    f"capacity {format_bytes(allocator.capacity_bytes)}"
                ),
                ceiling=float(allocator.capacity_bytes) if allocator.capacity_bytes else None,
                peak_index=allocator.peak_point,
            )
        )
    return series


def _memory_counters(analysis: ResultSource) -> list[CounterSeries]:
    return memory_counter_series(analysis.get(ALLOCATORS))


# The timeline's memory counters, a shared result (computed once per trace, off the UI thread).
MEMORY_COUNTERS: Result[list[CounterSeries]] = Result("memory_counters", _memory_counters)
