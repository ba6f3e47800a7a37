"""The format-neutral vocabulary every reader maps its own names onto.

Analysis and the UI ask the model "the device op tracks", "the host events that launch work on
the device", "the op's FLOPs" and never a format's spelling of them (XPlane's `XLA Ops` line,
Kineto's `cudaLaunchKernel`). A reader says, while it builds the trace:

- what each plane is (`PlaneIdentity`: device, host or other; its kind and index),
- what each track holds (`TrackKind`),
- which of its stats mean what (`Stat`: it stores them under these names),
- which host event names mean what (`Dialect`: one regex per `EventClass`, plus the framework
  clues of its format), classified once per trace into a lookup by name id
  (`Trace.name_classes`),
- which of its op categories are which neutral op family (`OpFamily`: matmul, elementwise,
  collective, ...), so that runs of different formats can be compared op family by op family.

A new format is therefore one reader module plus one registration; analysis does not change.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from tpuscope.model.records import record

if TYPE_CHECKING:
    from tpuscope.model.code import ProgramCode
    from tpuscope.model.memory import ProgramBuffers
    from tpuscope.model.programs import ProgramSignature


class TrackKind(enum.IntEnum):
    """What the events of one track are."""

    OTHER = 0  # anything else (unknown lines, metadata)
    DEVICE_OPS = 1  # ops a device executed: TPU op lines, GPU stream kernels and copies
    DEVICE_ASYNC_OPS = 2  # asynchronous device ops (start/done pairs), not counted as busy time
    DEVICE_MODULES = 3  # executions of whole programs/modules on a device
    DEVICE_STEPS = 4  # steps as the device runtime (or a derived analysis) wrote them
    DEVICE_OTHER = 5  # other device lines: derived or annotation lines that repeat the ops
    HOST_THREAD = 6  # one host thread (or a host-side stream of annotations)
    COUNTER = 7  # sampled values over time (memory, utilization)

    @property
    def is_device(self) -> bool:
        return self in _DEVICE_TRACK_KINDS


_DEVICE_TRACK_KINDS = frozenset(
    {
        TrackKind.DEVICE_OPS,
        TrackKind.DEVICE_ASYNC_OPS,
        TrackKind.DEVICE_MODULES,
        TrackKind.DEVICE_STEPS,
        TrackKind.DEVICE_OTHER,
    }
)
# How a device plane's tracks are ordered for reading: the program's structure, top to bottom.
DEVICE_TRACK_ORDER = (
    TrackKind.DEVICE_STEPS,
    TrackKind.DEVICE_MODULES,
    TrackKind.DEVICE_OPS,
    TrackKind.DEVICE_ASYNC_OPS,
    TrackKind.DEVICE_OTHER,
)


# Framework names, as readers' dialects name them and analysis shows them.
JAX = "JAX"
TENSORFLOW = "TensorFlow"
PYTORCH_XLA = "PyTorch/XLA"
PYTORCH = "PyTorch"

# Plane roles.
ROLE_DEVICE = "device"
ROLE_HOST = "host"
ROLE_OTHER = "other"
# The kind of a host plane that holds only metadata (program protos), no threads.
KIND_METADATA = "metadata"
# The kind of the host plane whose threads are the host CPU's (XLA:CPU thunks run there).
KIND_HOST_CPU = "CPU"


@record(frozen=True)
class PlaneIdentity:
    """What a plane is: role "device" (kind TPU/GPU/..., index N), "host" (kind CPU, metadata...) or "other".

    Set by the reader that built the plane; `suffix` tells apart sub-planes of one device
    (e.g. " SparseCore 0"); `sparse_core` marks a sub-plane that is one of the chip's cores for
    sparse work (embedding lookups: a TPU's SparseCores), not one of its main compute cores.
    """

    role: str
    kind: str
    index: int | None
    suffix: str = ""
    sparse_core: bool = False


OTHER_PLANE = PlaneIdentity(ROLE_OTHER, "", None)


class Stat:
    """Neutral stat names: readers store these stats under these names.

    The spellings are XPlane's where XPlane has the stat, so the XPlane reader keeps its columns
    as they are; other readers rename their fields into them (and keep the rest as they are).
    """

    OP_TEXT = "hlo_op"  # the op's full text or name, when the event name is something else
    OP_CATEGORY = "hlo_category"  # the op's category ("convolution", "gemm", "nccl", ...)
    FLOPS = "flops"
    BYTES_ACCESSED = "bytes_accessed"
    PROGRAM_ID = "program_id"  # the compiled program an op or execution belongs to
    PROGRAM_NAME = "hlo_module"  # that program's name
    DEVICE_OFFSET_PS = "device_offset_ps"  # start on the device's own clock
    DEVICE_DURATION_PS = "device_duration_ps"  # duration on the device's own clock
    STEP_NUMBER = "step_num"
    STEP_GROUP = "group_id"  # the step an event was grouped into, when no step number is written
    FRAMEWORK_OP = "tf_op"  # the framework op an op came from
    NAME_SCOPE = "name"  # the framework's name scope of an op
    SOURCE = "source"  # the op's source line, `file:line` (XPlane: XLA:TPU op metadata)
    # Its stack, one `file:line:column` per line (a tab and the frame's function may follow), outermost
    # frame first, as the runtime wrote it.
    SOURCE_STACK = "source_stack"
    CORRELATION_ID = "correlation_id"  # ties a host launch to the device op it launched
    GRAPH_HASH = "graph_hash"  # identifies a compiled graph (PyTorch/XLA)
    # A call of a staged (traced) function; its value says whether this call traced it anew.
    STAGED_FUNCTION_CALL = "tf_function_call"
    # Stats of a device plane (its description, not its events).
    DEVICE_VENDOR = "device_vendor"  # the device's maker ("AMD", "Nvidia")
    MEGACORE = "has_megacore"  # 1 when the chip's TensorCores run as one device (TPU v4/v5p megacore)


class EventClass(enum.IntFlag):
    """What a host event is, judged by its name (one bit each; a name may have several)."""

    NONE = 0
    STEP_MARKER = 1 << 0  # a named step marker; markers of one name are one step loop
    NUMBERED_STEP = 1 << 1  # a step marker whose name carries the step number ("ProfilerStep#3")
    PROGRAM_DISPATCH = 1 << 2  # the host dispatches one compiled program of a named function
    LAUNCH = 1 << 3  # hands a program or a kernel to the device
    COMPILE = 1 << 4  # compiles (any level)
    COMPILE_FRAMEWORK = 1 << 5  # one compilation of one function/graph, at the framework's level
    COMPILE_LOWERING = 1 << 6  # the lowering stage of a compilation
    COMPILE_RUNTIME = 1 << 7  # the runtime compiler (nests inside framework-level compiles)
    SYNC = 1 << 8  # the host blocks on a device result (device-to-host read, stream sync)
    D2H = 1 << 9  # a device-to-host transfer
    H2D = 1 << 10  # a host-to-device transfer
    # The host runs or builds a whole compiled graph on the calling thread (a graph sync, a step
    # marker, the graph's compile or execute): a graph boundary between two host transfers.
    GRAPH_WORK = 1 << 11
    # A framework op the host ran itself because the device compiler has no lowering for it.
    CPU_FALLBACK = 1 << 12
    HOST_CALLBACK = 1 << 13  # a host op a compiled graph calls back into (a print inside the graph)
    # Input work: the input pipeline handing over a batch, infeed, host-to-device copies of inputs.
    INPUT = 1 << 14
    DCN_TRANSFER = 1 << 15  # a transfer between slices of a pod over the data-center network


class OpFamily:
    """Neutral op families: what a device op does, whatever its format calls it.

    Each reader's op categories (XLA's HLO categories, the kernel categories of a PyTorch
    profiler trace) map onto these, so that a GPU run and a TPU run of one model can be compared
    family by family where no op name is shared. Coarse on purpose: a cuBLAS GEMM kernel and an
    XLA convolution fusion are both matmul work, though their boundaries differ (XLA fuses the
    bias add in).
    """

    # GEMMs and convolutions are one family: XLA on TPU emits matmuls as convolutions (XProf files
    # them under "convolution fusion"), and fused attention kernels are mostly matmul work.
    MATMUL = "matmul/convolution"
    ELEMENTWISE = "elementwise/fusion"  # pointwise ops and the loop fusions XLA makes of them
    REDUCTION = "reduction"  # reductions, and the normalizations and softmax built on them
    COLLECTIVE = "collective"  # communication between devices (NCCL/RCCL, XLA all-reduce, send/recv)
    MEMCPY = "memcpy"  # transfers between memories (host <-> device, async copies) and memsets
    DATA_MOVEMENT = "data movement"  # on-device layout changes: transpose, copy, gather, scatter, slice
    OTHER = "other"

    ALL = (MATMUL, ELEMENTWISE, REDUCTION, COLLECTIVE, MEMCPY, DATA_MOVEMENT, OTHER)


@record(frozen=True)
class FrameworkClue:
    """Host event names that only one framework's runtime writes.

    `decisive`: any such event names the framework outright (checked before version stats);
    otherwise the framework with the most matching events wins.
    """

    framework: str
    pattern: str
    examples: str
    decisive: bool = False


@record(frozen=True)
class AllocatorNames:
    """A format's names for the events its runtime's allocators write and the stats they carry."""

    plane: str  # the host plane whose threads hold the events
    allocation_event: str
    deallocation_event: str
    allocator_name_stat: str  # which allocator: its name, else ...
    allocator_index_stats: tuple[str, ...]  # ... the number of the device it serves
    bytes_reserved_stat: str  # set aside for programs (XProf's "stack")
    bytes_allocated_stat: str  # heap in use
    bytes_available_stat: str  # free
    fragmentation_stat: str
    peak_bytes_in_use_stat: str  # the allocator's own lifetime peak
    requested_bytes_stat: str  # per allocation: the bytes asked for, ...
    allocation_bytes_stat: str  # ... the bytes handed out,
    address_stat: str  # ... where,
    shape_stat: str  # ... and the shape of the tensor


@record(frozen=True)
class Dialect:
    """A format's names for the neutral event classes and frameworks (set on the Trace by its reader)."""

    name: str
    event_patterns: tuple[tuple[EventClass, str], ...] = ()
    # A regex over PROGRAM_DISPATCH names whose group 1 is the function the dispatch runs.
    dispatch_function: str = ""
    framework_clues: tuple[FrameworkClue, ...] = ()
    # Plane stats that name the framework outright: (stat name, framework).
    framework_version_stats: tuple[tuple[str, str], ...] = ()
    # Names anywhere in the trace that betray a framework: (framework, regex, what to say).
    framework_program_names: tuple[tuple[str, str], ...] = ()
    # A regex over program execution names: group 1 the program's name, group 2 its id.
    program_name: str = ""
    # The framework when no clue decides, for a format that only one framework writes.
    default_framework: str = ""
    # A regex over NUMBERED_STEP names whose group 1 is the step number ("ProfilerStep#(\d+)").
    step_number: str = ""
    # Compiled programs: the bytes stat of a metadata-plane row that holds one program's serialized
    # proto, and the reader's decoders of such a proto into the program's signature, its buffer
    # assignment and its instructions' code (None: the format keeps no programs). Module-level
    # functions, so that a pickled dialect names them instead of copying them.
    program_proto_stat: str = ""
    decode_program_signature: Callable[[bytes, int | None], ProgramSignature | None] | None = None
    decode_program_buffers: Callable[[bytes, int | None], ProgramBuffers | None] | None = None
    decode_program_code: Callable[[bytes, int | None], ProgramCode | None] | None = None
    # The allocators' events (None: the format has none), and the device planes' stat of their
    # memory size in bytes.
    allocator_names: AllocatorNames | None = None
    device_memory_size_stat: str = ""
    # The op family (OpFamily) of each op category this format's reader writes: (regex matched
    # from the start of the category, family), first match wins; unmatched categories are OTHER.
    op_families: tuple[tuple[str, str], ...] = ()
    # What a COMPILE event compiled, when its name says it: a regex searched in the name whose
    # group 1 is the function or module, else (event name, words for what it compiles).
    compile_function: str = ""
    compile_labels: tuple[tuple[str, str], ...] = ()
    # The name of the program compiled from a function, as a format string of the function's name
    # ("jit_{}"); empty when programs are named like their functions.
    function_program: str = ""
    # A regex over the string values of `Stat.STAGED_FUNCTION_CALL` that say the call traced anew.
    traced_call: str = ""
    # Plane stats with the versions of the runtime beside the framework's own (`framework_version_stats`).
    runtime_version_stats: tuple[str, ...] = ()
    # `Stat.FRAMEWORK_OP` values that name no framework op (the runtime's placeholder for "none").
    no_framework_op: tuple[str, ...] = ()
    # Device tracks beside the op tracks that hold barriers between devices, and the barriers' names.
    barrier_tracks: tuple[str, ...] = ()
    barrier_events: tuple[str, ...] = ()

    def compiled_function_of(self, name: str) -> str | None:
        """What the compile event `name` compiled, when its name tells (None: the name is all there is)."""
        m = re.search(self.compile_function, name) if self.compile_function else None
        if m:
            return m.group(1)
        return dict(self.compile_labels).get(name)

    def program_of_function(self, function: str) -> str:
        """The name of the program compiled from `function`."""
        return self.function_program.format(function) if self.function_program else function

    def step_number_of(self, name: str) -> int | None:
        m = re.match(self.step_number, name) if self.step_number else None
        return int(m.group(1)) if m else None

    def dispatch_function_of(self, name: str) -> str | None:
        if not self.dispatch_function:
            return None
        m = re.match(self.dispatch_function, name)
        return m.group(1) if m else None

    def op_family_of(self, category: str) -> str:
        """The neutral `OpFamily` of one of this format's op categories."""
        for pattern, family in self.op_families:
            if re.match(pattern, category):
                return family
        return OpFamily.OTHER


NEUTRAL_DIALECT = Dialect("neutral")


def classify_names(names: list[str], dialect: Dialect) -> np.ndarray:
    """The EventClass bits of each name (uint32), by the dialect's patterns (`re.search`).

    The empty name (id 0 in a string table) is never classified.
    """
    classes = np.zeros(len(names), np.uint32)
    for event_class, pattern in dialect.event_patterns:
        matcher = re.compile(pattern)
        hit = np.fromiter((bool(s) and matcher.search(s) is not None for s in names), bool, len(names))
        classes[hit] |= np.uint32(event_class)
    return classes
