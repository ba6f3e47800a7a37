"""Which host event launched each device op of a PyTorch profiler trace.

A trace ties each kernel, copy and memset to the runtime call that launched it (`cudaLaunchKernel`,
`cuLaunchKernel`, `cudaMemcpyAsync`...) two ways (pytorch/kineto libkineto/src/output_json.cpp): a
launch flow from the call to the device op, and the CUPTI `correlation` id both carry. A device op's
launch is its first bound flow from a host thread, else the host event of its host with its
correlation id (TraceLens links by correlation too: AMD-AGI/TraceLens Trace2Tree/trace_to_tree.py).
The CPU op behind the launch (tpuscope.readers.trace_event.framework_ops) and the Python frames
around it (python_stacks) are both read from this one link.
"""

from __future__ import annotations

import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.flows import Flows
from tpuscope.model.records import record
from tpuscope.model.trace import Trace, Track
from tpuscope.model.vocabulary import Stat, TrackKind

# Bits of a (track, event) key and of a (host, correlation id) key packed into one int64.
_EVENT_BITS = 40
_CORRELATION_BITS = 48


@record(frozen=True)
class Launches:
    """Per device op with a known launch: the launching host event and the device op (track numbers
    of `Trace.track_list()`, event rows there)."""

    source_track: np.ndarray
    source_event: np.ndarray
    target_track: np.ndarray
    target_event: np.ndarray

    def __len__(self) -> int:
        return len(self.target_event)


def find_launches(trace: Trace, tracks: list[Track] | None = None) -> Launches:
    """Each device op's launch (module docstring)."""
    tracks = trace.track_list() if tracks is None else tracks
    is_device = np.array([t.kind == TrackKind.DEVICE_OPS for t in tracks] + [False])
    is_host = np.array([t.kind == TrackKind.HOST_THREAD for t in tracks] + [False])
    flows = trace.flows if trace.flows is not None else Flows.empty()
    launch = np.flatnonzero(is_host[flows.source_track] & is_device[flows.target_track])
    target_key = flows.target_track[launch].astype(np.int64) << _EVENT_BITS | flows.target_event[launch]
    _, first = np.unique(target_key, return_index=True)  # one launch per device op: its first flow
    launch = launch[first]
    by_flow = (
        flows.source_track[launch].astype(np.int64),
        flows.source_event[launch].astype(np.int64),
        flows.target_track[launch].astype(np.int64),
        flows.target_event[launch].astype(np.int64),
    )
    by_correlation = _by_correlation(trace, tracks, is_device, is_host, target_key[first])
    joined = [np.concatenate([a, b]) for a, b in zip(by_flow, by_correlation, strict=True)]
    return Launches(*joined)


def _by_correlation(
    trace: Trace, tracks: list[Track], is_device: np.ndarray, is_host: np.ndarray, bound_keys: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Launches of the device ops no flow reached, matched by (host, correlation id)."""
    empty = np.empty(0, np.int64)
    host_keys, host_places, device_keys, device_places = [], [], [], []
    hosts = {host: k for k, host in enumerate(dict.fromkeys(p.host for p in trace.planes))}
    for number, track in enumerate(tracks):
        if not (is_device[number] or is_host[number]) or not len(track):
            continue
        column = track.stats.column(Stat.CORRELATION_ID)
        if column is None or column.kind not in ("int", "uint"):
            continue
        rows = np.flatnonzero(column.present(len(track))).astype(np.int64)
        values = column.dense(len(track), 0)[rows].astype(np.int64)
        key = np.int64(hosts[track.plane.host]) << _CORRELATION_BITS | (
            values & ((1 << _CORRELATION_BITS) - 1)
        )
        place = np.stack([np.full(len(rows), number, np.int64), rows], axis=1)
        if is_device[number]:
            unbound = ~order_statistics.isin(np.int64(number) << _EVENT_BITS | rows, bound_keys)
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
    source, target = h_place[at[hit]], d_place[hit]
    return source[:, 0], source[:, 1], target[:, 0], target[:, 1]
