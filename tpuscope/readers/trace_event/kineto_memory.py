"""PyTorch's allocator records (`[memory]`) as allocator events the model's memory analysis reads.

With `profile_memory=True`, PyTorch writes one instant record named `[memory]` per allocation and
free of each device's caching allocator, on the thread that asked (pytorch/pytorch
torch/csrc/autograd/profiler_kineto.cpp): `Device Type` (c10::DeviceType: 0 CPU, 1 CUDA, ...),
`Device Id`, `Addr`, `Bytes` (negative for a free) and the allocator's state after the call,
`Total Allocated` and `Total Reserved`. The model reads allocator events the way XProf reads the
BFC allocator's (tpuscope.model.memory: one plane of allocator events, an allocation and a free
event name, the allocator named by a stat). So, before the file is built, each record that carries
the allocator's totals moves to the thread of its allocator on one process, ALLOCATOR_PROCESS; a
free is renamed FREE_EVENT; and three stats are added: the allocator's name (`GPU_0`, `CPU`), the
bytes still free on its device (the device's memory, `deviceProperties[].totalGlobalMem`, less what
is allocated), so that a GPU allocator's capacity is its device's memory, and the framework op the
record was made in (the innermost CPU op around it on its thread, as the TensorBoard plugin's memory
view names an allocation's operator: pytorch/kineto tb_plugin/torch_tb_profiler/profiler/
memory_parser.py), so that the allocations live at a peak name their ops.

In use is `Total Allocated`: PyTorch's `Total Reserved` includes it (memory the caching allocator
holds, allocated or cached), so it is not XProf's "reserved for programs" that adds to it; it stays
on each event. Records without the totals (PyTorch before they were written, e.g. the TensorBoard
plugin's 2021 samples) stay where they are, counted in a note.
"""

from __future__ import annotations

import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.vocabulary import AllocatorNames
from tpuscope.readers.trace_event.native import ARG_FLOAT, ARG_INT, ArgValues
from tpuscope.readers.trace_event.parse import TraceEventFile

MEMORY_EVENT = "[memory]"
FREE_EVENT = "[memory] free"
ALLOCATOR_PROCESS = "PyTorch allocators"
ALLOCATOR_STAT = "allocator"
AVAILABLE_STAT = "bytes_free_on_device"
OP_ARG = "tf_op"  # the arg column that becomes Stat.FRAMEWORK_OP (parse.ARG_COLUMNS)
# c10::DeviceType numbers (pytorch/pytorch c10/core/DeviceType.h) as the model names devices.
DEVICE_KINDS = {0: "CPU", 1: "GPU", 6: "GPU", 12: "XPU", 15: "HPU", 19: "MTIA", 20: "PrivateUse1"}
_CPU = 0

KINETO_ALLOCATOR_NAMES = AllocatorNames(
    plane=ALLOCATOR_PROCESS,
    allocation_event=MEMORY_EVENT,
    deallocation_event=FREE_EVENT,
    allocator_name_stat=ALLOCATOR_STAT,
    allocator_index_stats=(),
    bytes_reserved_stat="",
    bytes_allocated_stat="Total Allocated",
    bytes_available_stat=AVAILABLE_STAT,
    fragmentation_stat="",
    peak_bytes_in_use_stat="",
    requested_bytes_stat="",
    allocation_bytes_stat="Bytes",
    address_stat="Addr",
    shape_stat="",
)


def gather_allocator_records(file: TraceEventFile, op_categories: frozenset[str] = frozenset()) -> int:
    """Moves the `[memory]` records that carry the allocator's totals onto their allocators'
    threads (module docstring); returns how many `[memory]` records lack the totals."""
    events = file.events
    if MEMORY_EVENT not in events.names:
        return 0
    memory = np.flatnonzero(events.name == events.names.index(MEMORY_EVENT))
    allocated = _numbers(file, "total_allocated", memory)
    with_totals = np.isfinite(allocated)
    rows = memory[with_totals]
    if not len(rows):
        return len(memory)
    if OP_ARG not in events.args:
        ops = _enclosing_ops(file, rows, op_categories)
        named = ops >= 0
        events.args[OP_ARG] = (rows[named], [events.names[int(n)] for n in events.name[ops[named]]])
    kind = _numbers(file, "device_type", rows)
    index = _numbers(file, "device_id", rows)
    names = [_allocator_name(k, i) for k, i in zip(kind.tolist(), index.tolist(), strict=True)]
    distinct = list(dict.fromkeys(names))
    thread_of = {}
    for name in distinct:
        thread = (ALLOCATOR_PROCESS, name)
        thread_of[name] = len(events.threads)
        events.threads.append(thread)
        file.thread_names[thread] = f"{name} allocator"
    events.thread = events.thread.copy()  # the C decoder's columns are read-only views
    events.thread[rows] = np.array([thread_of[n] for n in names], np.int64)
    freed = _numbers(file, "allocation_bytes", rows) < 0
    if freed.any():
        events.names.append(FREE_EVENT)
        events.name = events.name.copy()
        events.name[rows[freed]] = len(events.names) - 1
    events.args[ALLOCATOR_STAT] = (rows, names)
    capacity = _device_memory(file, kind, index)
    known = np.isfinite(capacity)
    free = (capacity[known] - allocated[with_totals][known]).astype(np.int64)
    events.args[AVAILABLE_STAT] = (rows[known], free.tolist())
    return int(len(memory) - len(rows))


def _enclosing_ops(file: TraceEventFile, rows: np.ndarray, op_categories: frozenset[str]) -> np.ndarray:
    """Per record at `rows`: the innermost event of an `op_categories` category that covers its time on
    its thread, -1 none. One pass per thread over its ops and records in time order (a stack of
    the ops open at each time: complete events nest on a thread)."""
    events = file.events
    out = np.full(len(rows), -1, np.int64)
    wanted = [k for k, c in enumerate(events.categories) if c in op_categories]
    if not wanted:
        return out
    is_op = order_statistics.isin(events.category, wanted)
    for thread in order_statistics.sorted_distinct(events.thread[rows]).tolist():
        ops = np.flatnonzero(is_op & (events.thread == thread))
        if not len(ops):
            continue
        mine = np.flatnonzero(events.thread[rows] == thread)
        order = np.lexsort((-events.dur_us[ops], events.ts_us[ops]))
        ops = ops[order]
        starts, ends = events.ts_us[ops].tolist(), (events.ts_us[ops] + events.dur_us[ops]).tolist()
        times = events.ts_us[rows[mine]]
        by_time = np.argsort(times, kind="stable")
        stack: list[int] = []
        k = 0
        for position, at in zip(mine[by_time].tolist(), times[by_time].tolist(), strict=True):
            while k < len(starts) and starts[k] <= at:
                while stack and ends[stack[-1]] <= starts[k]:
                    stack.pop()
                stack.append(k)
                k += 1
            while stack and ends[stack[-1]] < at:
                stack.pop()
            if stack:
                out[position] = ops[stack[-1]]
    return out


def _allocator_name(kind: float, index: float) -> str:
    if not np.isfinite(kind) or int(kind) == _CPU:
        return "CPU"
    label = DEVICE_KINDS.get(int(kind), f"device type {int(kind)}")
    return f"{label}_{int(index)}" if np.isfinite(index) and index >= 0 else label


def _device_memory(file: TraceEventFile, kind: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Per record: its GPU's memory in bytes (`deviceProperties`), NaN where unknown."""
    out = np.full(len(kind), np.nan)
    for properties in file.device_properties:
        device, size = properties.get("id"), properties.get("totalGlobalMem")
        if isinstance(device, int) and isinstance(size, int):
            out[(kind != _CPU) & (index == device)] = float(size)
    return out


def _numbers(file: TraceEventFile, attribute: str, rows: np.ndarray) -> np.ndarray:
    """An arg's numeric values at event `rows` (NaN where absent or not a number)."""
    out = np.full(len(rows), np.nan)
    found = file.events.args.get(attribute)
    if found is None:
        return out
    arg_rows, values = found
    if isinstance(values, ArgValues):
        numbers = values.numbers()
        numeric = order_statistics.isin(values.kind, (ARG_INT, ARG_FLOAT))
    else:
        numbers = np.array([v if type(v) in (int, float) else np.nan for v in values], np.float64)
        numeric = np.isfinite(numbers)
    numbers = np.where(numeric, numbers, np.nan)
    at = np.searchsorted(arg_rows, rows)
    hit = (at < len(arg_rows)) & (arg_rows[np.minimum(at, len(arg_rows) - 1)] == rows)
    out[hit] = numbers[at[hit]]
    return out
