"""Which events are collectives: the time a device (or host) spends synchronizing with the others.

Collectives are found by name and by HLO category, never by a format's structure:
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

from tpuscope.analysis.device_ops import Device, merge_intervals
from tpuscope.model.strings import StringTable
from tpuscope.model.trace import Plane, Track

# HLO collective opcodes (openxla/xla, xla/hlo/ir/hlo_opcode.h), matched on op names with an optional
# leading `%`, `.N` suffix, `-start`/`-done` half or ` fusion` kind, and on `hlo_category` values.
COLLECTIVE_OP_PATTERN = (
    r"^%?(all-reduce|all-gather|reduce-scatter|all-to-all|ragged-all-to-all|collective-permute"
    r"|collective-broadcast|all-reduce-scatter|barrier-cores)\b"
    r"|^%?(send|recv)(-done)?(\.\d+)?$"
    r"|^(nccl|rccl)[A-Za-z]"
)
# Lines that hold TPU barriers beside the op lines (openxla/xprof barrier_cores_rule.h).
BARRIER_LINES = ("XLA TraceMe",)
BARRIER_NAME = "barrier-cores"
# Multi-slice DCN transfers on the host (openxla/xprof, xprof/convert/dcn_utils.cc: prefix "MegaScale:").
DCN_EVENT_PREFIX = "MegaScale:"
CATEGORY_STAT = "hlo_category"


class CollectiveNames:
    """The string ids of collective names and categories of one trace, found once."""

    def __init__(self, strings: StringTable):
        self.op_ids = strings.ids_matching(COLLECTIVE_OP_PATTERN, regex=True, ignore_case=False)
        self.dcn_ids = strings.ids_matching("^" + DCN_EVENT_PREFIX, regex=True, ignore_case=False)
        barrier = strings.id_of(BARRIER_NAME)
        self.barrier_ids = np.array([] if barrier is None else [barrier], np.int32)

    def is_collective(self, track: Track, idx: np.ndarray) -> np.ndarray:
        """Mask over `idx`: the op is a collective by its name or its `hlo_category`."""
        mask = np.isin(track.name_id[idx], self.op_ids)
        category = track.stat_values(CATEGORY_STAT, fill=0)
        if category is not None and category.dtype.kind in "iu":
            mask |= np.isin(category[idx], self.op_ids)
        return mask


def device_collective_events(device: Device, names: CollectiveNames) -> list[tuple[Track, np.ndarray]]:
    """The device's collective ops, plus barrier events on the plane's barrier lines."""
    found = []
    for track, idx in device.events:
        hit = idx[names.is_collective(track, idx)]
        if len(hit):
            found.append((track, hit))
    if device.kind != "CPU" and len(names.barrier_ids):
        for track in device.plane.tracks:
            if track.name in BARRIER_LINES and len(track):
                hit = np.flatnonzero(np.isin(track.name_id, names.barrier_ids))
                if len(hit):
                    found.append((track, hit))
    return found


def dcn_events(planes: list[Plane], names: CollectiveNames) -> list[tuple[Track, np.ndarray]]:
    """`MegaScale:` DCN transfer events on the host planes."""
    found: list[tuple[Track, np.ndarray]] = []
    if len(names.dcn_ids) == 0:
        return found
    for plane in planes:
        for track in plane.tracks:
            if len(track):
                hit = np.flatnonzero(np.isin(track.name_id, names.dcn_ids))
                if len(hit):
                    found.append((track, hit))
    return found


def union_of(events: list[tuple[Track, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted intervals covered by the events."""
    if not events:
        empty = np.empty(0, np.int64)
        return empty, empty
    starts = np.concatenate([t.start_ps[i] for t, i in events])
    ends = np.concatenate([t.end_ps[i] for t, i in events])
    return merge_intervals(starts, ends)
