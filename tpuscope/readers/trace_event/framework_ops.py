"""Each device op's framework op: the innermost CPU op that launched it, and the ops around it.

A launch (tpuscope.readers.trace_event.launches) runs inside the CPU ops that asked for the work
(`aten::linear` > `aten::addmm`), nested by time on the launching thread. The device op's framework
op is the innermost of them, as TraceLens attributes a kernel to its launcher (AMD-AGI/TraceLens,
Trace2Tree/trace_to_tree.py: the nearest `cpu_op` above the launch, Python frames skipped; TreePerf
"direct kernel time") and the TensorBoard plugin gives an operator its device self time
(pytorch/kineto tb_plugin/torch_tb_profiler/profiler/event_parser.py and node.py: runtime -> op by
time containment). The reader writes it as the model's neutral stats on each device op:
`Stat.FRAMEWORK_OP` (the op's name, what `ops --by framework` groups by) and `Stat.NAME_SCOPE` (the
enclosing ops outermost first, joined by `/`, as XProf's "Framework Name Scope" line joins scopes).
The name scope also holds the model's structure around those ops where the trace records it: the
`record_function` ranges (`user_annotation`) and, with `with_modules` or `with_stack`, the
`nn.Module: Name_0` calls the Python tracer writes as `python_function` events (TraceLens builds its
nn.Module view from the same events: AMD-AGI/TraceLens, TreePerf/tree_perf.py), except the profiler's
own step ranges (`ProfilerStep#N`), which are time, not structure.

Everything per event is numpy; Python runs once per distinct CPU op that launched something or
encloses one that did (its path of enclosing ops, memoized up the tree).
"""

from __future__ import annotations

import re

import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.stats import StatColumn
from tpuscope.model.trace import Trace, Track
from tpuscope.model.vocabulary import Stat
from tpuscope.readers.trace_event.call_tree import nearest_enclosing, parents
from tpuscope.readers.trace_event.launches import find_launches

SCOPE_SEPARATOR = "/"


def attach_framework_ops(
    trace: Trace,
    category_stat: str,
    op_categories: frozenset[str],
    scope_records: tuple[tuple[frozenset[str], str], ...] = (),
    not_scope_names: str = "",
    scope_prefix: str = "",
) -> None:
    """Writes `Stat.FRAMEWORK_OP` and `Stat.NAME_SCOPE` on each device op whose launch sits inside
    a CPU op: a host event whose name's `category_stat` (a metadata stat) is one of `op_categories`.

    The name scope is the path of enclosing CPU ops and scope records: for each (categories, names) of
    `scope_records`, the events of one of those categories whose name the regex `names` finds ("" any
    name), unless `not_scope_names` finds it too. A scope name starting with `scope_prefix` is written
    without it (`nn.Module: Linear_0` is `Linear_0`)."""
    tracks = trace.track_list()
    launches = find_launches(trace, tracks)
    if not len(launches):
        return
    framework = np.zeros(len(launches), np.int32)
    scope = np.zeros(len(launches), np.int32)
    wanted_ids = _category_ids(trace, op_categories)
    records = [(_category_ids(trace, categories), names) for categories, names in scope_records]
    for number in order_statistics.sorted_distinct(launches.source_track).tolist():
        track = tracks[number]
        is_op = _is_op(track, category_stat, wanted_ids)
        if is_op is None or not is_op.any():
            continue
        mine = np.flatnonzero(launches.source_track == number)
        tree_parent = parents(track)
        launcher = nearest_enclosing(tree_parent, launches.source_event[mine], is_op, include_self=True)
        found = launcher >= 0
        framework[mine[found]] = track.name_id[launcher[found]]
        is_scope = is_op.copy()
        for ids, names in records:
            is_scope |= _is_scope_record(trace, track, category_stat, ids, names, not_scope_names)
        scope[mine[found]] = _scopes(trace, track, tree_parent, is_scope, launcher[found], scope_prefix)
    _write(tracks, launches.target_track, launches.target_event, framework, scope)


def _is_scope_record(
    trace: Trace, track: Track, category_stat: str, scope_ids: np.ndarray, names: str, not_names: str
) -> np.ndarray:
    """Per event of a host track: whether it is a scope record (`attach_framework_ops`). Decided once
    per distinct name of the track's metadata, then gathered to the events."""
    column = track.plane.metadata.stats.column(category_stat)
    if column is None or not len(scope_ids) or not len(track):
        return np.zeros(len(track), bool)
    count = len(track.plane.metadata)
    per_name = order_statistics.isin(column.dense(count, 0), scope_ids)
    rows = np.flatnonzero(per_name)
    if len(rows) and (names or not_names):
        wanted, unwanted = re.compile(names) if names else None, re.compile(not_names) if not_names else None
        strings = trace.strings
        name_of_row = track.plane.metadata.name_ids
        for row in rows.tolist():
            text = strings[int(name_of_row[row])]
            keep = (wanted is None or wanted.search(text)) and not (unwanted and unwanted.search(text))
            per_name[row] = bool(keep)
    return per_name[track.meta_index]


def _category_ids(trace: Trace, categories: frozenset[str]) -> np.ndarray:
    ids = [trace.strings.id_of(c) for c in categories]
    return np.array([i for i in ids if i is not None], np.int64)


def _is_op(track: Track, category_stat: str, wanted_ids: np.ndarray) -> np.ndarray | None:
    """Per event of a host track: whether it is a CPU op (None when the names carry no category)."""
    column = track.plane.metadata.stats.column(category_stat)
    if column is None or not len(wanted_ids):
        return None
    per_name = order_statistics.isin(column.dense(len(track.plane.metadata), 0), wanted_ids)
    return per_name[track.meta_index] if len(track) else np.zeros(0, bool)


def _scopes(
    trace: Trace,
    track: Track,
    tree_parent: np.ndarray,
    is_op: np.ndarray,
    launchers: np.ndarray,
    prefix: str = "",
) -> np.ndarray:
    """Per launcher event: the string id of its path of enclosing ops and scope records (`is_op`, the
    events that count), outermost first, itself last."""
    distinct, inverse = np.unique(launchers, return_inverse=True)
    ops = np.flatnonzero(is_op)
    op_parent = nearest_enclosing(tree_parent, ops, is_op, include_self=False)
    parent_of = dict(zip(ops.tolist(), op_parent.tolist(), strict=True))
    strings = trace.strings
    paths: dict[int, str] = {}

    def path(event: int) -> str:
        chain = []
        while event >= 0 and event not in paths:
            chain.append(event)
            event = parent_of.get(event, -1)
        above = paths.get(event, "")
        for link in reversed(chain):
            name = strings[int(track.name_id[link])]
            if prefix and name.startswith(prefix):
                name = name[len(prefix) :]
            above = f"{above}{SCOPE_SEPARATOR}{name}" if above else name
            paths[link] = above
        return above

    texts = [path(int(e)) for e in distinct.tolist()]
    ids = trace.strings.intern_many(texts) if texts else np.empty(0, np.int32)
    return np.asarray(ids, np.int32)[inverse.reshape(-1)]


def _write(
    tracks: list[Track],
    target_track: np.ndarray,
    target_event: np.ndarray,
    framework: np.ndarray,
    scope: np.ndarray,
) -> None:
    """The framework ops and scopes as row-sparse stat columns of the device ops' tracks."""
    has = framework > 0
    for number in order_statistics.sorted_distinct(target_track[has]).tolist():
        track = tracks[number]
        if Stat.FRAMEWORK_OP in track.stats:  # the trace names its own framework ops: kept
            continue
        mine = np.flatnonzero(has & (target_track == number))
        events, first = np.unique(target_event[mine], return_index=True)
        picked = mine[first]
        rows = events.astype(np.int32)
        track.stats.columns[Stat.FRAMEWORK_OP] = StatColumn(Stat.FRAMEWORK_OP, "str", rows, framework[picked])
        track.stats.columns[Stat.NAME_SCOPE] = StatColumn(Stat.NAME_SCOPE, "str", rows, scope[picked])
