"""PyTorch profiler (Kineto) JSON, mapped onto the model's vocabulary.

What Kineto writes (pytorch/kineto libkineto/src/output_json.cpp; the traces of
facebookresearch/HolisticTraceAnalysis tests/data): one process per host process with one
thread per OS thread (`cpu_op`, `user_annotation`, `python_function`, `cuda_runtime`,
`cuda_driver` events), one process per GPU (pid = device index, `process_labels` "GPU N") with
one thread per CUDA/HIP stream (`kernel`, `gpu_memcpy`, `gpu_memset`, `gpu_user_annotation`,
`cuda_sync`), `ac2g` flows from each launch to its kernel, `ProfilerStep#N` annotations per
step, and top-level `deviceProperties` and `distributedInfo` (rank, world size).
"""

from __future__ import annotations

import re

import numpy as np

from tpuscope.model.stats import StatColumn
from tpuscope.model.trace import Trace
from tpuscope.model.vocabulary import (
    OTHER_PLANE,
    PYTORCH,
    ROLE_DEVICE,
    ROLE_HOST,
    Dialect,
    EventClass,
    FrameworkClue,
    OpFamily,
    PlaneIdentity,
    Stat,
    TrackKind,
)
from tpuscope.readers.trace_event.build import TrackGroup
from tpuscope.readers.trace_event.framework_ops import attach_framework_ops
from tpuscope.readers.trace_event.kineto_memory import (
    KINETO_ALLOCATOR_NAMES,
    MEMORY_EVENT,
    gather_allocator_records,
)
from tpuscope.readers.trace_event.parse import TraceEventFile
from tpuscope.readers.trace_event.python_stacks import attach_python_sources

# What each Kineto record is, by its category (pytorch/kineto libkineto/include/ActivityType.h; the
# 2020-21 spellings `Kernel`/`Memcpy`/`Memset`/`Runtime`/`Operator` from libkineto/src/output_json.cpp
# before pytorch/kineto 6f9c0eef and 1679e50e). Device work is what a device executed: kernels, copies
# and memsets (and MTIA's `mtia_ccp_events`), wherever its pid points. Everything else is the host's
# or a note about the device: a plane is a device only if it holds device work, so that Python-tracer
# frames Kineto gives pid 0 / tid 0 (pytorch/pytorch PR #149757, the "GPU 0" process) stay host records.
DEVICE_WORK_CATEGORIES = frozenset(
    {"kernel", "gpu_memcpy", "gpu_memset", "mtia_ccp_events", "Kernel", "Memcpy", "Memset"}
)
DEVICE_ANNOTATION_CATEGORIES = frozenset({"gpu_user_annotation"})
DEVICE_SYNC_CATEGORIES = frozenset({"cuda_sync"})
# The CUPTI range profiler's counter ranges (libkineto/src/CuptiRangeProfiler.cpp): metric values
# over synthetic, evenly split times, not work: a counter track.
COUNTER_RANGE_CATEGORIES = frozenset({"cuda_profiler_range"})
# The framework's own ops (aten ops, autograd nodes), which launch the device work.
CPU_OP_CATEGORIES = frozenset({"cpu_op", "Operator"})
# The model's structure around those ops: `record_function` ranges, and the `nn.Module: Name_0` calls
# PyTorch's Python tracer records (torch/csrc/profiler/python/init.cpp; `with_modules`/`with_stack`).
SCOPE_RECORDS = (
    (frozenset({"user_annotation"}), ""),
    (frozenset({"python_function"}), r"^nn\.Module: "),
)
MODULE_PREFIX = "nn.Module: "  # written without it in the name scope: `Linear_0`, as the module is named
# Kineto writes its "Record Window End" marker with an empty pid and tid: its group and track are
# named for what they hold, not left blank (issue 37: a nameless group holding a track "thread ").
NO_PROCESS_NAME = "Trace markers"
NO_THREAD_NAME = "markers"
DEVICE_CATEGORIES = DEVICE_WORK_CATEGORIES | DEVICE_ANNOTATION_CATEGORIES | DEVICE_SYNC_CATEGORIES
# Categories only Kineto writes: a trace-event file holding one of them is Kineto's.
KINETO_CATEGORIES = DEVICE_CATEGORIES | COUNTER_RANGE_CATEGORIES | {
    "cpu_op", "cuda_runtime", "cuda_driver", "python_function", "user_annotation", "ac2g",
    "mtia_runtime", "xpu_runtime", "privateuse1_runtime", "privateuse1_driver",
}  # fmt: skip
# The metadata stat holding each host event name's Kineto category (what tells an op from a launch).
CATEGORY_STAT = "kineto_category"
# Kineto labels each device process `<kind> <index>` (output_json.cpp `process_labels`: "GPU 0";
# other backends their own kind, e.g. MTIA, XPU, HPU); "CPU" is the host process's label.
_DEVICE_LABEL = re.compile(r"^(?P<kind>[A-Za-z][\w]*) (?P<index>\d+)")
_HOST_LABEL = "CPU"
# The device kind when the label says none: MTIA's own work category, else a GPU.
_KIND_OF_WORK = (("mtia_ccp_events", "MTIA"),)

_DEVICE_GROUPS = (
    TrackGroup("", TrackKind.DEVICE_OPS),
    TrackGroup(" annotations", TrackKind.DEVICE_OTHER),
    TrackGroup(" syncs", TrackKind.DEVICE_OTHER),
    TrackGroup(" counter ranges", TrackKind.COUNTER),
    TrackGroup("", TrackKind.OTHER),  # host records on a device's pid (module docstring)
)
_DEVICE_GROUP_OF = {
    **dict.fromkeys(DEVICE_WORK_CATEGORIES, 0),
    **dict.fromkeys(DEVICE_ANNOTATION_CATEGORIES, 1),
    **dict.fromkeys(DEVICE_SYNC_CATEGORIES, 2),
    **dict.fromkeys(COUNTER_RANGE_CATEGORIES, 3),
}
_HOST_RECORDS = 4
_HOST_GROUPS = (TrackGroup("", TrackKind.HOST_THREAD), TrackGroup(" counter ranges", TrackKind.COUNTER))
_OTHER_GROUPS = (TrackGroup("", TrackKind.OTHER),)

# Host calls that launch device work (CUDA runtime/driver, HIP): torch.cuda launches and async copies.
LAUNCH_PATTERN = (
    r"^(cudaLaunchKernel\w*|cuLaunchKernel\w*|cudaLaunchCooperativeKernel\w*|cudaGraphLaunch\w*"
    r"|cudaMemcpyAsync|cudaMemsetAsync|hipLaunchKernel\w*|hipModuleLaunchKernel|hipExtModuleLaunchKernel"
    r"|hipExtLaunchKernel\w*|hipGraphLaunch|hipMemcpyAsync|hipMemsetAsync)$"
)
# Host calls that block until the device is done: stream/device/event syncs, blocking copies, and
# the aten ops behind `tensor.item()` / `.cpu()` (PyTorch docs, "CUDA semantics: asynchronous execution").
SYNC_PATTERN = (
    r"^(cudaStreamSynchronize|cudaDeviceSynchronize|cudaEventSynchronize|cudaMemcpy|cuStreamSynchronize"
    r"|cuCtxSynchronize|hipStreamSynchronize|hipDeviceSynchronize|hipEventSynchronize|hipMemcpy"
    r"|aten::item|aten::_local_scalar_dense)$"
)
STEP_PATTERN = r"^ProfilerStep#(\d+)$"
# Input work: host-to-device copies through the CUDA/HIP runtime and driver calls that name their direction.
INPUT_PATTERN = r"^(hipMemcpyHtoD\w*|cuMemcpyHtoD\w*|cudaMemcpy\w*HtoD\w*)$"
# torch.compile's compilation (torch/_dynamo/convert_frame.py, torch/_inductor/compile_fx.py record these).
COMPILE_PATTERN = (
    r"^(TorchDynamo Cache Lookup|Torch-Compiled Region: \d+/\d+|compile_fx\w*|_compile\.compile_inner)$"
)
COMPILE_FRAMEWORK_PATTERN = r"^(compile_fx\w*|_compile\.compile_inner)$"

# The kernel categories (`kernel_category`) as neutral op families. Communication and memory kernels as HTA
# classifies them (facebookresearch/HolisticTraceAnalysis, hta/utils/utils.py `get_kernel_type`:
# NCCL kernels are COMMUNICATION, Memcpy/Memset MEMORY); compute kernels split further by kind.
KERNEL_OP_FAMILIES = (
    (r"collective$", OpFamily.COLLECTIVE),
    (r"(memcpy|memset)\b", OpFamily.MEMCPY),
    (r"(gemm|convolution|attention)$", OpFamily.MATMUL),
    (r"(reduction|normalization|softmax)$", OpFamily.REDUCTION),
    (r"elementwise$", OpFamily.ELEMENTWISE),
    (r"data movement$", OpFamily.DATA_MOVEMENT),
)

KINETO_DIALECT = Dialect(
    name="PyTorch profiler",
    event_patterns=(
        (EventClass.NUMBERED_STEP, STEP_PATTERN),
        (EventClass.LAUNCH, LAUNCH_PATTERN),
        (EventClass.SYNC, SYNC_PATTERN),
        (EventClass.INPUT, INPUT_PATTERN),
        (EventClass.COMPILE, COMPILE_FRAMEWORK_PATTERN),
        (EventClass.COMPILE_FRAMEWORK, COMPILE_FRAMEWORK_PATTERN),
    ),
    framework_clues=(
        FrameworkClue(PYTORCH, r"^(aten::|ProfilerStep#|autograd::)", "PyTorch ops", decisive=True),
    ),
    default_framework=PYTORCH,
    step_number=STEP_PATTERN,
    op_families=KERNEL_OP_FAMILIES,
    allocator_names=KINETO_ALLOCATOR_NAMES,
)

# Kernel categories from kernel names (our heuristic: the library and op words kernel names carry,
# e.g. cuBLAS/CUTLASS `gemm`, cuDNN `conv`, NCCL `ncclDevKernel_AllReduce`, ATen `elementwise`).
_KERNEL_CATEGORIES = (
    (re.compile(r"nccl|rccl", re.I), "collective"),
    (re.compile(r"^Memcpy (\w+)", re.I), "memcpy"),
    (re.compile(r"^Memset", re.I), "memset"),
    (re.compile(r"flash|fmha|attention|attn", re.I), "attention"),
    (re.compile(r"conv|cudnn|winograd|implicit_gemm|dgrad|wgrad", re.I), "convolution"),
    (re.compile(r"gemm|matmul|cublas|cutlass|\bmm\b|_mm_|sgemm|hgemm|xmma|Cijk_", re.I), "gemm"),
    (re.compile(r"softmax", re.I), "softmax"),
    (re.compile(r"norm", re.I), "normalization"),
    # Inductor names its Triton kernels by kind: triton_poi_ (pointwise), triton_red_ and triton_per_
    # (reductions) (pytorch/pytorch, torch/_inductor/codegen/triton.py).
    (re.compile(r"reduce|reduction|sum_kernel|mean|triton_red_|triton_per_", re.I), "reduction"),
    (re.compile(r"elementwise|vectorized|unrolled|pointwise|triton_poi", re.I), "elementwise"),
    (re.compile(r"copy|cat_|index|gather|scatter|transpose|permute", re.I), "data movement"),
)


def kernel_category(name: str) -> str:
    for pattern, category in _KERNEL_CATEGORIES:
        m = pattern.search(name)
        if m:
            if category == "memcpy" and m.groups():
                return f"memcpy {m.group(1)}"
            return category
    return "other kernel"


def is_kineto(file: TraceEventFile) -> bool:
    """Kineto's own top-level keys, or its categories on the events."""
    if file.schema_version is not None or file.device_properties or file.distributed_info:
        return True
    return any(c in KINETO_CATEGORIES for c in file.events.categories)


class KinetoMapping:
    name = "kineto"
    dialect = KINETO_DIALECT

    def host_name(self, file: TraceEventFile) -> str:
        rank = file.distributed_info.get("rank")
        if isinstance(rank, int):
            return f"rank {rank}"
        name = file.path.name
        for suffix in (".gz", ".json", ".trace", ".pt"):
            name = name.removesuffix(suffix)
        return name

    def __init__(self) -> None:
        self._memory_without_totals = 0
        # Processes Kineto labels as a device whose records hold no device work we read: label -> categories.
        self._unread_devices: dict[str, set[str]] = {}

    def prepare(self, file: TraceEventFile) -> None:
        unify_thread_ids(file)
        self._memory_without_totals += gather_allocator_records(file, CPU_OP_CATEGORIES)

    def plane_identity(self, file: TraceEventFile, pid: int | str, categories: set[str]) -> PlaneIdentity:
        """A device only where the process holds device work (module docstring), its kind and
        index from Kineto's label, else from the pid; a process with no device work is a host."""
        label = file.process_labels.get(pid, "")
        m = _DEVICE_LABEL.match(label)
        if not categories & DEVICE_WORK_CATEGORIES:
            if m is not None and m["kind"] != _HOST_LABEL:
                self._unread_devices.setdefault(label, set()).update(categories)
            return PlaneIdentity(ROLE_HOST, "CPU", None) if isinstance(pid, int) else OTHER_PLANE
        if m is not None and m["kind"] != _HOST_LABEL:
            return PlaneIdentity(ROLE_DEVICE, m["kind"], int(m["index"]))
        if not isinstance(pid, int):
            return OTHER_PLANE
        kind = next((k for category, k in _KIND_OF_WORK if category in categories), "GPU")
        return PlaneIdentity(ROLE_DEVICE, kind, pid)

    def plane_name(self, file: TraceEventFile, pid: int | str, identity: PlaneIdentity) -> str:
        if identity.role == ROLE_DEVICE:
            return f"{identity.kind} {identity.index}"
        if identity.role == ROLE_HOST:
            process = file.process_names.get(pid, "process")
            return f"{process} (pid {pid})"
        return str(pid).strip() or NO_PROCESS_NAME

    def plane_stats(self, file: TraceEventFile, identity: PlaneIdentity) -> dict[str, object]:
        if identity.role != ROLE_DEVICE:
            return {}
        for properties in file.device_properties:
            if properties.get("id") == identity.index and isinstance(properties.get("name"), str):
                stats: dict[str, object] = {"device_type_string": properties["name"]}
                for key in ("totalGlobalMem", "numSms", "computeMajor", "computeMinor"):
                    if isinstance(properties.get(key), int):
                        stats[key] = properties[key]
                return stats
        return {}

    def groups(self, identity: PlaneIdentity) -> tuple[TrackGroup, ...]:
        if identity.role == ROLE_DEVICE:
            return _DEVICE_GROUPS
        return _HOST_GROUPS if identity.role == ROLE_HOST else _OTHER_GROUPS

    def group_of(self, identity: PlaneIdentity, category: str) -> int:
        if identity.role == ROLE_DEVICE:
            return _DEVICE_GROUP_OF.get(category, _HOST_RECORDS)
        if identity.role == ROLE_HOST and category in COUNTER_RANGE_CATEGORIES:
            return 1
        return 0

    def thread_name(self, file: TraceEventFile, pid: int | str, tid: int | str) -> str:
        name = (file.thread_names.get((pid, tid)) or "").strip()
        if name:
            return name
        if not str(tid).strip():
            return NO_THREAD_NAME
        return f"stream {tid}" if isinstance(pid, int) and pid in file.process_labels else f"thread {tid}"

    def retype(self, trace: Trace) -> None:
        """Kinds are known from the categories already; once every file's flows are bound, each
        kernel gets the CPU op that launched it (its framework op and the ops around it) and the
        Python source line and stack of that op."""
        attach_framework_ops(
            trace, CATEGORY_STAT, CPU_OP_CATEGORIES, SCOPE_RECORDS, STEP_PATTERN, MODULE_PREFIX
        )
        attach_python_sources(trace)
        if self._unread_devices and not trace.device_planes():
            trace.warnings.append(_unread_devices_sentence(self._unread_devices))
        if self._memory_without_totals:
            trace.warnings.append(
                f"{self._memory_without_totals:,} `{MEMORY_EVENT}` records carry no `Total Allocated` "
                "(written by an older PyTorch): memory over time cannot be read from them."
            )

    def name_stats(
        self, identity: PlaneIdentity, names: list[str], categories: list[str], trace: Trace
    ) -> dict[str, StatColumn]:
        """Device planes: each kernel name's category (what `ops --by category` groups by); host
        planes: each name's Kineto category (what tells the ops from the launches)."""
        if not names:
            return {}
        if identity.role != ROLE_DEVICE:
            return {CATEGORY_STAT: _string_stat(CATEGORY_STAT, categories, trace)}
        return {Stat.OP_CATEGORY: _string_stat(Stat.OP_CATEGORY, [kernel_category(n) for n in names], trace)}


def _unread_devices_sentence(unread: dict[str, set[str]]) -> str:
    """Names the device kind a trace records and what it holds instead of device work."""
    labels = ", ".join(sorted(unread))
    categories = ", ".join(sorted({c or "(none)" for cats in unread.values() for c in cats}))
    work = ", ".join(sorted(DEVICE_WORK_CATEGORIES))
    return (
        f"The trace labels {labels} as a device, but its records there ({categories}) are none of the "
        f"device work the PyTorch profiler writes ({work}): no device ops to show."
    )


def _string_stat(name: str, texts: list[str], trace: Trace) -> StatColumn:
    distinct = list(dict.fromkeys(texts))
    lookup = dict(zip(distinct, trace.strings.intern_many(distinct).tolist(), strict=True))
    return StatColumn(name, "str", None, np.array([lookup[t] for t in texts], dtype=np.int32))


def unify_thread_ids(file: TraceEventFile) -> None:
    """One thread per (pid, tid): Kineto's 2021 writer gave a host thread's events a string tid
    ("25738") and its flow starts and memory records a number (25738) (the TensorBoard plugin's
    samples, pytorch/kineto tb_plugin/samples), so a launch flow started on no event. Decimal
    string tids become numbers; ids of threads merged this way are renumbered in place."""
    threads = file.events.threads
    canonical = [(pid, _as_number(tid)) for pid, tid in threads]
    if canonical == threads:
        return
    merged = list(dict.fromkeys(canonical))
    position = {thread: k for k, thread in enumerate(merged)}
    renumber = np.array([position[t] for t in canonical], dtype=np.int64)
    file.events.threads = merged
    file.events.thread = renumber[file.events.thread]
    file.flows.thread = renumber[file.flows.thread]
    for (pid, tid), name in list(file.thread_names.items()):
        file.thread_names.setdefault((pid, _as_number(tid)), name)


_MAX_TID_DIGITS = 18  # below 2**63: a number int64 holds


def _as_number(tid: int | str) -> int | str:
    if isinstance(tid, str) and tid.isascii() and tid.isdigit() and len(tid) <= _MAX_TID_DIGITS:
        return int(tid)
    return tid
