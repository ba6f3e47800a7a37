"""The HLO graph around one op, as `tpuscope graph` and the Graph view show it: the op found in the
profile's programs, its neighbourhood with each node's device time, and the fusion hints.

Device time per node is the op table's self time by op over all devices (`op_table_result`),
the number the op breakdown shows for the same (program, op); instructions that ran no event of
their own (fused instructions, parameters) have none.
"""

from __future__ import annotations

from dataclasses import field

from tpuscope.analysis.fusion_hints import FusionHint, fusion_hints
from tpuscope.analysis.hlo_graph import (
    DEFAULT_RADIUS,
    Neighborhood,
    OpNotFound,
    OpPlace,
    device_times,
    find_op,
    hlo_graph_result,
    neighborhood,
)
from tpuscope.analysis.ops import short_op_name
from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.analysis.results import Result, ResultSource
from tpuscope.analysis.trace_results import DEVICES, op_table_result
from tpuscope.model.records import record

MAX_RADIUS = 20  # beyond this a neighbourhood is the whole program: our heuristic


class NoPrograms(LookupError):
    """The profile keeps no compiled programs (no HLO) to draw a graph from."""


@record(frozen=True)
class OpGraph:
    """The neighbourhood of one op (see the module docstring)."""

    op: str
    place: OpPlace
    part: Neighborhood
    hints: list[FusionHint] = field(default_factory=list)
    expanded: bool = False

    @property
    def program_label(self) -> str:
        return f"{self.place.module_name}({self.place.program_id})"

    def node_json(self, k: int) -> dict:
        graph, node = self.part.graph, int(self.part.nodes[k])
        fused_into = int(graph.fused_into[node])
        return {
            "name": graph.names[node],
            "opcode": graph.opcode[node],
            "shape": graph.shape[node],
            "fusion_kind": graph.fusion_kind[node] or None,
            "computation": graph.computation[node],
            "fused_into": graph.names[fused_into] if fused_into >= 0 else None,
            "distance": int(self.part.distance[k]) if self.part.distance[k] >= 0 else None,
            "device_time_us": int(self.part.self_ps[k]) / 1e6,
            "hlo_text": graph.text[node],
        }

    def to_json(self) -> dict:
        names = self.part.graph.names
        nodes = self.part.nodes
        return {
            "op": self.op,
            "program": self.program_label,
            "program_id": self.place.program_id,
            "also_in_programs": list(self.place.others),
            "radius": self.part.radius,
            "expanded": self.expanded,
            "truncated": self.part.truncated,
            "nodes": [self.node_json(k) for k in range(len(nodes))],
            "edges": [
                {"from": names[int(nodes[a])], "to": names[int(nodes[b])]}
                for a, b in zip(self.part.edge_src.tolist(), self.part.edge_dst.tolist(), strict=True)
            ],
            "hints": [h.to_json() for h in self.hints],
        }


def op_graph(
    analysis: ResultSource,
    op: str,
    radius: int = DEFAULT_RADIUS,
    expand: bool = False,
    program: str | None = None,
) -> OpGraph:
    """The graph around op `op` (its name, or its HLO text): raises NoPrograms when the profile
    keeps no HLO, OpNotFound (with close names) when no program has such an instruction."""
    code = analysis.get(PROGRAM_CODE)
    if not code:
        raise NoPrograms(op)
    times = device_times(analysis.get(op_table_result("op", "all"))) if analysis.get(DEVICES) else {}
    name = short_op_name(op)
    place = find_op(code, name, times, program)
    graph = analysis.get(hlo_graph_result(place.program_id))
    center = graph.node(name) if graph is not None else None
    if graph is None or center is None:  # the program's code has it, so its graph has it too
        raise OpNotFound(name, [])
    part = neighborhood(graph, center, min(max(radius, 0), MAX_RADIUS), times, expand)
    return OpGraph(name, place, part, fusion_hints(part), expand)


def op_graph_result(
    op: str, radius: int = DEFAULT_RADIUS, expand: bool = False, program: str | None = None
) -> Result[OpGraph]:
    """`op_graph` as a shared result (the app computes it in a worker, once per question)."""
    return Result(
        f"op_graph:{program}:{op}:{radius}:{expand}", lambda a: op_graph(a, op, radius, expand, program)
    )


def heaviest_op(analysis: ResultSource) -> str | None:
    """The op with the most device self time whose program's code the profile keeps (the graph to
    show before any op is picked), None when there is none."""
    code = analysis.get(PROGRAM_CODE)
    if not code or not analysis.get(DEVICES):
        return None
    table = analysis.get(op_table_result("op", "all"))
    if table is None or not len(table.first_event):
        return None
    program_ids = table.events.program_id
    for row in range(len(table)):
        pid = int(program_ids[int(table.first_event[row])]) if len(program_ids) else 0
        program = code.get(pid)
        name = table.label(table.name[row])
        if program is not None and program.get(name) is not None:
            return name
    return None


# The op the Graph view shows before one is picked.
HEAVIEST_OP: Result[str | None] = Result("graph_heaviest_op", heaviest_op)
