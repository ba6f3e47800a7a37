"""Building a Trace from plain columns, for readers that have no intermediate format of their own.

A reader hands over, per track, trace-relative start and duration columns (ps), each event's
row in its plane's name table, and typed stat columns; this module sorts the events into the
model's order (start ascending, longer first on ties), computes nesting depths in one C pass,
and keeps every column numpy. Nothing here knows a file format.
"""

from __future__ import annotations

import numpy as np

from tpuscope.model import _kernels
from tpuscope.model.stats import StatColumn, StatKind, StatTable
from tpuscope.model.trace import EventMetadataTable, Plane, Trace, Track
from tpuscope.model.vocabulary import PlaneIdentity, TrackKind


def add_plane(
    trace: Trace,
    plane_id: int,
    name: str,
    host: str,
    identity: PlaneIdentity,
    names: list[str],
    stats: dict[str, object] | None = None,
    name_stats: dict[str, StatColumn] | None = None,
) -> Plane:
    """A plane whose events are named by `names` (one metadata row each; events refer to rows)."""
    plane = Plane(trace, plane_id, name, host, dict(stats or {}), identity)
    name_ids = trace.strings.intern_many(names) if names else np.empty(0, np.int32)
    plane.metadata = EventMetadataTable(
        np.arange(len(names), dtype=np.int64),
        name_ids,
        [b""] * len(names),
        StatTable(len(names), dict(name_stats or {})),
    )
    trace.planes.append(plane)
    return plane


def add_track(
    plane: Plane,
    line_id: int,
    name: str,
    kind: TrackKind,
    start_ps: np.ndarray,
    duration_ps: np.ndarray,
    meta_index: np.ndarray,
    stats: dict[str, StatColumn] | None = None,
    display_name: str = "",
) -> Track:
    """A track of `plane` from unsorted columns; dense stat columns are permuted along.

    Stat columns here must be dense (`rows` None) or have `rows` indexing the given order.
    """
    start = np.ascontiguousarray(start_ps, dtype=np.int64)
    duration = np.maximum(np.ascontiguousarray(duration_ps, dtype=np.int64), 0)
    meta = np.ascontiguousarray(meta_index, dtype=np.int32)
    depth = np.empty(len(start), np.int16)
    columns = dict(stats or {})
    start, duration, order = order_and_nest(start, duration, depth)
    if order is not None:
        meta = meta[order]
        columns = {k: _permuted(c, order) for k, c in columns.items()}
    name_id = plane.metadata.name_ids[meta] if len(meta) else np.empty(0, np.int32)
    track = Track(
        plane=plane,
        line_id=line_id,
        display_id=line_id,
        name=name,
        display_name=display_name,
        start_ps=start,
        duration_ps=duration,
        meta_index=meta,
        name_id=name_id.astype(np.int32, copy=False),
        depth=depth,
        stats=StatTable(len(start), columns),
        kind=kind,
    )
    plane.tracks.append(track)
    return track


def order_and_nest(
    start: np.ndarray, duration: np.ndarray, depth: np.ndarray, *, in_place: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The events in the model's order (start ascending, longer first on ties) and their nesting
    depths written into `depth`: (start, duration, the permutation applied or None when they were in
    order already), for the caller to apply to its other columns. One C pass checks the order and
    computes the depths; only an out-of-order track is sorted. `in_place` sorts the given arrays
    themselves (a reader's fresh decoded columns: no copy of the biggest arrays); else new ones."""
    if not len(start) or _kernels.sorted_depth(start, duration, depth):
        return start, duration, None
    permutation = np.lexsort((-duration, start))
    if in_place:
        start[:] = start[permutation]
        duration[:] = duration[permutation]
    else:
        start, duration = start[permutation], duration[permutation]
    _kernels.sorted_depth(start, duration, depth)
    return start, duration, permutation


def _permuted(column: StatColumn, order: np.ndarray) -> StatColumn:
    if column.rows is None:
        return StatColumn(column.name, column.kind, None, column.values[order])
    inverse = np.empty(len(order), np.int32)
    inverse[order] = np.arange(len(order), dtype=np.int32)
    rows = inverse[column.rows]
    by_row = np.argsort(rows, kind="stable")
    return StatColumn(column.name, column.kind, rows[by_row].astype(np.int32), column.values[by_row])


def sparse_column(name: str, kind: StatKind, present: np.ndarray, values: np.ndarray) -> StatColumn | None:
    """A stat column over the rows where `present` is True (dense when every row has it; None if none)."""
    if not present.any():
        return None
    if present.all():
        return StatColumn(name, kind, None, values)
    rows = np.flatnonzero(present).astype(np.int32)
    return StatColumn(name, kind, rows, values[rows])


def finish(trace: Trace) -> Trace:
    """Sets the trace's span and host list once all planes are in."""
    ends = [int(t.start_ps[-1] + t.duration_ps.max()) for t in trace.tracks() if len(t)]
    trace.duration_ps = max(ends) if ends else 0
    trace.hosts = list(dict.fromkeys(p.host for p in trace.planes))
    return trace
