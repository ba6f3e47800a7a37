"""XLA's names, as XPlane and the TSL trace JSON spell them, mapped onto the model's vocabulary
(tpuscope.model.vocabulary).

Everything that knows how XLA, the TPU runtime, JAX, PyTorch/XLA and TensorFlow spell things in
an XSpace lives here: plane names (`/device:TPU:3`, `/host:CPU`), line names (`XLA Ops`,
`Steps`), and the host event names of each framework's runtime (dispatch, launch, compile,
device-to-host reads, step markers). Sources: openxla/xla `xla/tsl/profiler/utils/xplane_schema.cc`
(plane, line and stat names), xprof `IsExplicitHostStepMarker` (step markers), and the events
seen in JAX, PyTorch/XLA and TensorFlow captures (tests record JAX ones; samples/README.md).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tpuscope.model.vocabulary import (
    JAX,
    KIND_METADATA,
    OTHER_PLANE,
    PYTORCH_XLA,
    ROLE_DEVICE,
    ROLE_HOST,
    TENSORFLOW,
    AllocatorNames,
    Dialect,
    EventClass,
    FrameworkClue,
    OpFamily,
    PlaneIdentity,
    TrackKind,
)

if TYPE_CHECKING:
    from tpuscope.model.code import ProgramCode
    from tpuscope.model.memory import ProgramBuffers
    from tpuscope.model.programs import ProgramSignature

_DEVICE_NAME = re.compile(r"^/device:([A-Za-z_]+):(\d+)(.*)$")
_HOST_NAME = re.compile(r"^/host:(.+)$")
# SparseCore planes are `/device:TPU:N SparseCore M` (xplane_schema.cc, the SparseCore plane regex).
SPARSECORE_MARK = "SparseCore"

# Device line names (xplane_schema.cc kXlaOpLineName, kSparseCoreOpLineName, kStepLineName, ...).
TPU_OP_LINES = frozenset({"XLA Ops", "Sparse Core Ops"})
_NAMED_DEVICE_LINES = {
    "Steps": TrackKind.DEVICE_STEPS,
    "XLA Modules": TrackKind.DEVICE_MODULES,
    "Async XLA Ops": TrackKind.DEVICE_ASYNC_OPS,
    "_counters_": TrackKind.COUNTER,
}
# Lines on GPU planes that are not kernel streams: derived by XProf or runtime summaries
# (xplane_schema.cc kStepLineName, kXlaModuleLineName, kKernelLaunchLineName, ...).
GPU_NON_STREAM_LINES = frozenset(
    {
        "Steps",
        "XLA Modules",
        "XLA Ops",
        "Async XLA Ops",
        "XLA TraceMe",
        "Framework Ops",
        "Framework Name Scope",
        "Source code",
        "Launch Stats",
        "Host Offload Ops",
        "_counters_",
    }
)


def plane_identity(name: str) -> PlaneIdentity:
    """What an XPlane's name says: `/device:TPU:3` is device kind TPU index 3, `/host:CPU` a host."""
    m = _DEVICE_NAME.match(name)
    if m:
        kind, suffix = m.group(1).upper(), m.group(3).strip()
        sparse_core = kind == "TPU" and SPARSECORE_MARK in suffix
        return PlaneIdentity(ROLE_DEVICE, kind, int(m.group(2)), suffix, sparse_core)
    m = _HOST_NAME.match(name)
    if m:
        return PlaneIdentity(ROLE_HOST, m.group(1), None)
    return OTHER_PLANE


def track_kind(plane: PlaneIdentity, line_name: str) -> TrackKind:
    """What an XLine of a plane holds.

    TPU planes hold their ops on the op lines; GPU (and other device) planes on one line per
    stream, beside lines XProf derives from them (`XLA Ops` there repeats the kernels).
    """
    if plane.role == ROLE_HOST:
        return TrackKind.OTHER if plane.kind == KIND_METADATA else TrackKind.HOST_THREAD
    if plane.role != ROLE_DEVICE:
        return TrackKind.OTHER
    named = _NAMED_DEVICE_LINES.get(line_name)
    if named is not None:
        return named
    if plane.kind == "TPU":
        return TrackKind.DEVICE_OPS if line_name in TPU_OP_LINES else TrackKind.DEVICE_OTHER
    return TrackKind.DEVICE_OTHER if line_name in GPU_NON_STREAM_LINES else TrackKind.DEVICE_OPS


# xprof IsExplicitHostStepMarker: names starting with "train"/"test", or TraceContext.
TF_STEP_MARKER_PATTERN = r"(?i)^(train|test)|^TraceContext$"
JAX_DISPATCH_PATTERN = r"^PjitFunction\((.+)\)$"
# Host events that hand a program (or a kernel) to the device: JAX dispatch, PJRT execute entry
# points, PyTorch/XLA execute, TF TPU execute, GPU kernel launches.
LAUNCH_PATTERN = (
    r"^(PjitFunction\(.*\)|ExecuteReplicated\.__call__|PjRtComputationClient::Execute\w*"
    r"|IfrtComputationClient::Execute\w*|TfrtTpuLoadedExecutable::Execute|PjRtCpuExecutable::Execute\w*"
    r"|PJRT_LoadedExecutable_Execute|PjRtStreamExecutorLoadedExecutable::Execute|TpuExecuteOp"
    r"|hipModuleLaunchKernel|hipExtModuleLaunchKernel|cudaLaunchKernel\w*|cuLaunchKernel\w*)$"
)
# Compilation events of JAX (jax/_src/interpreters/pxla.py, dispatch.py), PyTorch/XLA
# (torch_xla/csrc/xla_graph_executor.cpp, runtime/pjrt_computation_client.cc) and TensorFlow.
COMPILE_PATTERN = (
    r"^(backend_compile(_and_load)?|lower_sharding_computation|XLAGraphExecutor::Compile"
    r"|PjRtComputationClient::Compile|IfrtComputationClient::Compile|XlaCompile(:.*)?|_XlaCompile"
    r"|TfrtTpuCompiler::Compile|PjRtCApiClient::CompileAndLoad\(.*)$"
)
# Framework-level compile events: one per compilation of one function/graph.
COMPILE_FRAMEWORK_PATTERN = (
    r"^(backend_compile(_and_load)?|XLAGraphExecutor::Compile|XlaCompile(:.*)?|_XlaCompile)$"
)
COMPILE_LOWERING_PATTERN = r"^lower_sharding_computation$"
# Runtime compiler events: they nest inside the framework-level ones.
COMPILE_RUNTIME_PATTERN = (
    r"^(PjRtComputationClient::Compile|IfrtComputationClient::Compile|TfrtTpuCompiler::Compile"
    r"|PjRtCApiClient::CompileAndLoad\(.*|PjRtCpuClient::Compile|PjRtStreamExecutorClient::Compile)$"
)
# Blocking device-to-host reads on the host: JAX `np.asarray(jax.Array)`, PyTorch/XLA transfers and
# `.item()` (`_local_scalar_dense`), the TPU runtime's literal reads.
SYNC_PATTERN = (
    r"^(np\.asarray\(jax\.Array\)|PjRtComputationClient::TransferFromDevice"
    r"|IfrtComputationClient::TransferFromDevice|(aten::)?_local_scalar_dense|TfrtTpuBuffer::ToLiteral)$"
)
# PyTorch/XLA's host transfer TraceMes (pytorch/xla torch_xla/csrc/runtime/pjrt_computation_client.cpp).
D2H_PATTERN = r"^(PjRt|Ifrt)ComputationClient::TransferFromDevice$"
H2D_PATTERN = r"^(PjRt|Ifrt)ComputationClient::TransferToDevice$"
# torch_xla work on the calling thread that runs or builds a graph (torch_xla/csrc TraceMes).
GRAPH_WORK_PATTERN = (
    r"^(SyncTensorsGraph\w*|SyncLiveTensorsGraph|StepMarker|XLAGraphExecutor::Compile"
    r"|(PjRt|Ifrt)ComputationClient::(Execute\w*|Compile))$"
)
# Ops PyTorch/XLA ran on the CPU: `aten::<op>` or `aten::<op>.<overload>` (e.g. `aten::searchsorted.Tensor`
# in torch_xla 2.9's executed_fallback_ops()), except `aten::_local_scalar_dense`, which `.item()`
# produces (pytorch/xla torch_xla/csrc/runtime/metrics_analysis.cpp `UnloweredOp`).
CPU_FALLBACK_PATTERN = r"^aten::(?!_local_scalar_dense$)\w+(\.\w+)?$"
# Host ops that print from inside a TensorFlow graph (tf.print runs PrintV2) or PyTorch/XLA's
# step closures' prints (torch_xla runs them on the host after the step).
HOST_CALLBACK_PATTERN = r"^(PrintV2|Print|PrintV2Op::Compute)$"
# Runtime input events: tf.data consumer waits, infeed, host-to-device copies (host event names in
# openxla/xla xla/tsl/profiler/utils/xplane_schema.cc; xprof xplane_to_step_events.cc ClassifyCpuEvent).
INPUT_PATTERN = (
    r"^(IteratorGetNext\w*(::DoCompute)?|IteratorGetNextOp::DoCompute|IteratorGetNextAsOptional\w*(::DoCompute)?"
    r"|InfeedEnqueue\w*|\S*::TransferToDevice|\S*TransferToDevice=>IssueEvent.*|DevicePut\w*"
    r"|batched_copy_array_to_devices\w*|H2D Dispatch|hipMemcpyHtoD\w*|cuMemcpyHtoD\w*|cudaMemcpy\w*HtoD\w*"
    r"|TransferH2DRequest|TransferPreprocessedH2DRequest)$"
)
# DCN transfers of multi-slice TPU runs, on the host (openxla/xprof, xprof/convert/dcn_utils.cc: prefix
# "MegaScale:").
DCN_TRANSFER_PATTERN = r"^MegaScale:"

# XLA's op categories (XProf's `hlo_category` stat, or the opcode and fusion kind tpuscope derives
# where the stat is missing), as the neutral op families. The categories are XLA's
# HloInstruction::ToCategory (openxla/xla, xla/hlo/ir/hlo_instruction.cc): a fusion by its kind
# ("loop fusion", "input fusion" = reduction-rooted, "output fusion" = a dot or convolution with its
# consumers, "convolution fusion"), "data formatting" (transpose, copy, reshape), "non-fusion
# elementwise", else the HLO opcode (xla/hlo/ir/hlo_opcode.h); the elementwise opcodes are those
# HloInstruction::IsElementwise accepts. Collectives first: `reduce-scatter` is not a reduction.
XLA_ELEMENTWISE_OPCODES = (
    "abs|add|and|atan2|bitcast-convert|cbrt|ceil|clamp|clz|compare|complex|convert|cos|divide|erf|exp"
    "|expm1|floor|imag|is-finite|log|log1p|logistic|maximum|minimum|multiply|negate|not|or|popcnt|power"
    "|real|reduce-precision|remainder|round-nearest-afz|round-nearest-even|rsqrt|select|shift-left"
    "|shift-right-arithmetic|shift-right-logical|sign|sin|sqrt|stochastic-convert|subtract|tan|tanh|xor"
    "|rng|rng-bit-generator"
)
XLA_OP_FAMILIES = (
    (
        r"(all-reduce|all-gather|reduce-scatter|all-to-all|ragged-all-to-all|collective-permute"
        r"|collective-broadcast|send|recv|barrier-cores)\b",
        OpFamily.COLLECTIVE,
    ),
    (r"(copy-start|copy-done|infeed|outfeed|memcpy|memset)\b", OpFamily.MEMCPY),
    (r"(dot|convolution|gemm|output fusion|cublas|cudnn)", OpFamily.MATMUL),
    (r"(reduce|reduce-window|input fusion)$", OpFamily.REDUCTION),
    (rf"(loop fusion|fusion|non-fusion elementwise|{XLA_ELEMENTWISE_OPCODES})$", OpFamily.ELEMENTWISE),
    (
        r"(data formatting|transpose|copy|reshape|broadcast|concatenate|slice|dynamic-slice"
        r"|dynamic-update-slice|gather|scatter|pad|reverse|iota|bitcast)$",
        OpFamily.DATA_MOVEMENT,
    ),
)

# Memory data (xplane_schema.cc kHostThreadsPlaneName, HostEventType kMemoryAllocation /
# kMemoryDeallocation, StatType kAllocatorName, kIndexOnHost, kDeviceOrdinal, kBytesReserved, ...),
# as XLA's BFC allocator writes it (xla/tsl/framework/bfc_allocator.cc, AddTraceMe) and XProf's
# memory profile reads it (xprof/convert/xplane_to_memory_profile.cc). The `Hlo Proto` stat on
# `/host:metadata` carries each program's buffer assignment.
HOST_THREADS_PLANE = "/host:CPU"
MEMORY_ALLOCATION_EVENT = "MemoryAllocation"
MEMORY_DEALLOCATION_EVENT = "MemoryDeallocation"
ALLOCATOR_NAME_STAT = "allocator_name"
ALLOCATOR_INDEX_STATS = ("index_on_host", "device_ordinal")
BYTES_RESERVED_STAT = "bytes_reserved"
BYTES_ALLOCATED_STAT = "bytes_allocated"
BYTES_AVAILABLE_STAT = "bytes_available"
FRAGMENTATION_STAT = "fragmentation"
PEAK_BYTES_IN_USE_STAT = "peak_bytes_in_use"
REQUESTED_BYTES_STAT = "requested_bytes"
ALLOCATION_BYTES_STAT = "allocation_bytes"
ADDRESS_STAT = "addr"
SHAPE_STAT = "shape"
DEVICE_MEMORY_SIZE_STAT = "memory_size"  # a GPU plane's own memory size in bytes
HLO_PROTO_STAT = "Hlo Proto"

XPLANE_ALLOCATOR_NAMES = AllocatorNames(
    plane=HOST_THREADS_PLANE,
    allocation_event=MEMORY_ALLOCATION_EVENT,
    deallocation_event=MEMORY_DEALLOCATION_EVENT,
    allocator_name_stat=ALLOCATOR_NAME_STAT,
    allocator_index_stats=ALLOCATOR_INDEX_STATS,
    bytes_reserved_stat=BYTES_RESERVED_STAT,
    bytes_allocated_stat=BYTES_ALLOCATED_STAT,
    bytes_available_stat=BYTES_AVAILABLE_STAT,
    fragmentation_stat=FRAGMENTATION_STAT,
    peak_bytes_in_use_stat=PEAK_BYTES_IN_USE_STAT,
    requested_bytes_stat=REQUESTED_BYTES_STAT,
    allocation_bytes_stat=ALLOCATION_BYTES_STAT,
    address_stat=ADDRESS_STAT,
    shape_stat=SHAPE_STAT,
)


# The decoders of a program's HloProto (tpuscope.readers.xplane.hlo, hlo_memory, hlo_code), imported when the
# first program is read: protobuf and the HLO schema are not loaded to open a file.
def decode_program_signature(blob: bytes, program_id: int | None = None) -> ProgramSignature | None:
    from tpuscope.readers.xplane import hlo

    return hlo.decode_program_signature(blob, program_id)


def decode_program_buffers(blob: bytes, program_id: int | None = None) -> ProgramBuffers | None:
    from tpuscope.readers.xplane import hlo_memory

    return hlo_memory.decode_program_buffers(blob, program_id)


def decode_program_code(blob: bytes, program_id: int | None = None) -> ProgramCode | None:
    from tpuscope.readers.xplane import hlo_code

    return hlo_code.decode_program_code(blob, program_id)


XPLANE_DIALECT = Dialect(
    name="XPlane",
    event_patterns=(
        (EventClass.STEP_MARKER, TF_STEP_MARKER_PATTERN),
        (EventClass.PROGRAM_DISPATCH, JAX_DISPATCH_PATTERN),
        (EventClass.LAUNCH, LAUNCH_PATTERN),
        (EventClass.COMPILE, COMPILE_PATTERN),
        (EventClass.COMPILE_FRAMEWORK, COMPILE_FRAMEWORK_PATTERN),
        (EventClass.COMPILE_LOWERING, COMPILE_LOWERING_PATTERN),
        (EventClass.COMPILE_RUNTIME, COMPILE_RUNTIME_PATTERN),
        (EventClass.SYNC, SYNC_PATTERN),
        (EventClass.D2H, D2H_PATTERN),
        (EventClass.H2D, H2D_PATTERN),
        (EventClass.GRAPH_WORK, GRAPH_WORK_PATTERN),
        (EventClass.CPU_FALLBACK, CPU_FALLBACK_PATTERN),
        (EventClass.HOST_CALLBACK, HOST_CALLBACK_PATTERN),
        (EventClass.INPUT, INPUT_PATTERN),
        (EventClass.DCN_TRANSFER, DCN_TRANSFER_PATTERN),
    ),
    dispatch_function=JAX_DISPATCH_PATTERN,
    # PyTorch/XLA first: its programs may also call JAX (torchax), and its own names never appear
    # in plain JAX programs.
    framework_clues=(
        FrameworkClue(
            PYTORCH_XLA,
            r"^(SyncTensorsGraph|StepMarker|XLAGraphExecutor::|PjRtComputationClient::"
            r"|IfrtComputationClient::|CollectSyncTensors|aten::)",
            "PyTorch/XLA runtime events",
            decisive=True,
        ),
        FrameworkClue(
            JAX,
            r"^(PjitFunction\(|ExecuteReplicated\.__call__|np\.asarray\(jax\.Array\)|shard_args$)",
            "PjitFunction(...)",
        ),
        FrameworkClue(
            TENSORFLOW,
            r"^(EagerExecute|EagerKernelExecute|IteratorGetNext|Iterator::|TraceContext|FunctionRun$"
            r"|ExecutorState::Process|TFE_Py_Execute|__inference_)",
            "EagerExecute, IteratorGetNext, ...",
        ),
    ),
    # Plane stats that programmatic JAX (and PyTorch/XLA, TF) traces write on /host:metadata.
    framework_version_stats=(
        ("jax_version", JAX),
        ("torch_xla_version", PYTORCH_XLA),
        ("tensorflow_version", TENSORFLOW),
    ),
    framework_program_names=((JAX, r"^jit_\w+\(\d+\)$"),),
    program_proto_stat=HLO_PROTO_STAT,
    decode_program_signature=decode_program_signature,
    decode_program_buffers=decode_program_buffers,
    decode_program_code=decode_program_code,
    allocator_names=XPLANE_ALLOCATOR_NAMES,
    device_memory_size_stat=DEVICE_MEMORY_SIZE_STAT,
    # "jit_f(1219...)" on `XLA Modules` lines and /host:metadata entries.
    program_name=r"^(.*)\((\d+)\)$",
    op_families=XLA_OP_FAMILIES,
    # TensorFlow names an XLA compilation after its cluster (`XlaCompile:#module=cluster_3,...#`, the
    # TraceMe metadata encoding); PyTorch/XLA's compiles name no graph.
    compile_function=r"module=([^,#]+)",
    compile_labels=(("XLAGraphExecutor::Compile", "XLA graph (PyTorch/XLA)"),),
    # JAX names the module of a jitted function after its API and the function (`jit_train_step`).
    function_program="jit_{}",
    # tf.function calls carry `tf_function_call` = "traced-xla" / "notTraced-nonXla"... (tensorflow
    # python/eager/polymorphic_function/polymorphic_function.py): "traced" when the call traced anew.
    traced_call=r"^traced",
    # JAX writes `jaxlib_version` beside `jax_version` on its metadata plane.
    runtime_version_stats=("jaxlib_version",),
    # XLA:GPU writes `tf_op` = "XlaModule:" on kernels that come from no framework op.
    no_framework_op=("XlaModule",),
    # TPU multi-host barriers, which XProf reads on the `XLA TraceMe` line (openxla/xprof,
    # xprof/convert/smart_suggestion/barrier_cores_rule.h).
    barrier_tracks=("XLA TraceMe",),
    barrier_events=("barrier-cores",),
)
