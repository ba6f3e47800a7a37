"""The HLO graph of a compiled program, and the part of it around one op.

Every instruction of a program is one node (its name, opcode, result shape and computation) and every
operand one edge, operand -> user, read from the instruction's text as XLA prints it
(`%fusion.3 = f32[8]{0} fusion(f32[8]{0} %p, f32[] %c), kind=kLoop, calls=%fused_computation`):
the operands are the `%names` between the opcode's parentheses. The text comes from the program's
code (`tpuscope.model.code.ProgramCode`, the reader's decoding of the `HloProto` the profile keeps),
so the graph needs no format: what the op table shows as an op's HLO text is what is parsed here.
Nodes and edges are parallel numpy columns (`HloGraph`); a fusion's fused computation is in the
same columns, each fused instruction naming the fusion that calls it (`fused_into`).

The neighbourhood of an op (`neighborhood`) is what XProf's graph viewer draws around a centre
op: every instruction within `radius` hops of it, following operands and users alike (XProf's
`get_hlo_neighborhood` does the same breadth-first walk, radius 2 by default: openxla/xprof
plugin/xprof/cli, docs/graph_viewer.md), each with its device self time from the op table.
With `expand`, each fusion in it also shows the instructions it fused: the fusion's operands feed
its fused `parameter(k)`s and the fused root feeds the fusion node.

Every instruction's text is decoded for this (the reader prints each on first use, the most of the
cost), so a program's graph is built once per analysis (`hlo_graph_result`): measured on a real
JAX CPU program of 7,495 instructions, 1.3 s on a shared 2-core VM (about 170 us per instruction).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import field

import numpy as np

from tpuscope.analysis.diagnose.hlo_text import split_balanced
from tpuscope.analysis.ops import OpTable, short_op_name
from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.analysis.results import Result, ResultSource
from tpuscope.model import order_statistics
from tpuscope.model.code import ProgramCode
from tpuscope.model.records import record

# `%name = <shape> opcode(`: the head of an instruction, its result shape and opcode.
_HEAD = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*")
_OPERAND = re.compile(r"%([\w.\-]+)")
_PARAMETER = re.compile(r"\bparameter\((\d+)\)")
_FUSION_KIND = re.compile(r"\bkind=(k\w+)")
DEFAULT_RADIUS = 2  # XProf's get_hlo_neighborhood default
# The most nodes a neighbourhood holds: a parameter read by thousands of instructions would
# otherwise make a picture nobody can read (our heuristic). The walk stops adding there and says so.
MAX_NEIGHBORHOOD_NODES = 300
CLOSE_MATCHES = 5  # names offered when an op is not found


@record(frozen=True)
class HloGraph:
    """One program's instructions (nodes) and operands (edges), as parallel columns."""

    program_id: int | None
    module_name: str
    names: list[str]
    opcode: list[str]
    shape: list[str]  # the result shape with its layout, as XLA prints it
    text: list[str]  # the instruction as XLA prints it
    computation: list[str]
    fusion_kind: list[str]  # "kLoop", "kInput", ... for fusions, "" otherwise
    parameter_number: np.ndarray  # int32: k for `parameter(k)`, else -1
    fused_into: np.ndarray  # int32: the node of the fusion whose computation holds this one, else -1
    edge_src: np.ndarray  # int32 node ids: the operand
    edge_dst: np.ndarray  # int32 node ids: its user
    edge_operand: np.ndarray  # int32: the operand's position among the user's operands
    index: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.names)

    def node(self, name: str) -> int | None:
        return self.index.get(short_op_name(name))


def build_graph(program: ProgramCode) -> HloGraph:
    """The graph of every instruction of `program` (module docstring)."""
    names: list[str] = []
    opcode: list[str] = []
    shape: list[str] = []
    text: list[str] = []
    computation: list[str] = []
    kinds: list[str] = []
    parameters: list[int] = []
    operands: list[list[str]] = []
    fused_lists: list[tuple[str, ...]] = []
    for name in program.index.names():
        instruction = program.get(name)
        if instruction is None:
            continue
        line = instruction.text
        shape_text, operand_names = _shape_and_operands(line, instruction.opcode)
        names.append(instruction.name)
        opcode.append(instruction.opcode)
        shape.append(shape_text)
        text.append(line)
        computation.append(instruction.computation)
        kind = _FUSION_KIND.search(line) if instruction.opcode == "fusion" else None
        kinds.append(kind.group(1) if kind else "")
        number = _PARAMETER.search(line) if instruction.opcode == "parameter" else None
        parameters.append(int(number.group(1)) if number else -1)
        operands.append(operand_names)
        fused_lists.append(instruction.fused)
    index = {name: k for k, name in enumerate(names)}
    src: list[int] = []
    dst: list[int] = []
    position: list[int] = []
    for user, operand_names in enumerate(operands):
        for k, operand in enumerate(operand_names):
            found = index.get(operand)
            if found is not None:
                src.append(found)
                dst.append(user)
                position.append(k)
    fused_into = np.full(len(names), -1, np.int32)
    for fusion, fused in enumerate(fused_lists):
        members = [index[n] for n in fused if n in index]
        fused_into[members] = fusion
    return HloGraph(
        program_id=program.program_id,
        module_name=program.module_name,
        names=names,
        opcode=opcode,
        shape=shape,
        text=text,
        computation=computation,
        fusion_kind=kinds,
        parameter_number=np.asarray(parameters, np.int32),
        fused_into=fused_into,
        edge_src=np.asarray(src, np.int32),
        edge_dst=np.asarray(dst, np.int32),
        edge_operand=np.asarray(position, np.int32),
        index=index,
    )


def _shape_and_operands(text: str, opcode: str) -> tuple[str, list[str]]:
    """The result shape and the operand names of one instruction's text (`%x = SHAPE op(OPERANDS), ...`):
    the operands open at the first ` opcode(` (a shape never holds a space before a parenthesis)."""
    head = _HEAD.match(text)
    if head is None:
        return "", []
    rest = text[head.end() :]
    at = rest.find(f" {opcode}(")
    if at < 0:
        return "", []
    return rest[:at].strip(), _OPERAND.findall(split_balanced(rest[at + len(opcode) + 1 :])[0])


def hlo_graph_result(program_id: int) -> Result[HloGraph | None]:
    """The graph of program `program_id`, built once per analysis (None: the profile has no such program)."""

    def compute(source: ResultSource) -> HloGraph | None:
        program = source.get(PROGRAM_CODE).get(program_id)
        return build_graph(program) if program is not None else None

    return Result(f"hlo_graph:{program_id}", compute)


# ----- where an op is ---------------------------------------------------------------------------


@record(frozen=True)
class OpPlace:
    """The program an op name was found in, and the other programs that also have an instruction so named."""

    program_id: int
    module_name: str
    others: list[int] = field(default_factory=list)


class OpNotFound(LookupError):
    """No program of the profile has an instruction of that name; `close` are the nearest names."""

    def __init__(self, name: str, close: list[str]):
        super().__init__(name)
        self.name = name
        self.close = close


def device_times(table: OpTable | None) -> dict[tuple[int, str], int]:
    """(program id, op name) -> device self time in ps, from the op table by op."""
    if table is None or table.by != "op" or not len(table.first_event):
        return {}
    program_ids = table.events.program_id
    times: dict[tuple[int, str], int] = {}
    for row in range(len(table)):
        pid = int(program_ids[int(table.first_event[row])]) if len(program_ids) else 0
        key = (pid, table.label(table.name[row]))
        times[key] = times.get(key, 0) + int(table.self_ps[row])
    return times


def find_op(
    code: Mapping[int, ProgramCode],
    name: str,
    times: Mapping[tuple[int, str], int],
    program: str | None = None,
) -> OpPlace:
    """The program whose instruction `name` is meant: the one given (`program`: its id, module name
    or `jit_f(id)` label), else the one where an instruction so named has the most device time,
    else the first that has one. Raises OpNotFound (with the closest names) when none has it."""
    wanted = short_op_name(name)
    chosen = [pid for pid, p in code.items() if _is_program(pid, p, program)] if program else list(code)
    holding = [pid for pid in chosen if code[pid].get(wanted) is not None]
    if not holding:
        known = sorted({n for pid in chosen for n in code[pid].index.names()})
        raise OpNotFound(wanted, difflib.get_close_matches(wanted, known, n=CLOSE_MATCHES, cutoff=0.5))
    best = max(holding, key=lambda pid: (times.get((pid, wanted), 0), -holding.index(pid)))
    return OpPlace(best, code[best].module_name, [pid for pid in holding if pid != best])


def _is_program(program_id: int, program: ProgramCode, wanted: str) -> bool:
    return wanted in (str(program_id), program.module_name, f"{program.module_name}({program_id})")


# ----- the part around an op --------------------------------------------------------------------


@record(frozen=True)
class Neighborhood:
    """The nodes within `radius` hops of `center` (graph node ids), with the edges among them."""

    graph: HloGraph
    center: int
    radius: int
    nodes: np.ndarray  # int32 graph node ids: the centre first, then by distance and program order
    distance: np.ndarray  # int32 hops from the centre; -1 for fused instructions shown by `expand`
    edge_src: np.ndarray  # int32 positions in `nodes`
    edge_dst: np.ndarray
    self_ps: np.ndarray  # int64 device self time of each node (0: none recorded)
    truncated: bool = False  # the walk stopped at MAX_NEIGHBORHOOD_NODES

    def __len__(self) -> int:
        return len(self.nodes)


def neighborhood(
    graph: HloGraph,
    center: int,
    radius: int = DEFAULT_RADIUS,
    times: Mapping[tuple[int, str], int] | None = None,
    expand: bool = False,
    limit: int = MAX_NEIGHBORHOOD_NODES,
) -> Neighborhood:
    """The instructions within `radius` hops of node `center`, operands and users alike (module
    docstring); with `expand`, the fused instructions of every fusion in it too."""
    n = len(graph)
    distance = np.full(n, -1, np.int32)
    distance[center] = 0
    frontier = np.array([center], np.int32)
    truncated = False
    src, dst = graph.edge_src, graph.edge_dst
    for hop in range(1, radius + 1):
        if not len(frontier):
            break
        in_frontier = np.zeros(n, bool)
        in_frontier[frontier] = True
        reached = np.concatenate((dst[in_frontier[src]], src[in_frontier[dst]]))
        reached = order_statistics.sorted_distinct(reached[distance[reached] < 0])
        room = limit - int((distance >= 0).sum())
        if len(reached) > room:
            reached, truncated = reached[: max(room, 0)], True
        distance[reached] = hop
        frontier = reached
    chosen = np.flatnonzero(distance >= 0).astype(np.int32)
    chosen = chosen[np.lexsort((chosen, distance[chosen]))]
    node_distance = distance[chosen]
    if expand:
        fusions = chosen[np.asarray([graph.opcode[k] == "fusion" for k in chosen], bool)]
        inside = np.flatnonzero(order_statistics.isin(graph.fused_into, fusions)).astype(np.int32)
        inside = inside[~order_statistics.isin(inside, chosen)]
        chosen = np.concatenate((chosen, inside))
        node_distance = np.concatenate((node_distance, np.full(len(inside), -1, np.int32)))
    position = np.full(n, -1, np.int32)
    position[chosen] = np.arange(len(chosen), dtype=np.int32)
    keep = (position[src] >= 0) & (position[dst] >= 0)
    edge_src, edge_dst = position[src[keep]], position[dst[keep]]
    if expand:
        edge_src, edge_dst = _fusion_boundaries(graph, chosen, position, edge_src, edge_dst)
    times = times or {}
    pid = graph.program_id or 0
    self_ps = np.fromiter((times.get((pid, graph.names[k]), 0) for k in chosen), np.int64, len(chosen))
    return Neighborhood(graph, center, radius, chosen, node_distance, edge_src, edge_dst, self_ps, truncated)


def _fusion_boundaries(
    graph: HloGraph, chosen: np.ndarray, position: np.ndarray, edge_src: np.ndarray, edge_dst: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """An expanded fusion's operands feed its fused parameters (in place of their edges to the fusion),
    and its fused root feeds the fusion. The root is the fused instruction no other fused
    instruction reads (XLA's fused root, the computation's result)."""
    extra_src: list[int] = []
    extra_dst: list[int] = []
    replaced: set[tuple[int, int]] = set()  # (operand, fusion): drawn through the fused parameter instead
    members = chosen[graph.fused_into[chosen] >= 0]
    for fusion in order_statistics.sorted_distinct(graph.fused_into[members]):
        inside = members[graph.fused_into[members] == fusion]
        read = set(graph.edge_src[order_statistics.isin(graph.edge_dst, inside)].tolist())
        roots = [k for k in inside.tolist() if k not in read]
        if roots:
            extra_src.append(int(position[roots[-1]]))
            extra_dst.append(int(position[fusion]))
        operands = graph.edge_src[graph.edge_dst == fusion]
        order = graph.edge_operand[graph.edge_dst == fusion]
        for k in inside.tolist():
            number = int(graph.parameter_number[k])
            if number < 0:
                continue
            feeding = operands[order == number]
            if len(feeding) and position[feeding[0]] >= 0:
                extra_src.append(int(position[feeding[0]]))
                extra_dst.append(int(position[k]))
                replaced.add((int(position[feeding[0]]), int(position[fusion])))
    kept = np.fromiter(
        ((int(a), int(b)) not in replaced for a, b in zip(edge_src, edge_dst, strict=True)),
        bool,
        len(edge_src),
    )
    return (
        np.concatenate((edge_src[kept], np.asarray(extra_src, np.int32))),
        np.concatenate((edge_dst[kept], np.asarray(extra_dst, np.int32))),
    )
