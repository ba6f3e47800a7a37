"""Memory in use over time, per allocator, from the allocator's own events (what the runtime saw).

Each allocator event carries the allocator's state right after the call: bytes reserved (XProf's
"stack": memory set aside for programs), bytes allocated (heap in use), bytes available (free),
fragmentation and the allocator's peak in use over its lifetime. In use = reserved + allocated;
capacity = in use + free. The figures follow XProf's Memory Profile (xprof/convert/
xplane_to_memory_profile.cc), with one difference on purpose:

- `peak_bytes_in_use` is the largest lifetime peak any event reports. XProf reports the value of
  the last event it happens to visit (line by line), which is the same number whenever the events
  of one allocator sit on one thread, but an older, smaller one when they are spread over several
  threads (the TF Keras CPU sample: XProf 38,273,024, the allocator's own peak 41,943,040).

The peak inside the profile is the event with the most in use (ties: the last one in file order,
as XProf); the allocations live at that moment are those allocated before it and not freed by
then (matched by address), largest first; what the profile cannot attribute (allocated before it
started) is reported as one unattributed amount.

Vectorized over events: one sort per allocator, no per-event Python loop.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from tpuscope.model.memory import AllocationEvents
from tpuscope.model.records import record

# At most this many live allocations are listed at a peak (largest first).
MAX_LIVE_LISTED = 50


@record(frozen=True)
class LiveAllocation:
    """One allocation alive at an allocator's peak."""

    bytes: int
    requested_bytes: int
    op: str
    shape: str
    address: int
    allocated_at_ps: int
    track: int  # index into AllocatorMemory.tracks
    event_index: int

    def to_json(self) -> dict:
        return {
            "bytes": self.bytes,
            "requested_bytes": self.requested_bytes,
            "op": self.op,
            "shape": self.shape,
            "address": self.address,
            "allocated_at_ps": self.allocated_at_ps,
        }


@record
class AllocatorMemory:
    """One allocator's memory over the profile (arrays in time order, one point per event)."""

    id: str
    host: str
    time_ps: np.ndarray
    in_use: np.ndarray
    reserved: np.ndarray
    allocated: np.ndarray
    free: np.ndarray
    fragmentation: np.ndarray
    peak_bytes_in_use: int  # the allocator's lifetime peak, as it reports it
    peak_in_profile_bytes: int
    peak_time_ps: int
    peak_point: int  # index into the arrays
    capacity_bytes: int
    fragmentation_at_peak: float
    live_at_peak: list[LiveAllocation]
    live_at_peak_bytes: int
    unattributed_at_peak_bytes: int
    tracks: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    peak_step: int | None = None

    @property
    def samples(self) -> int:
        return int(len(self.time_ps))

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "host": self.host,
            "peak_bytes_in_use": self.peak_bytes_in_use,
            "peak_time_ps": self.peak_time_ps,
            "capacity_bytes": self.capacity_bytes,
            "samples": self.samples,
            "peak_in_profile_bytes": self.peak_in_profile_bytes,
            "peak_step": self.peak_step,
            "fragmentation_at_peak": _finite(self.fragmentation_at_peak),
            "live_at_peak_bytes": self.live_at_peak_bytes,
            "unattributed_at_peak_bytes": self.unattributed_at_peak_bytes,
            "live_at_peak": [a.to_json() for a in self.live_at_peak],
            "notes": list(self.notes),
        }


def allocators_memory(events: AllocationEvents, strings) -> list[AllocatorMemory]:
    """Memory over time of every allocator in one host's events, sorted by memory id."""
    found = []
    for number, memory_id in enumerate(events.memory_ids):
        rows = np.flatnonzero(events.memory == number)
        if len(rows):
            found.append(_allocator(events, rows, memory_id, strings))
    return found


def _allocator(events: AllocationEvents, rows: np.ndarray, memory_id: str, strings) -> AllocatorMemory:
    notes = list(events.notes)
    order = rows[np.argsort(events.time_ps[rows], kind="stable")]  # time order, file order within a tie
    reserved = np.maximum(events.reserved[order], 0)
    allocated = np.maximum(events.allocated[order], 0)
    available = np.maximum(events.available[order], 0)
    if _some_lack(events.allocated[order]) or _some_lack(events.reserved[order]):
        notes.append("some allocator events lack bytes_allocated / bytes_reserved (counted as 0)")
    in_use = reserved + allocated

    # The peak: the most in use; ties go to the last event in file order (rows are in file order).
    file_in_use = np.maximum(events.reserved[rows], 0) + np.maximum(events.allocated[rows], 0)
    best = float(file_in_use.max())
    peak_row = int(rows[np.flatnonzero(file_in_use == best)[-1]])
    peak_point = int(np.flatnonzero(order == peak_row)[0])

    lifetime = events.peak_in_use[rows]
    if (lifetime >= 0).any():
        lifetime_peak = int(lifetime.max())
    else:
        lifetime_peak = int(best)
        notes.append("the allocator events carry no peak_bytes_in_use; the peak inside the profile is used")

    live, live_bytes = _live_at(events, order, peak_point, strings)
    unattributed = max(int(allocated[peak_point]) - live_bytes, 0)
    return AllocatorMemory(
        id=memory_id,
        host=events.host,
        time_ps=events.time_ps[order],
        in_use=in_use,
        reserved=reserved,
        allocated=allocated,
        free=available,
        fragmentation=events.fragmentation[order],
        peak_bytes_in_use=lifetime_peak,
        peak_in_profile_bytes=int(in_use[peak_point]),
        peak_time_ps=int(events.time_ps[peak_row]),
        peak_point=peak_point,
        capacity_bytes=int(in_use[peak_point] + available[peak_point]),
        fragmentation_at_peak=float(events.fragmentation[peak_row]),
        live_at_peak=live,
        live_at_peak_bytes=live_bytes,
        unattributed_at_peak_bytes=unattributed,
        tracks=list(events.tracks),
        notes=notes,
    )


def _live_at(
    events: AllocationEvents, order: np.ndarray, point: int, strings
) -> tuple[list[LiveAllocation], int]:
    """Allocations made at or before `point` (in time order) and not freed by then, largest first."""
    n = len(order)
    rank = np.arange(n)
    address = events.address[order]
    is_allocation = events.is_allocation[order]
    by_address = np.lexsort((rank, address))
    same_next = np.zeros(n, dtype=bool)
    same_next[:-1] = address[by_address[1:]] == address[by_address[:-1]]
    next_is_free = np.zeros(n, dtype=bool)
    next_is_free[:-1] = ~is_allocation[by_address[1:]]
    freed_at = np.full(n, n, np.int64)  # the rank of the free that ends each allocation (n: never)
    ends = same_next & next_is_free
    freed_at[by_address[ends]] = by_address[np.flatnonzero(ends) + 1]
    live = is_allocation & (rank <= point) & (freed_at > point) & (address >= 0)
    picked = order[live]
    sizes = events.allocation_bytes[picked]
    sizes = np.where(sizes >= 0, sizes, np.maximum(events.requested[picked], 0))
    total = int(sizes.sum())
    top = np.argsort(-sizes, kind="stable")[:MAX_LIVE_LISTED]
    listed = [
        LiveAllocation(
            bytes=int(sizes[k]),
            requested_bytes=int(events.requested[picked[k]]),
            op=_text(strings, int(events.op[picked[k]])),
            shape=_text(strings, int(events.shape[picked[k]])),
            address=int(events.address[picked[k]]),
            allocated_at_ps=int(events.time_ps[picked[k]]),
            track=int(events.track[picked[k]]),
            event_index=int(events.event_index[picked[k]]),
        )
        for k in top.tolist()
    ]
    return listed, total


def _some_lack(figure: np.ndarray) -> bool:
    """Some events lack a figure others carry (-1). A figure no event carries is one the allocator
    does not keep (PyTorch's caching allocator has no memory reserved for programs): 0, no note."""
    missing = figure < 0
    return bool(missing.any() and not missing.all())


def _text(strings, string_id: int) -> str:
    return strings[string_id] if string_id >= 0 else ""


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
