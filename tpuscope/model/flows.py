"""Flows: arrows from one event to another (a host launch to the kernel it launched).

Kept as parallel numpy columns on the Trace: source (track number, event index), target (track
number, event index) and a category (string id: Kineto's `ac2g`, `fwdbwd`; XPlane's correlation
ids). Track numbers are positions in `Trace.track_list()`. Readers bind their flow records to
events with `bind_flows` (Chrome's trace-event rules) or pair events by an id directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.records import record
from tpuscope.model.vocabulary import Stat, TrackKind

if TYPE_CHECKING:
    from tpuscope.model.trace import Trace, Track


@record
class Flows:
    source_track: np.ndarray  # int32 track numbers
    source_event: np.ndarray  # int64 event indices
    target_track: np.ndarray
    target_event: np.ndarray
    category: np.ndarray  # int32 string ids

    def __len__(self) -> int:
        return len(self.source_event)

    @staticmethod
    def empty() -> Flows:
        i32, i64 = np.empty(0, np.int32), np.empty(0, np.int64)
        return Flows(i32, i64, i32.copy(), i64.copy(), i32.copy())

    @staticmethod
    def concatenate(first: Flows | None, second: Flows) -> Flows:
        if first is None or len(first) == 0:
            return second
        return Flows(
            *(
                np.concatenate([getattr(first, name), getattr(second, name)])
                for name in ("source_track", "source_event", "target_track", "target_event", "category")
            )
        )

    def touching(self, track_number: int, events: np.ndarray) -> np.ndarray:
        """Rows of the flows that start or end at any of `events` (indices) of that track."""
        if len(self) == 0 or len(events) == 0:
            return np.empty(0, np.int64)
        at_source = (self.source_track == track_number) & order_statistics.isin(self.source_event, events)
        at_target = (self.target_track == track_number) & order_statistics.isin(self.target_event, events)
        return np.flatnonzero(at_source | at_target)

    def ends(self, row: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """((source track number, event), (target track number, event)) of one flow."""
        return (
            (int(self.source_track[row]), int(self.source_event[row])),
            (int(self.target_track[row]), int(self.target_event[row])),
        )

    def nbytes(self) -> int:
        return sum(getattr(self, n).nbytes for n in ("source_track", "source_event", "target_track",
                                                      "target_event", "category"))  # fmt: skip


def pair_by_id(
    trace: Trace,
    sources: list[tuple[Track, np.ndarray, np.ndarray]],
    targets: list[tuple[Track, np.ndarray, np.ndarray]],
    category: str,
) -> Flows:
    """Flows from each source event to the target event carrying the same id.

    `sources`/`targets`: (track, event indices, their ids). An id seen more than once on one
    side pairs its first occurrence (in the order given).
    """
    if not sources or not targets:
        return Flows.empty()

    def flat(side):
        numbers = np.concatenate([np.full(len(i), trace.track_number(t), np.int32) for t, i, _ in side])
        events = np.concatenate([np.asarray(i, np.int64) for _, i, _ in side])
        ids = np.concatenate([np.asarray(k, np.int64) for _, _, k in side])
        return numbers, events, ids

    s_track, s_event, s_id = flat(sources)
    t_track, t_event, t_id = flat(targets)
    _, s_first = np.unique(s_id, return_index=True)
    _, t_first = np.unique(t_id, return_index=True)
    _, in_s, in_t = np.intersect1d(s_id[s_first], t_id[t_first], assume_unique=True, return_indices=True)
    s_rows, t_rows = s_first[in_s], t_first[in_t]
    category_id = trace.strings.intern(category)
    return Flows(
        s_track[s_rows], s_event[s_rows], t_track[t_rows], t_event[t_rows],
        np.full(len(s_rows), category_id, np.int32),
    )  # fmt: skip


def bind_flows(
    trace: Trace,
    flow_key: np.ndarray,
    is_end: np.ndarray,
    ts_ps: np.ndarray,
    candidate_tracks: list[list[Track]],
    thread: np.ndarray,
    category: np.ndarray,
    next_slice: np.ndarray,
) -> Flows:
    """Flows from flow records: each start record (`s`) to the end record (`f`) of the same key.

    A record binds to the event on its thread's tracks (first candidate track that has one) that
    encloses its time, or, for `next_slice` records, to the first event starting at or after it.
    Records that bind to no event are dropped.
    """
    n = len(ts_ps)
    bound_track = np.full(n, -1, np.int32)
    bound_event = np.full(n, -1, np.int64)
    order = np.argsort(thread, kind="stable")
    threads, starts = np.unique(thread[order], return_index=True)
    bounds = np.append(starts, len(order))
    for j, t in enumerate(threads.tolist()):
        rows = order[bounds[j] : bounds[j + 1]]
        for track in candidate_tracks[t] if t < len(candidate_tracks) else []:
            open_rows = rows[bound_event[rows] < 0]
            if len(open_rows) == 0 or len(track) == 0:
                break
            ts = ts_ps[open_rows]
            after = np.searchsorted(track.start_ps, ts, side="left")
            before = np.searchsorted(track.start_ps, ts, side="right") - 1
            safe = np.maximum(before, 0)
            encloses = (before >= 0) & (track.end_ps[safe] >= ts)
            use_next = next_slice[open_rows]
            index = np.where(use_next, after, before)
            ok = np.where(use_next, after < len(track), encloses)
            bound_track[open_rows[ok]] = trace.track_number(track)
            bound_event[open_rows[ok]] = index[ok]
    bound = bound_event >= 0
    start_rows = np.flatnonzero(bound & ~is_end)
    end_rows = np.flatnonzero(bound & is_end)
    _, s_first = np.unique(flow_key[start_rows], return_index=True)
    _, e_first = np.unique(flow_key[end_rows], return_index=True)
    s_rows, e_rows = start_rows[s_first], end_rows[e_first]
    _, in_s, in_e = np.intersect1d(
        flow_key[s_rows], flow_key[e_rows], assume_unique=True, return_indices=True
    )
    s_rows, e_rows = s_rows[in_s], e_rows[in_e]
    return Flows(
        bound_track[s_rows], bound_event[s_rows], bound_track[e_rows], bound_event[e_rows],
        category[s_rows].astype(np.int32),
    )  # fmt: skip


def flows_near(trace: Trace, track: Track, index: int) -> np.ndarray:
    """Rows of the flows that start or end at the event or at an event nested inside it (its
    neighbours: selecting `aten::linear` shows the launch under it and the kernel it launched)."""
    flows = trace.flows
    if len(flows) == 0:
        return np.empty(0, np.int64)
    start, end = int(track.start_ps[index]), int(track.start_ps[index] + track.duration_ps[index])
    lo = int(np.searchsorted(track.start_ps, start, side="left"))
    hi = int(np.searchsorted(track.start_ps, end, side="left" if end > start else "right"))
    inside = np.arange(lo, hi)
    inside = inside[(track.depth[inside] >= track.depth[index]) | (inside == index)]
    return flows.touching(trace.track_number(track), order_statistics.union(inside, [index]))


def correlation_flows(trace: Trace) -> Flows:
    """Launch -> device op flows from the correlation ids the GPU profiler writes on both (per host)."""
    flows = Flows.empty()
    for host in trace.hosts:
        sides: dict[bool, list] = {True: [], False: []}
        for plane in trace.planes:
            if plane.host != host:
                continue
            for track in plane.tracks:
                is_op = track.kind == TrackKind.DEVICE_OPS
                if not (is_op or track.kind == TrackKind.HOST_THREAD) or len(track) == 0:
                    continue
                column = track.stats.column(Stat.CORRELATION_ID)
                if column is None or column.kind not in ("int", "uint"):
                    continue
                rows = np.flatnonzero(column.present(len(track)))
                sides[is_op].append((track, rows, column.dense(len(track), 0)[rows]))
        flows = Flows.concatenate(flows, pair_by_id(trace, sides[False], sides[True], Stat.CORRELATION_ID))
    return flows
