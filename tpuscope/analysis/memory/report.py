"""Everything a profile says about memory: each program's plan and each allocator over time.

This is what `tpuscope memory`, the Memory tab and the memory rules share: program memory per
program and memory space (HBM first), allocator memory per memory id, and the chip capacity
every peak is measured against.

Each part is a shared result of the trace's `TraceAnalysis` (`PROGRAM_BUFFERS`,
`ALLOCATION_EVENTS`, `ALLOCATORS`, `MEMORY_REPORT` below), computed once and handed to every
rule, view and command that asks; `memory_report` computes a report anew.

Capacity, best source first: the allocator's own total (in use + free, what the runtime can
hand out), else the device plane's `memory_size` stat (GPU), else the chip's HBM from the
datasheet table below.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import TYPE_CHECKING

from tpuscope.analysis.memory.programs import HBM_SPACE, ProgramMemory, memory_spaces, program_memory
from tpuscope.analysis.results import Result
from tpuscope.analysis.trace_results import STEPS
from tpuscope.model.memory import (
    AllocationEvents,
    ProgramBuffers,
    allocation_events,
    device_memory_sizes,
    program_buffers,
)
from tpuscope.model.records import record
from tpuscope.model.trace import Trace

if TYPE_CHECKING:  # an allocator's records load where a host has allocator events (`allocators_of`)
    from tpuscope.analysis.memory.over_time import AllocatorMemory

GIB = 1 << 30
# HBM per chip, Cloud TPU docs per generation (docs.cloud.google.com/tpu/docs/v4, /v5e, /v5p, /v6e,
# /tpu7x: 32, 16, 95, 32 and 192 GiB).
CHIP_HBM_BYTES: dict[str, int] = {
    "v4": 32 * GIB,
    "v5e": 16 * GIB,
    "v5p": 95 * GIB,
    "v6e": 32 * GIB,
    "TPU7x": 192 * GIB,
}
# Allocators that serve one device: a device number (TPU runtimes) or XLA's per-GPU BFC allocator
# (`GPU_0_bfc`); host allocators (`xla_gpu_host_bfc`, TF's `mklcpu`, `cpu`) do not hold HBM.
# Our heuristic, from the names in the TPU v6e, MI300X and TF samples.
_DEVICE_ALLOCATOR = re.compile(r"^(\d+|(GPU|TPU)_\d+(_bfc)?)$")


@record
class MemoryReport:
    """Programs (name order, HBM first per program) and allocators (host, id order)."""

    programs: list[ProgramMemory] = field(default_factory=list)
    allocators: list[AllocatorMemory] = field(default_factory=list)
    capacity_bytes: int | None = None
    capacity_source: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def has_data(self) -> bool:
        return bool(self.programs or self.allocators)

    def program(self, key: str) -> list[ProgramMemory]:
        """The entries of the program named `key` (XProf's `jit_f(123)`, the module name, or the id)."""
        return [p for p in self.programs if key in (p.name, p.module_name, str(p.program_id))]

    def to_json(self) -> dict:
        return {
            "programs": [p.to_json() for p in self.programs],
            "allocators": [a.to_json() for a in self.allocators],
            "capacity_bytes": self.capacity_bytes,
            "capacity_source": self.capacity_source,
            "notes": list(self.notes),
        }


def is_device_allocator(memory_id: str) -> bool:
    return _DEVICE_ALLOCATOR.match(memory_id) is not None


def memory_report(
    trace: Trace,
    steps=None,
    *,
    allocators: list[AllocatorMemory] | None = None,
    programs: dict[int, ProgramBuffers] | None = None,
) -> MemoryReport:
    """The memory report of a trace; `steps` (analysis.steps.Steps), when given, dates each peak.

    `allocators` (`allocators_of`) and `programs` (`program_buffers`) are the caller's when it has
    them already (the shared results below), else computed here.
    """
    report = MemoryReport(allocators=allocators_of(trace, steps) if allocators is None else allocators)
    programs = program_buffers(trace) if programs is None else programs

    report.capacity_bytes, report.capacity_source = _capacity(trace, report.allocators)
    for buffers in sorted(programs.values(), key=lambda b: (b.module_name, b.program_id or 0)):
        for space in memory_spaces(buffers) or [HBM_SPACE]:
            memory = program_memory(buffers, space)
            if space == HBM_SPACE:
                memory.capacity_bytes = report.capacity_bytes
            report.programs.append(memory)
    return report


def allocators_of(
    trace: Trace, steps=None, events: list[AllocationEvents] | None = None
) -> list[AllocatorMemory]:
    """Memory over time of every allocator of every host (vectorized: cheap even at 1M events), from
    `events` (`allocation_events`) when the caller has them."""
    allocators: list[AllocatorMemory] = []
    for host_events in allocation_events(trace) if events is None else events:
        from tpuscope.analysis.memory.over_time import allocators_memory  # ~1.3 ms of import, if any

        allocators.extend(allocators_memory(host_events, trace.strings))
    if steps is not None and len(steps):
        for allocator in allocators:
            allocator.peak_step = _step_at(steps, allocator.peak_time_ps)
    return allocators


def _capacity(trace: Trace, allocators: list[AllocatorMemory]) -> tuple[int | None, str]:
    device = [a for a in allocators if is_device_allocator(a.id) and a.capacity_bytes > 0]
    if device:
        smallest = min(device, key=lambda a: a.capacity_bytes)
        return smallest.capacity_bytes, f"allocator {smallest.id} (in use + free)"
    sizes = [s for s in device_memory_sizes(trace) if s > 0]
    if sizes:
        return min(sizes), "device plane stat memory_size"
    for plane in trace.device_planes():
        from tpuscope.analysis.roofline import chip_of  # its datasheet tables: a device plane's only

        chip = chip_of(plane.device_type)
        if chip is not None:
            return CHIP_HBM_BYTES[chip], f"chip table ({chip} HBM)"
    return None, ""


def _step_at(steps, time_ps: int) -> int | None:
    inside = (steps.start_ps <= time_ps) & (time_ps < steps.end_ps)
    hits = inside.nonzero()[0]
    return int(steps.number[hits[0]]) if len(hits) else None


# The shared results (see the module docstring). The allocators are all the timeline's counters
# need, so that a load does not decode every program's buffer assignment before the first picture.
PROGRAM_BUFFERS: Result[dict[int, ProgramBuffers]] = Result(
    "program_buffers", lambda a: program_buffers(a.trace)
)
ALLOCATION_EVENTS: Result[list[AllocationEvents]] = Result(
    "allocation_events", lambda a: allocation_events(a.trace)
)
ALLOCATORS: Result[list[AllocatorMemory]] = Result(
    "allocators", lambda a: allocators_of(a.trace, a.get(STEPS), a.get(ALLOCATION_EVENTS))
)
MEMORY_REPORT: Result[MemoryReport] = Result(
    "memory_report",
    lambda a: memory_report(
        a.trace, a.get(STEPS), allocators=a.get(ALLOCATORS), programs=a.get(PROGRAM_BUFFERS)
    ),
)
