"""Why two neighbouring HLO instructions were not fused, where XLA's own rules say so.

Only what the instruction's opcode, fusion kind and shapes tell for certain is said, with the rule
it comes from; anything else (cost models, the fusion passes' heuristics) is not guessed at:

- a custom-call is a call into a library or a kernel of its own (cuBLAS, a Transformer Engine FFI
  kernel, LAPACK); XLA's fusion passes do not fuse one (openxla/xla
  xla/service/gpu/transforms/priority_fusion.cc `IsFusible` accepts elementwise ops, a fixed list of
  data-movement ops (copy, iota, constant, reduce, bitcast, broadcast, concatenate, dynamic-slice,
  dynamic-update-slice, gather, pad, reduce-window, reshape, reverse, scatter, slice, transpose) and
  fusions not of kind kCustom, nothing else);
- a fusion of kind kCustom (XLA:GPU's Triton or cuDNN GEMM fusions, XLA:CPU's YNNPACK ones) is emitted
  by a backend emitter of its own; XLA:GPU's priority fusion fuses no producer or consumer into one
  (the same `IsFusible`; newer XLA excepts generic Triton fusions);
- asynchronous start/done pairs, collectives, send/recv, infeed/outfeed and control flow are
  scheduled on their own and are not fused (the same `IsFusible` list; XLA's async instructions,
  xla/hlo/ir/hlo_instruction.h `IsAsynchronous`);
- a change of layout between an operand and its user (`{1,0}` to `{0,1}`) is a transpose in memory:
  the user is a copy or transpose that XLA's layout assignment inserted (xla/service/layout_assignment.cc),
  which a loop fusion reads whole.
"""

from __future__ import annotations

import re

from tpuscope.analysis.hlo_graph import HloGraph, Neighborhood
from tpuscope.model import order_statistics
from tpuscope.model.records import record

# Opcodes XLA schedules on their own and never fuses (module docstring).
UNFUSED_OPCODES = frozenset(
    {"all-reduce", "all-reduce-start", "all-reduce-done", "all-gather", "all-gather-start", "all-gather-done",
     "reduce-scatter", "all-to-all", "ragged-all-to-all", "collective-permute", "collective-permute-start",
     "collective-permute-done", "collective-broadcast", "copy-start", "copy-done", "send", "send-done",
     "recv", "recv-done", "async-start", "async-update", "async-done", "infeed", "outfeed", "while",
     "conditional", "call", "custom-call"}
)  # fmt: skip
NOT_COMPUTED = frozenset({"parameter", "constant"})
_LAYOUT = re.compile(r"\]\{([0-9,]*)")


@record(frozen=True)
class FusionHint:
    """One reason, in words, that the edge `producer -> consumer` (node names) crosses a fusion boundary."""

    producer: str
    consumer: str
    reason: str

    def to_json(self) -> dict:
        return {"producer": self.producer, "consumer": self.consumer, "reason": self.reason}


def fusion_hints(part: Neighborhood) -> list[FusionHint]:
    """The hints for every operand edge among `part`'s instructions of the same, unfused computation
    (an expanded fusion's edges as the program has them, not as drawn through its parameters)."""
    graph = part.graph
    hints: list[FusionHint] = []
    inside = order_statistics.isin(graph.edge_src, part.nodes) & order_statistics.isin(
        graph.edge_dst, part.nodes
    )
    for producer, consumer in zip(
        graph.edge_src[inside].tolist(), graph.edge_dst[inside].tolist(), strict=True
    ):
        if graph.fused_into[producer] >= 0 or graph.fused_into[consumer] >= 0:
            continue  # inside a fusion: fused already
        if graph.computation[producer] != graph.computation[consumer]:
            continue
        if graph.opcode[producer] in NOT_COMPUTED:
            continue  # a program's input or a constant: nothing was there to fuse
        if _async_pair(graph.opcode[producer], graph.opcode[consumer]):
            continue  # the two halves of one asynchronous op
        reason = _reason(graph, producer, consumer)
        if reason:
            hints.append(FusionHint(graph.names[producer], graph.names[consumer], reason))
    return hints


def _reason(graph: HloGraph, producer: int, consumer: int) -> str:
    for node, role in ((consumer, "its user"), (producer, "its operand")):
        opcode = graph.opcode[node]
        name = graph.names[node]
        if opcode == "custom-call":
            return f"{role} {name} is a custom-call (a library or FFI kernel): XLA's fusion passes skip it"
        if opcode == "fusion" and graph.fusion_kind[node] == "kCustom":
            return (
                f"{role} {name} is a kCustom fusion, the kernel of a backend emitter of its own "
                "(a Triton or cuDNN GEMM on GPU, YNNPACK on CPU): XLA:GPU's priority fusion fuses no "
                "producer or consumer into one"
            )
        if opcode in UNFUSED_OPCODES:
            return f"{role} {name} is a {opcode}: XLA schedules it on its own and does not fuse it"
    if graph.opcode[consumer] in ("copy", "transpose"):
        before, after = _layout(graph.shape[producer]), _layout(graph.shape[consumer])
        if before is not None and after is not None and before != after:
            return (
                f"layout changes from {{{before}}} to {{{after}}}: {graph.names[consumer]} rewrites "
                "the array in memory"
            )
    return ""


def _layout(shape: str) -> str | None:
    found = _LAYOUT.search(shape)
    return found.group(1) if found else None


def _async_pair(producer: str, consumer: str) -> bool:
    """`copy-start` -> `copy-done`, `all-gather-start` -> `all-gather-done`, `async-start` -> ..."""
    head, _, tail = producer.rpartition("-")
    return tail in ("start", "update") and consumer.rpartition("-")[0] == head
