"""Device self time as a tree of the model's structure: by framework scope, by Python call stack, or by
program and op; what a flame graph, `tpuscope flame` and `ops --by scope` show.

Each op's self time (the op table's, `tpuscope.analysis.ops`) lands on one path of frames:

- `scope`: its framework op split on `/`, as XProf's "Framework Name Scope" line splits it
  (openxla/xprof, xprof/utils/derived_timeline.cc): JAX's `jit(f)/blocks/block_1/mlp/dot_general`
  (named scopes, Flax modules); for PyTorch kernels, the path of CPU ops (and, where the reader
  records them, `record_function` ranges and `nn.Module` calls) around the launch that the reader
  writes as the kernel's name scope. Ops without one are `(no scope)/<op>`.
- `stack`: the Python stack that traced the op (`tpuscope.analysis.op_source.frames_of`), outermost
  frame first, each `function (file:line)`, then the op's name; `(no stack)/<op>` without one.
- `op`: program, category, op: the op table by op as a tree.

Inside fusions (`fusion="split"`, scope and stack): a fusion's time is split among the scopes (or
stacks) of the instructions it fused, in proportion to each one's estimated cost
(`tpuscope.analysis.fusion_cost`), and each share ends in a frame `[<fusion>: est. share]` so the
estimate is marked wherever a path is shown; `fusion="root"` keeps the op's own (its root
instruction's) scope, as XProf attributes it. Without the program's code (no HLO proto) a fusion
cannot be split and keeps its root's scope.

The work per event is a gather and one bincount; Python runs once per distinct op (and per distinct
name scope or stack an op's events carry), never per event.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import field
from functools import cache

import numpy as np

from tpuscope.analysis.fusion_cost import DEFAULT_RIDGE_FLOPS_PER_BYTE, instruction_cost
from tpuscope.analysis.op_source import frames_of, instruction_of, op_code
from tpuscope.analysis.ops import OpEvents, OpTable, _group
from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.analysis.results import Result, ResultSource
from tpuscope.analysis.trace_results import DeviceChoice, op_table_result
from tpuscope.model import order_statistics
from tpuscope.model.code import UNKNOWN_LINE, InstructionCode, ProgramCode, SourceFrame
from tpuscope.model.records import record
from tpuscope.model.vocabulary import Stat

BY_SCOPE, BY_STACK, BY_OP = "scope", "stack", "op"
FLAME_GROUPINGS = (BY_SCOPE, BY_STACK, BY_OP)
FUSION_SPLIT, FUSION_ROOT = "split", "root"
FUSION_MODES = (FUSION_SPLIT, FUSION_ROOT)
SCOPE_SEPARATOR = "/"  # XProf splits framework op names into scopes on it
ROOT_NAME = "all"
NO_SCOPE, NO_STACK = "(no scope)", "(no stack)"
ESTIMATE_MARK = "[{}: est. share]"  # the last frame of a fusion's estimated share
MAX_NESTED_FUSIONS = 8  # fusions inside fusions expanded this deep (XLA nests one or two levels)
PS_PER_NS = 1000


@record(frozen=True)
class Frame:
    """One frame of a path: its name, and for a Python frame its file and line (speedscope keeps them)."""

    name: str
    file: str = ""
    line: int = 0


@record
class FlameTree:
    """The tree as parallel columns over its nodes; node 0 is the root (`all`), parents come first."""

    by: str
    fusion: str
    frames: list[Frame]
    parent: np.ndarray  # int64, -1 for the root
    depth: np.ndarray  # int64, 0 for the root
    self_ps: np.ndarray  # float64: device self time landing on the node itself
    total_ps: np.ndarray  # float64: the node's and its descendants'
    estimated: np.ndarray  # bool: some of the node's time is a fusion's estimated share
    events: OpEvents | None = None
    # Which ops reach which nodes, for outlining a subtree's ops: per part, its op group and node;
    # per event (OpEvents row), its op group (-1: left out by the filters).
    part_group: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    part_node: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    group_of_event: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    _children: list[list[int]] | None = field(default=None, init=False, repr=False)

    def __len__(self) -> int:
        return len(self.frames)

    @property
    def total_self_ps(self) -> float:
        return float(self.total_ps[0]) if len(self) else 0.0

    @property
    def has_estimates(self) -> bool:
        return bool(self.estimated.any())

    def name(self, node: int) -> str:
        return self.frames[node].name

    def children(self, node: int) -> list[int]:
        """The node's children, most time first (ties by name)."""
        if self._children is None:
            found: list[list[int]] = [[] for _ in range(len(self))]
            order = np.lexsort((np.array([f.name for f in self.frames], dtype=object), -self.total_ps))
            for k in order.tolist():
                p = int(self.parent[k])
                if p >= 0:
                    found[p].append(k)
            self._children = found
        return self._children[node]

    def path(self, node: int) -> list[int]:
        """The nodes from the root's child down to `node` (the root itself left out)."""
        found = []
        while node > 0:
            found.append(node)
            node = int(self.parent[node])
        return found[::-1]

    def subtree(self, node: int) -> np.ndarray:
        """Every node under `node`, itself included (parents come before children in node order)."""
        inside = np.zeros(len(self), bool)
        inside[node] = True
        for k in range(node + 1, len(self)):
            if inside[int(self.parent[k])]:
                inside[k] = True
        return np.flatnonzero(inside)

    def event_mask(self, node: int) -> np.ndarray:
        """Per OpEvents row: whether some of its time lands in `node`'s subtree (its ops, outlined)."""
        nodes = self.subtree(node)
        groups = order_statistics.sorted_distinct(
            self.part_group[order_statistics.isin(self.part_node, nodes)]
        )
        return order_statistics.isin(self.group_of_event, groups) & (self.group_of_event >= 0)

    def find(self, text: str) -> np.ndarray:
        """The nodes whose name contains `text` (case-insensitive)."""
        wanted = text.lower()
        return np.array([k for k, f in enumerate(self.frames) if k and wanted in f.name.lower()], np.int64)

    def leaf_counts_ns(self) -> tuple[np.ndarray, np.ndarray]:
        """(nodes with self time, their self time in whole nanoseconds): rounded by largest remainder
        so that the counts add up to the tree's total self time in nanoseconds, rounded."""
        nodes = np.flatnonzero(self.self_ps > 0)
        exact = self.self_ps[nodes] / PS_PER_NS
        counts = np.floor(exact).astype(np.int64)
        target = int(round(float(self.self_ps.sum()) / PS_PER_NS))
        short = target - int(counts.sum())
        if short > 0 and len(nodes):
            remainder = exact - counts
            top = np.argsort(-remainder, kind="stable")[:short]
            counts[top] += 1
        return nodes, counts


def event_name_scopes(events: OpEvents) -> np.ndarray:
    """Per OpEvents row: the string id of the name scope its event carries (0: none)."""
    found = np.zeros(len(events), np.int64)
    for track, indices, offset in events.segments:
        values = track.stat_values(Stat.NAME_SCOPE, fill=0)
        if values is not None:
            found[offset : offset + len(indices)] = values[indices]
    return found


def flame_tree(
    table: OpTable,
    code: Mapping[int, ProgramCode] | None,
    by: str = BY_SCOPE,
    fusion: str = FUSION_SPLIT,
    keep: np.ndarray | None = None,
    ridge_flops_per_byte: float | None = None,
) -> FlameTree:
    """The tree of `table` (the op table by op of some devices) `by` scope, stack or op (module
    docstring); `keep` (a mask over the table's op events) leaves the other events out."""
    if by not in FLAME_GROUPINGS:
        raise ValueError(f"unknown flame grouping {by!r}; expected one of {', '.join(FLAME_GROUPINGS)}")
    if fusion not in FUSION_MODES:
        raise ValueError(f"unknown fusion attribution {fusion!r}; expected one of {', '.join(FUSION_MODES)}")
    if table.by != "op":
        raise ValueError("a flame graph is built from the op table by op")
    events = table.events
    ridge = ridge_flops_per_byte or (
        table.peaks.ridge_flops_per_byte if table.peaks else DEFAULT_RIDGE_FLOPS_PER_BYTE
    )
    # Ops are the table's rows; where events of one op carry different scopes or stacks (PyTorch
    # kernels launched from several places), each (op, scope or stack) is a group of its own.
    extra = (
        event_name_scopes(events)
        if by == BY_SCOPE
        else events.stack.astype(np.int64)
        if by == BY_STACK and len(events.stack)
        else None
    )
    if extra is not None and extra.any():
        _, dense = _group(extra)
        first, group = _group(table.row_of_event.astype(np.int64) * (int(dense.max()) + 1) + dense)
    else:
        group, first = table.row_of_event.astype(np.int64), table.first_event.astype(np.int64)
    self_ps = events.self_ps if keep is None else np.where(keep, events.self_ps, 0)
    group_self = np.bincount(group, weights=self_ps, minlength=len(first))
    builder = _Builder()
    part_group: list[int] = []
    part_node: list[int] = []
    for k in np.flatnonzero(group_self > 0).tolist():
        row = int(first[k])
        if by == BY_OP:
            parts = [(_op_path(table, int(table.row_of_event[row]), events, row), 1.0, False)]
        else:
            parts = _parts(events, row, code, by, fusion, ridge, extra)
        for frames, share, estimated in parts:
            node = builder.add(frames, float(group_self[k]) * share, estimated)
            part_group.append(k)
            part_node.append(node)
    group_of_event = group if keep is None else np.where(keep, group, -1)
    return builder.tree(
        by, fusion, events, np.array(part_group, np.int64), np.array(part_node, np.int64), group_of_event
    )


@cache
def flame_tree_result(
    by: str = BY_SCOPE, fusion: str = FUSION_SPLIT, device: DeviceChoice = "all"
) -> Result[FlameTree | None]:
    """The whole profile's tree of the chosen devices, computed once per trace (None: no ops)."""

    def compute(a: ResultSource) -> FlameTree | None:
        table = a.get(op_table_result("op", device))
        if table is None:
            return None
        code = a.get(PROGRAM_CODE) if by != BY_OP else None
        return flame_tree(table, code, by, fusion)

    key = str(device).lower() if isinstance(device, str) else str(int(device))
    return Result(f"flame_tree[{by},{fusion},{key}]", compute)


class _Builder:
    """A trie of frames with the time landing on each node."""

    def __init__(self) -> None:
        self.frames = [Frame(ROOT_NAME)]
        self.parent = [-1]
        self.self_ps = [0.0]
        self.estimated = [False]
        self._child: dict[tuple[int, Frame], int] = {}

    def add(self, path: list[Frame], ps: float, estimated: bool) -> int:
        node = 0
        for frame in path:
            found = self._child.get((node, frame))
            if found is None:
                found = self._child[(node, frame)] = len(self.frames)
                self.frames.append(frame)
                self.parent.append(node)
                self.self_ps.append(0.0)
                self.estimated.append(False)
            node = found
        self.self_ps[node] += ps
        if estimated:
            self.estimated[node] = True
        return node

    def tree(self, by, fusion, events, part_group, part_node, group_of_event) -> FlameTree:
        parent = np.array(self.parent, np.int64)
        n = len(parent)
        self_ps = np.array(self.self_ps, np.float64)
        total = self_ps.copy()
        estimated = np.array(self.estimated, bool)
        depth = np.zeros(n, np.int64)
        for k in range(1, n):  # parents come first: depths down, then totals up
            depth[k] = depth[parent[k]] + 1
        for k in range(n - 1, 0, -1):
            total[parent[k]] += total[k]
            estimated[parent[k]] |= estimated[k]
        return FlameTree(
            by, fusion, self.frames, parent, depth, self_ps, total, estimated,
            events, part_group, part_node, group_of_event,
        )  # fmt: skip


def _op_name(events: OpEvents, row: int) -> str:
    return events.labels.texts[int(events.op[row])]


def _op_path(table: OpTable, table_row: int, events: OpEvents, row: int) -> list[Frame]:
    """By op: program, category, op."""
    program = table.label(table.program[table_row]) if table.program[table_row] else "(no program)"
    category = table.label(table.category[table_row]) if table.category[table_row] else "(no category)"
    return [Frame(program), Frame(category), Frame(_op_name(events, row))]


def _scope_frames(scope: str) -> list[Frame]:
    return [Frame(part) for part in scope.split(SCOPE_SEPARATOR) if part]


def _stack_frames(frames: list[SourceFrame] | tuple[SourceFrame, ...]) -> list[Frame]:
    """A stack (innermost first) as frames outermost first, each `function (file:line)`."""
    found = []
    for frame in reversed(frames):
        where = os.path.basename(frame.file) if frame.file else "?"
        if frame.line != UNKNOWN_LINE:
            where += f":{frame.line}"
        name = f"{frame.function} ({where})" if frame.function else where
        found.append(Frame(name, frame.file, max(frame.line, 0)))
    return found


def _root_path(events: OpEvents, row: int, code, by: str, extra: np.ndarray | None) -> list[Frame]:
    """The op's own path: its (root instruction's) scope, or its stack then its name."""
    found = op_code(events, row, code)
    name = _op_name(events, row)
    if by == BY_SCOPE:
        scope = found.framework_op
        carried = int(extra[row]) if extra is not None and len(extra) else 0
        if carried and events.strings is not None:  # the path of ops around a PyTorch launch
            carried_text = events.strings[carried]
            if not scope or carried_text.endswith(scope):
                scope = carried_text
        frames = _scope_frames(scope)
        return frames if frames else [Frame(NO_SCOPE), Frame(name)]
    stack = frames_of(found, instruction_of(events, row, code))
    return _stack_frames(stack) + [Frame(name)] if stack else [Frame(NO_STACK), Frame(name)]


def _fused_costs(program: ProgramCode, instruction: InstructionCode, ridge: float, depth: int = 0):
    """(fused instruction, cost) of every instruction a fusion fused, nested fusions expanded."""
    for name in instruction.fused:
        inner = program.get(name)
        if inner is None:
            continue
        if inner.fused and depth < MAX_NESTED_FUSIONS:
            yield from _fused_costs(program, inner, ridge, depth + 1)
        else:
            yield inner, instruction_cost(inner.text, ridge)


def _parts(events: OpEvents, row: int, code, by: str, fusion: str, ridge: float, extra):
    """[(path, share of the op's time, whether the share is an estimate)] of the op at `row`."""
    root = _root_path(events, row, code, by, extra)
    instruction = instruction_of(events, row, code) if fusion == FUSION_SPLIT else None
    if instruction is None or not instruction.fused or code is None:
        return [(root, 1.0, False)]
    program = code.get(int(events.program_id[row]))
    if program is None:
        return [(root, 1.0, False)]
    weights: dict[tuple[Frame, ...], float] = {}
    root_key = tuple(root if by == BY_SCOPE else root[:-1])
    for inner, cost in _fused_costs(program, instruction, ridge):
        if cost <= 0:
            continue
        if by == BY_SCOPE:
            key = tuple(_scope_frames(inner.framework_op)) or root_key
        else:
            key = tuple(_stack_frames(inner.stack)) or root_key
        weights[key] = weights.get(key, 0.0) + cost
    total = sum(weights.values())
    if total <= 0 or len(weights) < 2:
        return [(root, 1.0, False)]
    mark = Frame(ESTIMATE_MARK.format(_op_name(events, row)))
    return [(list(key) + [mark], weight / total, True) for key, weight in weights.items()]
