"""Which events are collectives: the time a device (or host) spends synchronizing with the others.

Collectives are found by name and by HLO category, never by a format's structure (the names of
barriers and DCN transfers are the reader's dialect's):
- XLA collective ops, as XLA names its HLO instructions (`all-reduce`, `all-gather`,
  `reduce-scatter`, `all-to-all`, `collective-permute`, `collective-broadcast`, `send`/`recv`,
  their `-start`/`-done` halves and fusions such as `all-reduce fusion`), on TPU op lines, GPU
  streams and XLA:CPU thunks (where the gloo or MPI transfer runs inside the thunk);
- TPU multi-host barriers (`barrier-cores`, which XProf reads on the `XLA TraceMe` line:
  openxla/xprof, xprof/convert/smart_suggestion/barrier_cores_rule.h);
- NCCL/RCCL kernels on GPU streams (`ncclDevKernel_AllReduce_...`, `ncclKernel_...`);
- DCN transfers of multi-slice TPU runs: host events named `MegaScale: ...`
  (openxla/xprof, xprof/convert/dcn_utils.cc).
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.device_ops import Device
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.facts.intervals import canonical, merge_intervals
from tpuscope.model import id_columns, order_statistics
from tpuscope.model.strings import StringTable
from tpuscope.model.trace import Track
from tpuscope.model.vocabulary import Dialect, EventClass, Stat

# HLO collective opcodes (openxla/xla, xla/hlo/ir/hlo_opcode.h), matched on op names with an optional
# leading `%`, `.N` suffix, `-start`/`-done` half or ` fusion` kind, and on `hlo_category` values; and
# NCCL/RCCL kernels. XLA's and the collective libraries' own names, the same in every format that records
# HLO ops or GPU kernels, so they are matched here rather than in each reader's dialect.
COLLECTIVE_OP_PATTERN = (
    r"^%?(all-reduce|all-gather|reduce-scatter|all-to-all|ragged-all-to-all|collective-permute"
    r"|collective-broadcast|all-reduce-scatter|barrier-cores)\b"
    r"|^%?(send|recv)(-done)?(\.\d+)?$"
    r"|^(nccl|rccl)[A-Za-z]"
    # JAX names the instructions of its collective primitives after them (a shard_map's `ppermute` runs
    # on XLA:CPU as the thunk `ppermute.3`, `lax.psum` as `psum_invariant.7`: recorded with JAX 0.10).
    r"|^%?(psum|psum_invariant|pmax|pmin|pmean|ppermute|pshuffle|pbroadcast|psum_scatter|all_gather"
    r"|all_gather_invariant|all_to_all|ragged_all_to_all|reduce_scatter)(\.\d+)?$"
)

# Memory copies and sets on a device, which hide no communication: HTA's memory kernels
# (facebookresearch/HolisticTraceAnalysis, hta/utils/utils.py `get_kernel_type`: names starting with
# (hip)Memcpy, (hip)Memset or dma), counted as neither communication nor computation in its overlap,
# as TraceLens leaves copies out of `exposed_comm_time`'s computation (AMD-AGI/TraceLens,
# TraceLens/TreePerf/gpu_event_analyser.py).
MEMORY_OP_PATTERN = r"^(hip)?(Memcpy|Memset)|^dma"


class CollectiveNames:
    """The string ids of collective names and categories of one trace, found once, and the tracks
    that hold barriers (`dialect`: the trace's)."""

    def __init__(self, strings: StringTable, dialect: Dialect):
        self.op_ids = strings.ids_matching(COLLECTIVE_OP_PATTERN, regex=True, ignore_case=False)
        # The same ids as a lookup table by string id: one gather per track instead of np.isin's sort.
        self._is_op = np.zeros(len(strings), bool)
        self._is_op[self.op_ids] = True
        self._is_memory = np.zeros(len(strings), bool)
        self._is_memory[strings.ids_matching(MEMORY_OP_PATTERN, regex=True, ignore_case=False)] = True
        barriers = [strings.id_of(name) for name in dialect.barrier_events]
        self.barrier_ids = np.array([i for i in barriers if i is not None], np.int32)
        self.barrier_tracks = dialect.barrier_tracks

    def is_collective(self, track: Track, idx: np.ndarray) -> np.ndarray:
        """Mask over `idx`: the op is a collective by its name or its `hlo_category`."""
        if len(self.op_ids) == 0:  # no name or category of the trace is one: no op's needs reading
            return np.zeros(len(idx), bool)
        # A TPU op line's ops are all its events: its columns are read as they are, not gathered.
        whole = len(idx) == len(track) and (len(idx) == 0 or (idx[0] == 0 and idx[-1] == len(idx) - 1))
        mask = self._is_collective_id(track.name_id if whole else track.name_id[idx])
        metadata = track.plane.metadata
        per_op = metadata.stats.column(Stat.OP_CATEGORY)
        if track.stats.column(Stat.OP_CATEGORY) is None and per_op is not None:
            # The category is the op metadata's (as XLA records it): tested once per op, not per event.
            values = per_op.dense(len(metadata), 0)
            if values.dtype.kind in "iu":
                by_op = self._is_collective_id(values)
                meta = track.meta_index if whole else track.meta_index[idx]
                if len(meta) and meta.min() >= 0 and meta.max() < len(by_op):  # a slice at a time
                    mask |= id_columns.take(by_op, meta, np.empty(len(meta), bool))
                else:
                    mask |= by_op[meta]
            return mask
        category = track.stat_values(Stat.OP_CATEGORY, fill=0)
        if category is not None and category.dtype.kind in "iu":
            mask |= self._is_collective_id(category[idx])
        return mask

    def without_copies(self, ops: list[tuple[Track, np.ndarray]]) -> list[tuple[Track, np.ndarray]]:
        """`ops` less memory copies and sets (MEMORY_OP_PATTERN): the ops that can hide a collective."""
        kept = []
        for track, idx in ops:
            ids = track.name_id[idx]
            if len(ids) and ids.min() >= 0 and ids.max() < len(self._is_memory):  # string ids: one gather
                copy = self._is_memory[ids]
            else:
                inside = (ids >= 0) & (ids < len(self._is_memory))
                copy = np.zeros(len(idx), bool)
                copy[inside] = self._is_memory[ids[inside]]
            rest = idx[~copy] if copy.any() else idx
            if len(rest):
                kept.append((track, rest))
        return kept

    def _is_collective_id(self, values: np.ndarray) -> np.ndarray:
        """isin(values, op_ids), by the lookup table when every value is a string id of it."""
        known = len(values) and values.dtype.kind in "iu"
        if known and values.min() >= 0 and values.max() < len(self._is_op):
            return id_columns.take(self._is_op, values, np.empty(len(values), bool))
        return order_statistics.isin(values, self.op_ids)


def device_collective_events(device: Device, names: CollectiveNames) -> list[tuple[Track, np.ndarray]]:
    """The device's collective ops, plus barrier events on the plane's barrier lines."""
    return split_device_ops(device, names, others=False)[0]


def split_device_ops(
    device: Device, names: CollectiveNames, others: bool = True
) -> tuple[list[tuple[Track, np.ndarray]], list[tuple[Track, np.ndarray]]]:
    """The device's collectives (its collective ops, plus barrier events on the plane's barrier
    lines) and (with `others`) its other ops, each op tested once."""
    collectives: list[tuple[Track, np.ndarray]] = []
    rest: list[tuple[Track, np.ndarray]] = []
    for track, idx in device.events:
        mask = names.is_collective(track, idx)
        hit = idx[mask]
        if len(hit):
            collectives.append((track, hit))
        if others:
            other = idx[~mask] if len(hit) else idx  # no collective on the track: all of its ops, as given
            if len(other):
                rest.append((track, other))
    if device.kind != "CPU" and len(names.barrier_ids):
        for track in device.plane.tracks:
            if track.name in names.barrier_tracks and len(track):
                hit = np.flatnonzero(order_statistics.isin(track.name_id, names.barrier_ids))
                if len(hit):
                    collectives.append((track, hit))
    return collectives, rest


def dcn_events(ctx: Context) -> list[tuple[Track, np.ndarray]]:
    """DCN transfer events (XPlane: `MegaScale:`) on the host threads: `Trace.events_of_class`, read
    from the context's host-name index (each distinct name's class tested once, not each event's)."""
    return ctx.host_names.matching_class(EventClass.DCN_TRANSFER)


def union_of(events: list[tuple[Track, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted intervals covered by the events."""
    if not events:
        empty = np.empty(0, np.int64)
        return empty, empty
    if len(events) == 1:  # one track's events: in order when their indices are (no sort needed)
        track, idx = events[0]
        starts = track.start_ps[idx]
        return canonical(starts, starts + track.duration_ps[idx])
    starts = np.concatenate([t.start_ps[i] for t, i in events])
    ends = np.concatenate([t.start_ps[i] + t.duration_ps[i] for t, i in events])
    return merge_intervals(starts, ends)
