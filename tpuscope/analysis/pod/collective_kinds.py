"""What kind of collective an op is, how many bytes it moves and at what bus bandwidth.

One collective op's name is read into a kind (`all-reduce`, `all-gather`, `reduce-scatter`,
`all-to-all`, `collective-permute`, `send`, `recv`, `broadcast`, `barrier`, `dcn`) and an async half
(`start`, `done`, or none), whichever library named it:
- XLA's HLO instructions (`all-reduce.98`, `all-gather-start.3`, `%all-reduce = f32[...] all-reduce(...)`:
  openxla/xla, xla/hlo/ir/hlo_opcode.h), on TPU and GPU op lines and XLA:CPU thunks (gloo);
- JAX's collective primitives, after which it names their instructions (`ppermute.3`, `all_gather.7`,
  `psum_invariant.7` on XLA:CPU);
- NCCL/RCCL kernels (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`, `ncclKernel_SendRecv_...`), or, where the
  kernel says only SendRecv (NCCL runs every collective of some jobs as send/recv), the PyTorch op that
  launched it (`c10d::allreduce_`, `nccl:all_reduce`) or Kineto's "Collective name" argument.

Bandwidths as NVIDIA's nccl-tests define them (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md):
algorithm bandwidth algbw = S / t (S: the array's size; for all-gather and reduce-scatter the whole
array, count x n); bus bandwidth busbw = algbw x a factor of the group size n that makes it
comparable with the hardware's link bandwidth (all-reduce 2(n-1)/n; all-gather, reduce-scatter and
all-to-all (n-1)/n; broadcast, reduce and point-to-point 1).
"""

from __future__ import annotations

import re

from tpuscope.model.records import record

ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
)
PERMUTE, SEND, RECV, BROADCAST, BARRIER, DCN = (
    "collective-permute", "send", "recv", "broadcast", "barrier", "dcn",
)  # fmt: skip
KINDS = (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, PERMUTE, SEND, RECV, BROADCAST, BARRIER, DCN)
START, DONE = "start", "done"

# XLA opcodes (hlo_opcode.h), with their async halves, `.N` suffixes and fusion kinds.
_XLA = re.compile(
    r"^%?(?P<op>all-reduce-scatter|all-reduce|all-gather|reduce-scatter|ragged-all-to-all|all-to-all"
    r"|collective-permute|collective-broadcast|barrier-cores|send|recv)"
    r"(?:-(?P<half>start|done|update))?\b"
)
_XLA_KINDS = {
    "all-reduce": ALL_REDUCE, "all-reduce-scatter": REDUCE_SCATTER, "all-gather": ALL_GATHER,
    "reduce-scatter": REDUCE_SCATTER, "all-to-all": ALL_TO_ALL, "ragged-all-to-all": ALL_TO_ALL,
    "collective-permute": PERMUTE, "collective-broadcast": BROADCAST, "barrier-cores": BARRIER,
    "send": SEND, "recv": RECV,
}  # fmt: skip
# NCCL/RCCL kernel names (`ncclDevKernel_AllReduce_...`, `ncclKernel_AllGather_...`), and the collective
# names PyTorch's c10d ops and Kineto's "Collective name" argument use (torch/csrc/distributed/c10d).
_LIBRARY_WORDS = (
    # JAX's collective primitives, as it names their instructions (`tpuscope.analysis.pod.collectives`).
    (re.compile(r"^%?(ppermute|pshuffle)\b"), PERMUTE),
    (re.compile(r"^%?psum_scatter\b"), REDUCE_SCATTER),
    (re.compile(r"^%?(psum|psum_invariant|pmax|pmin|pmean)\b"), ALL_REDUCE),
    (re.compile(r"^%?pbroadcast\b"), BROADCAST),
    (re.compile(r"all_?reduce|allreduce", re.I), ALL_REDUCE),
    (re.compile(r"reduce_?scatter|reducescatter", re.I), REDUCE_SCATTER),
    (re.compile(r"all_?gather|allgather", re.I), ALL_GATHER),
    (re.compile(r"all_?to_?all|alltoall", re.I), ALL_TO_ALL),
    (re.compile(r"broadcast|bcast", re.I), BROADCAST),
    (re.compile(r"barrier", re.I), BARRIER),
    (re.compile(r"send_?recv|sendrecv", re.I), SEND),
    (re.compile(r"\bsend|_send", re.I), SEND),
    (re.compile(r"\brecv|_recv", re.I), RECV),
    (re.compile(r"reduce", re.I), ALL_REDUCE),
)
_LAUNCHER = re.compile(r"(?:c10d::|nccl:|gloo:)(\w+)")
_NO_GROUPS = re.compile(r"replica_groups=\{\}")
# The group size of a collective over every device of its program (`replica_groups={}`): the profile's
# device count stands for it where the profile holds them all (`CommsReport`).
ALL_DEVICES = 0
_REPLICA_GROUPS = re.compile(r"replica_groups=(\{\{[^}]*\}|\[(\d+),(\d+)\]<=)")
# nccl-tests' bus bandwidth factor per kind, of the group size n (PERFORMANCE.md, module docstring).
_BUS_FACTOR = {
    ALL_REDUCE: lambda n: 2.0 * (n - 1) / n,
    ALL_GATHER: lambda n: (n - 1) / n,
    REDUCE_SCATTER: lambda n: (n - 1) / n,
    ALL_TO_ALL: lambda n: (n - 1) / n,
    BROADCAST: lambda n: 1.0,
    PERMUTE: lambda n: 1.0,
    SEND: lambda n: 1.0,
    RECV: lambda n: 1.0,
}
# Kineto's NCCL kernel arguments (pytorch/pytorch, torch/csrc/profiler/util.cpp `saveNcclMeta`).
ARG_COLLECTIVE = "Collective name"
ARG_NELEMS = "In msg nelems"
ARG_OUT_NELEMS = "Out msg nelems"
ARG_DTYPE = "dtype"
ARG_GROUP_SIZE = "Group size"
# PyTorch dtype names (c10 ScalarType) to bytes per element.
TORCH_DTYPE_BYTES = {
    "float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2, "bfloat16": 2,
    "c10::bfloat16": 2, "c10::half": 2, "int": 4, "int32": 4, "long": 8, "int64": 8, "short": 2,
    "int16": 2, "char": 1, "int8": 1, "byte": 1, "uint8": 1, "bool": 1, "float8_e4m3fn": 1,
    "float8_e5m2": 1, "c10::complex<float>": 8,
}  # fmt: skip


@record(frozen=True)
class Kind:
    """A collective op's kind and async half ("" when it is not one half of an async pair)."""

    kind: str
    half: str = ""

    @property
    def label(self) -> str:
        return f"{self.kind}-{self.half}" if self.half else self.kind


def kind_of(name: str, launcher: str = "") -> Kind:
    """The kind of the collective named `name` (an HLO op or a kernel); `launcher`: the framework op or
    scope that launched a kernel, read when the kernel's own name does not tell (NCCL's SendRecv)."""
    m = _XLA.match(name)
    if m:
        half = m.group("half") or ""
        return Kind(_XLA_KINDS[m.group("op")], "" if half == "update" else half)
    if name.startswith("MegaScale"):
        return Kind(DCN)
    own = _library_kind(name)
    if launcher and own in ("", SEND, RECV):
        # The innermost c10d/NCCL op of the launcher's scope (`.../c10d::allreduce_/record_param_comms`).
        said = _LAUNCHER.findall(launcher)
        kind = _library_kind(said[-1]) if said else ""
        if kind:
            return Kind(kind)
    return Kind(own or "other")


def _library_kind(text: str) -> str:
    for pattern, kind in _LIBRARY_WORDS:
        if pattern.search(text):
            return kind
    return ""


@record(frozen=True)
class Size:
    """What one occurrence moves: nccl-tests' S in bytes (None: not known) and the group size n."""

    bytes: int | None = None
    group: int | None = None


def hlo_size(text: str, kind: str) -> Size:
    """S and n of an HLO collective from its text (`%all-reduce = f32[...] all-reduce(...),
    replica_groups=...`): S is the largest side, results or operands (the whole array for all-gather,
    whose result is it, and reduce-scatter, whose operand is), n the size of its first replica group."""
    # Imported here: a pod's light pass (which reads sizes) imports no diagnosis module at its start.
    from tpuscope.analysis.diagnose.hlo_text import parse_instruction

    instruction = parse_instruction(text)
    if instruction is None:
        return Size()
    results = sum(s.bytes for s in instruction.results)
    operands = sum(s.bytes for s in instruction.operands)
    if kind in (SEND, RECV, PERMUTE) and instruction.opcode.endswith("done"):
        operands = 0  # a done's operand is its start's tuple (buffers and context), not more data
    size = max(results, operands)
    return Size(size or None, replica_group_size(instruction.attributes))


def replica_group_size(attributes: str) -> int | None:
    """n from `replica_groups={{0,1,2,3},{4,5,6,7}}` (the first group's members) or the iota form
    `replica_groups=[4,2]<=[8]` (groups x members); ALL_DEVICES for `replica_groups={}` (every device
    of the program takes part); None when the attribute is absent."""
    if _NO_GROUPS.search(attributes):
        return ALL_DEVICES
    m = _REPLICA_GROUPS.search(attributes)
    if m is None:
        return None
    if m.group(2) is not None:
        return int(m.group(3))
    members = [p for p in m.group(1)[2:].split(",") if p.strip()]
    return len(members) or None


def nccl_size(collective_elements: float, dtype: str, group: float) -> Size:
    """S and n from Kineto's NCCL kernel arguments (elements x dtype bytes; NaN/empty: unknown)."""
    per = TORCH_DTYPE_BYTES.get(dtype.lower().removeprefix("c10::scalartype::"))
    known = collective_elements == collective_elements and collective_elements > 0 and per is not None
    n = int(group) if group == group and group > 0 else None
    return Size(int(collective_elements) * per if known and per else None, n)


def bus_factor(kind: str, group: int | None) -> float | None:
    """nccl-tests' busbw / algbw for `kind` over `group` members (None: no data moved, or n unknown)."""
    factor = _BUS_FACTOR.get(kind)
    if factor is None:
        return None
    if kind in (BROADCAST, PERMUTE, SEND, RECV):
        return 1.0
    if not group or group < 1:
        return None
    return factor(group)
