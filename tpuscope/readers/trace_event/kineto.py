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
    PYTORCH,
    ROLE_DEVICE,
    ROLE_HOST,
    ROLE_OTHER,
    Dialect,
    EventClass,
    FrameworkClue,
    OpFamily,
    PlaneIdentity,
    Stat,
    TrackKind,
)
from tpuscope.readers.trace_event.build import TrackGroup
from tpuscope.readers.trace_event.parse import TraceEventFile
from tpuscope.readers.trace_event.python_stacks import attach_python_sources

# Categories Kineto writes on GPU streams: the device's own work, its annotations, its syncs.
DEVICE_WORK_CATEGORIES = frozenset({"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset"})
DEVICE_CATEGORIES = DEVICE_WORK_CATEGORIES | {"gpu_user_annotation", "cuda_sync"}
# Categories only Kineto writes: a trace-event file holding one of them is Kineto's.
KINETO_CATEGORIES = DEVICE_CATEGORIES | {"cpu_op", "cuda_runtime", "cuda_driver", "python_function",
                                         "user_annotation", "ac2g"}  # fmt: skip
_GPU_LABEL = re.compile(r"^GPU (\d+)")

_DEVICE_GROUPS = (
    TrackGroup("", TrackKind.DEVICE_OPS),
    TrackGroup(" annotations", TrackKind.DEVICE_OTHER),
    TrackGroup(" syncs", TrackKind.DEVICE_OTHER),
)
_HOST_GROUPS = (TrackGroup("", TrackKind.HOST_THREAD),)
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

    def plane_identity(self, file: TraceEventFile, pid: int | str, categories: set[str]) -> PlaneIdentity:
        label = file.process_labels.get(pid, "")
        m = _GPU_LABEL.match(label)
        if m:
            return PlaneIdentity(ROLE_DEVICE, "GPU", int(m.group(1)))
        if categories & DEVICE_CATEGORIES and isinstance(pid, int):
            return PlaneIdentity(ROLE_DEVICE, "GPU", pid)
        if isinstance(pid, int):
            return PlaneIdentity(ROLE_HOST, "CPU", None)
        return PlaneIdentity(ROLE_OTHER, "", None)

    def plane_name(self, file: TraceEventFile, pid: int | str, identity: PlaneIdentity) -> str:
        if identity.role == ROLE_DEVICE:
            return f"GPU {identity.index}"
        if identity.role == ROLE_HOST:
            process = file.process_names.get(pid, "process")
            return f"{process} (pid {pid})"
        return str(pid)

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
        if identity.role != ROLE_DEVICE:
            return 0
        if category == "gpu_user_annotation":
            return 1
        if category == "cuda_sync":
            return 2
        return 0

    def thread_name(self, file: TraceEventFile, pid: int | str, tid: int | str) -> str:
        name = (file.thread_names.get((pid, tid)) or "").strip()
        if name:
            return name
        return f"stream {tid}" if isinstance(pid, int) and pid in file.process_labels else f"thread {tid}"

    def retype(self, trace: Trace) -> None:
        """Kinds are known from the categories already; once every file's flows are bound, each
        kernel gets the Python source line and stack of the CPU op that launched it."""
        attach_python_sources(trace)

    def name_stats(self, identity: PlaneIdentity, names: list[str], trace: Trace) -> dict[str, StatColumn]:
        """Device planes: each kernel name's category (what `ops --by category` groups by)."""
        if identity.role != ROLE_DEVICE or not names:
            return {}
        categories = [kernel_category(n) for n in names]
        ids = trace.strings.intern_many(list(dict.fromkeys(categories)))
        lookup = dict(zip(dict.fromkeys(categories), ids.tolist(), strict=True))
        values = np.array([lookup[c] for c in categories], dtype=np.int32)
        return {Stat.OP_CATEGORY: StatColumn(Stat.OP_CATEGORY, "str", None, values)}
