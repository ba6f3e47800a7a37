"""Each device op's framework op: the innermost CPU op that launched it, and the ops around it.

A PyTorch profiler trace ties each kernel, copy and memset to the runtime call that launched it
(`cudaLaunchKernel`, `cuLaunchKernel`, `cudaMemcpyAsync`...): by a launch flow from the call to the
device op, and by the CUPTI `correlation` both carry (pytorch/kineto libkineto/src/output_json.cpp).
The call runs inside the CPU ops that asked for the work (`aten::linear` > `aten::addmm`), nested by
time on the launching thread. The device op's framework op is the innermost of those ops, as
TraceLens attributes a kernel to its launcher (AMD-AGI/TraceLens, Trace2Tree/trace_to_tree.py:
the nearest `cpu_op` above the launch, Python frames skipped; TreePerf "direct kernel time") and
the TensorBoard plugin gives an operator its device self time (pytorch/kineto
tb_plugin/torch_tb_profiler/profiler/event_parser.py and node.py: runtime -> op by time
containment). The reader writes it as the model's neutral stats on each device op:
`Stat.FRAMEWORK_OP` (the op's name, what `ops --by framework` groups by) and `Stat.NAME_SCOPE`
(the enclosing ops outermost first, joined by `/`, as XProf's "Framework Name Scope" line joins
scopes).

The launch is found by the flow when one is bound, else by the correlation id among the host
events of the same host. Everything per event is numpy; Python runs once per distinct CPU op that
launched something (its path of enclosing ops, memoized up the tree).
"""

from __future__ import annotations

import numpy as np

from tpuscope.model.flows import Flows
from tpuscope.model.stats import StatColumn
from tpuscope.model.trace import Trace, Track
from tpuscope.model.vocabulary import Stat, TrackKind
from tpuscope.readers.trace_event.python_stacks import nearest_enclosing, parents

SCOPE_SEPARATOR = "/"


def attach_framework_ops(trace: Trace, category_stat: str, op_categories: frozenset[str]) -> None:
    """Writes `Stat.FRAMEWORK_OP` and `Stat.NAME_SCOPE` on each device op whose launch sits inside
    a CPU op: a host event whose name's `category_stat` (a metadata stat) is one of `op_categories`."""
    tracks = trace.track_list()
    launches = _launches(trace, tracks)
    if launches is None:
        return
    source_track, source_event, target_track, target_event = launches
    framework = np.zeros(len(source_event), np.int32)
    scope = np.zeros(len(source_event), np.int32)
    wanted_ids = _category_ids(trace, op_categories)
    for number in np.unique(source_track).tolist():
        track = tracks[number]
        is_op = _is_op(track, category_stat, wanted_ids)
        if is_op is None or not is_op.any():
            continue
        mine = np.flatnonzero(source_track == number)
        tree_parent = parents(track)
        launcher = nearest_enclosing(tree_parent, source_event[mine], is_op, include_self=True)
        found = launcher >= 0
        framework[mine[found]] = track.name_id[launcher[found]]
        scope[mine[found]] = _scopes(trace, track, tree_parent, is_op, launcher[found])
    _write(tracks, target_track, target_event, framework, scope)


def _launches(trace: Trace, tracks: list[Track]) -> tuple[np.ndarray, ...] | None:
    """(host track, host event, device track, device event) per device op with a known launch:
    its launch flow, else the host event of its host with the same correlation id."""
    is_device = np.array([t.kind == TrackKind.DEVICE_OPS for t in tracks] + [False])
    is_host = np.array([t.kind == TrackKind.HOST_THREAD for t in tracks] + [False])
    flows = trace.flows if trace.flows is not None else Flows.empty()
    launch = np.flatnonzero(is_host[flows.source_track] & is_device[flows.target_track])
    target_key = flows.target_track[launch].astype(np.int64) << 40 | flows.target_event[launch]
    _, first = np.unique(target_key, return_index=True)  # one launch per device op: its first flow
    launch = launch[first]
    parts: list[tuple[np.ndarray, ...]] = [
        (
            flows.source_track[launch].astype(np.int64),
            flows.source_event[launch].astype(np.int64),
            flows.target_track[launch].astype(np.int64),
            flows.target_event[launch].astype(np.int64),
        )
    ]
    parts.append(_by_correlation(trace, tracks, is_device, is_host, target_key[first]))
    joined = tuple(np.concatenate([p[k] for p in parts]) for k in range(4))
    return joined if len(joined[0]) else None


def _by_correlation(
    trace: Trace, tracks: list[Track], is_device: np.ndarray, is_host: np.ndarray, bound_keys: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Launches of the device ops no flow reached, matched by (host, correlation id)."""
    empty = np.empty(0, np.int64)
    host_keys, host_places, device_keys, device_places = [], [], [], []
    hosts = {host: k for k, host in enumerate(trace.hosts or dict.fromkeys(p.host for p in trace.planes))}
    for number, track in enumerate(tracks):
        if not (is_device[number] or is_host[number]):
            continue
        column = track.stats.column(Stat.CORRELATION_ID)
        if column is None or column.kind not in ("int", "uint") or not len(track):
            continue
        rows = np.flatnonzero(column.present(len(track)))
        values = column.dense(len(track), 0)[rows].astype(np.int64)
        key = np.int64(hosts.get(track.plane.host, 0)) << 48 | (values & ((1 << 48) - 1))
        place = np.stack([np.full(len(rows), number, np.int64), rows.astype(np.int64)], axis=1)
        if is_device[number]:
            unbound = ~np.isin(np.int64(number) << 40 | rows.astype(np.int64), bound_keys)
            device_keys.append(key[unbound])
            device_places.append(place[unbound])
        else:
            host_keys.append(key)
            host_places.append(place)
    if not host_keys or not device_keys:
        return empty, empty, empty, empty
    h_key, h_place = np.concatenate(host_keys), np.concatenate(host_places)
    d_key, d_place = np.concatenate(device_keys), np.concatenate(device_places)
    order = np.argsort(h_key, kind="stable")
    h_key, h_place = h_key[order], h_place[order]
    at = np.searchsorted(h_key, d_key)
    hit = (at < len(h_key)) & (h_key[np.minimum(at, len(h_key) - 1)] == d_key)
    source = h_place[at[hit]]
    target = d_place[hit]
    return source[:, 0], source[:, 1], target[:, 0], target[:, 1]


def _category_ids(trace: Trace, categories: frozenset[str]) -> np.ndarray:
    ids = [trace.strings.id_of(c) for c in categories]
    return np.array([i for i in ids if i is not None], np.int64)


def _is_op(track: Track, category_stat: str, wanted_ids: np.ndarray) -> np.ndarray | None:
    """Per event of a host track: whether it is a CPU op (None when the names carry no category)."""
    column = track.plane.metadata.stats.column(category_stat)
    if column is None or not len(wanted_ids):
        return None
    per_name = np.isin(column.dense(len(track.plane.metadata), 0), wanted_ids)
    return per_name[track.meta_index] if len(track) else np.zeros(0, bool)


def _scopes(
    trace: Trace, track: Track, tree_parent: np.ndarray, is_op: np.ndarray, launchers: np.ndarray
) -> np.ndarray:
    """Per launcher event: the string id of its path of enclosing ops (outermost first, itself last)."""
    distinct, inverse = np.unique(launchers, return_inverse=True)
    op_parent = nearest_enclosing(tree_parent, np.flatnonzero(is_op), is_op, include_self=False)
    parent_of = dict(zip(np.flatnonzero(is_op).tolist(), op_parent.tolist(), strict=True))
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
    for number in np.unique(target_track[has]).tolist():
        track = tracks[number]
        if Stat.FRAMEWORK_OP in track.stats:  # the trace names its own framework ops: kept
            continue
        mine = np.flatnonzero(has & (target_track == number))
        events, first = np.unique(target_event[mine], return_index=True)
        picked = mine[first]
        rows = events.astype(np.int32)
        track.stats.columns[Stat.FRAMEWORK_OP] = StatColumn(Stat.FRAMEWORK_OP, "str", rows, framework[picked])
        track.stats.columns[Stat.NAME_SCOPE] = StatColumn(Stat.NAME_SCOPE, "str", rows, scope[picked])
