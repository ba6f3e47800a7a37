"""The XPlane reader's load: decode each file, then assemble the decoded columns into one Trace.

The decoder (tpuscope.readers.xplane.decode) hands over plain numpy columns; this module turns
them into tracks with trace-relative times, interned names, nesting depths and typed stat
columns. Opening a path (finding the files, the cache, remote runs) is tpuscope.app.opener's.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from tpuscope.errors import ProfileError
from tpuscope.model import _kernels, order_statistics
from tpuscope.model.build import order_and_nest
from tpuscope.model.completeness import CUT, DROPPED, LEFT_OUT, Loss
from tpuscope.model.flows import correlation_flows
from tpuscope.model.hosts import host_labels
from tpuscope.model.narrowing import narrow_integers
from tpuscope.model.records import record
from tpuscope.model.stats import StatColumn, StatTable
from tpuscope.model.trace import EventMetadataTable, Plane, Trace, Track
from tpuscope.readers import host_from_filename
from tpuscope.readers.files import GZIP_MAGIC, map_file, profile_size, read_profile_bytes, release_mapped
from tpuscope.readers.registry import ProfileFile, ProgressCallback, report_progress, source_of
from tpuscope.readers.xla_dialect import XPLANE_DIALECT, plane_identity, track_kind
from tpuscope.readers.xplane.decode import (
    DecodedLine,
    DecodedPlane,
    DecodedSpace,
    MalformedXSpace,
    RawStatColumn,
    decode_xspace,  # fmt: skip
)
from tpuscope.readers.xplane.foreign import describe_foreign_format


def load_xplane_files(
    files: Sequence[ProfileFile], progress: ProgressCallback | None = None, strict: bool = False
) -> Trace:
    """One Trace from a run's XPlane files (one per host). A file cut short loads what precedes the
    cut and `Trace.load_warnings` says what is missing; with `strict` it is a ProfileError instead,
    as is a cut file with no event."""
    spaces: list[tuple[ProfileFile, DecodedSpace]] = []
    preparer = _LinePreparer()
    load_warnings: list[str] = []
    losses: list[Loss] = []  # each cut or left-out file, measured in (uncompressed) bytes
    whole_bytes = 0  # of the files read whole
    total_bytes = sum(profile_size(f) for f in files) or 1
    read_so_far = 0
    for file in files:
        file_share = profile_size(file) / total_bytes

        def on_line(done: int, total: int, base=read_so_far / total_bytes, share=file_share, name=file.name):
            report_progress(progress, 0.9 * (base + share * done / total), f"decoding {name}")

        # The file's bytes live only inside _decode: freed before the next file and the assembly.
        space = _decode_file(file, on_line, preparer)
        read_so_far += profile_size(file)
        truncation = space.truncation
        if truncation is None:
            spaces.append((file, space))
            whole_bytes += profile_size(file)
            continue
        cut = truncation.sentence()
        if strict:
            raise ProfileError(file, f"the file is cut short: {cut}")
        if truncation.section == "trailer":  # every plane loaded: only host names or notes are missing
            spaces.append((file, space))
            load_warnings.append(f"{file} is cut short: {cut}.")
            continue
        if space.event_count == 0:
            if len(files) == 1:
                raise ProfileError(file, f"the file is cut short before its first complete event ({cut})")
            load_warnings.append(
                f"{file} is cut short before its first complete event and is left out ({cut})."
            )
            losses.append(Loss(LEFT_OUT, str(file), load_warnings[-1], 0, truncation.bytes_known))
            continue
        spaces.append((file, space))
        load_warnings.append(f"{file} is cut short: {cut}.")
        losses.append(Loss(CUT, str(file), load_warnings[-1], truncation.bytes_read, truncation.bytes_known))
    if not spaces:
        raise ProfileError(
            files[0].parent, "every file of the run is cut short before its first complete event"
        )
    report_progress(progress, 0.9, "building the timeline")
    trace = assemble(
        spaces,
        lambda done, total: report_progress(progress, 0.9 + 0.09 * done / total, "building the timeline"),
        preparer.prepared,
    )
    trace.load_warnings = load_warnings + trace.load_warnings
    losses = [replace(loss, others_whole=whole_bytes) for loss in losses]
    trace.load_losses = losses + trace.load_losses
    _kernels.return_freed_memory_to_os()  # the load's freed temporaries: keeps RSS near the model
    report_progress(progress, 1.0, "done")
    return trace


# Below this size a plain read costs about what mapping does; above it the file is mapped.
_MAP_MIN_BYTES = 4 << 20
# describe_foreign_format and looks_utf8_reencoded look at most at the first 1 MiB.
_SNIFF_BYTES = 1 << 20


def _decode_file(file: ProfileFile, on_line, preparer: _LinePreparer | None = None) -> DecodedSpace:
    """Decodes one file: big uncompressed files from a read-only map of it, others from their bytes;
    a profile held in memory from its own bytes (no copy, no file). One decoder for all three.

    Why map: see tpuscope.readers.files.map_file. Each decoded plane's pages
    are dropped from the map as the decode moves on, so the file's share of
    the peak is about one plane, not the whole file. Any failure to map, and
    every gzip file, goes through read_profile_bytes, which owns the errors.
    """
    mapped = map_file(file) if isinstance(file, Path) and profile_size(file) >= _MAP_MIN_BYTES else None
    if mapped is None or mapped[:2] == GZIP_MAGIC:
        if mapped is not None:
            mapped.close()
        data, ends_early = read_profile_bytes(file)
        return _decode(file, data, ends_early, on_line, preparer=preparer)
    try:
        return _decode(file, mapped, False, on_line, functools.partial(release_mapped, mapped), preparer)
    finally:
        try:
            mapped.close()
        except BufferError:  # a view is still alive (an exception's frames): the collector closes it
            pass


def _decode(
    file: ProfileFile, data, ends_early: bool, on_line, release=None, preparer: _LinePreparer | None = None
) -> DecodedSpace:
    foreign = describe_foreign_format(bytes(data[:_SNIFF_BYTES]))
    if foreign is not None:
        raise ProfileError(file, foreign)
    try:
        space = decode_xspace(data, on_line, ends_early=ends_early, release=release, on_line=preparer)
    except MalformedXSpace:
        raise ProfileError(file, "the file is corrupted (it does not decode as an XSpace protobuf)") from None
    except RecursionError:
        raise ProfileError(file, "the file is corrupted (its protobuf nesting is too deep)") from None
    if not space.planes and space.truncation is None:
        raise ProfileError(file, "it holds no profile planes, so it is not an XPlane profile")
    return space


# Lines of at least this many events get their per-event model columns in the decoder threads (see
# _LinePreparer); smaller ones in the shared block below, whose point is to avoid many small arrays.
# From 1 << 20 down to 1 << 17: the 1M-event TPU-shaped file's four 224k-event op lines then get theirs
# beside the decoding too (assembly 41 -> 22 ms, decode about the same; benchmarks/bench_start.py).
_PREPARE_IN_DECODER_MIN_EVENTS = 1 << 17


@record
class _PreparedLine:
    """A line's model columns in the model's order (its offsets and durations sorted the same way)."""

    meta_index: np.ndarray  # int32 rows of the plane's event metadata
    depth: np.ndarray  # int16
    permutation: np.ndarray | None  # the sort applied, when the line was out of order


class _LinePreparer:
    """The decoder hook of one load (decode_xspace's on_line): for each big line whose every metadata id
    is defined, in the decoder thread that decoded it, the durations clamped, the events in the model's
    order, their nesting depths and metadata rows. Why: these fresh columns and passes (60M events:
    ~1.5 s of one core, most of it faulting in fresh pages) otherwise run after the whole decode, on
    one core while the other idles. Other lines are left to assemble(), which does the same for them.
    Sorting by offset orders like sorting by trace time: a line has one timestamp."""

    def __init__(self) -> None:
        self.prepared: dict[int, _PreparedLine] = {}  # id(DecodedLine) -> its columns (lines outlive loads)
        # id(metadata ids) -> (the ids, kept so that their id is not reused; their row table)
        self._tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._lock = threading.Lock()

    def __call__(self, line: DecodedLine, metadata_ids: np.ndarray) -> None:
        n = len(line)
        if n < _PREPARE_IN_DECODER_MIN_EVENTS or _out_of_range(line).any():  # assemble() drops them
            return
        bound = _lookup_bound(metadata_ids)
        if bound is None:
            return
        with self._lock:
            known = self._tables.get(id(metadata_ids))
            if known is None:
                known = self._tables[id(metadata_ids)] = (metadata_ids, _row_table(metadata_ids, bound))
        meta_index = np.empty(n, np.int32)
        # An id outside the table, or in it but undefined (-1): the assembly gives it a row.
        if _gather_rows(known[1], line.metadata_id, meta_index) or int(meta_index.min()) < 0:
            return
        self.prepared[id(line)] = _order_and_nest(line, meta_index, np.empty(n, np.int16))


def assemble(
    spaces: list[tuple[ProfileFile, DecodedSpace]],
    on_plane=None,
    prepared: dict[int, _PreparedLine] | None = None,
) -> Trace:
    """Builds one Trace from decoded files (one per host); `on_plane(done, total)` after each plane.
    `prepared`: the lines the decoder hook of their load already put in order (_LinePreparer)."""
    trace = Trace(sources=[source_of(f) for f, _ in spaces], dialect=XPLANE_DIALECT)
    prepared = prepared or {}
    dropped = sum(
        _drop_out_of_range(line) for _, space in spaces for p in space.planes for line in p.lines
        if id(line) not in prepared  # a prepared line was checked in the decoder thread
    )  # fmt: skip
    if dropped:
        trace.load_warnings.append(
            f"{dropped:,} event{'s' if dropped != 1 else ''} with a start or duration beyond "
            f"{_MAX_EVENT_PS // PS_PER_DAY:,} days (a damaged number) were dropped."
        )
        kept = sum(space.event_count for _, space in spaces)  # counted after the drop
        source = str(spaces[0][0]) if len(spaces) == 1 else "the profile"
        trace.load_losses.append(Loss(DROPPED, source, trace.load_warnings[-1], kept, kept + dropped))
    hosts = _host_names(spaces)
    trace.hosts = list(dict.fromkeys(hosts))
    trace.origin_ns = _origin_ns(spaces)
    n_planes = sum(len(space.planes) for _, space in spaces)
    lines = [line for _, space in spaces for p in space.planes for line in p.lines]
    unprepared = sum(len(line) for line in lines if id(line) not in prepared)
    columns = _ColumnBlock(sum(len(line) for line in lines), unprepared)
    for (file, space), host in zip(spaces, hosts, strict=True):
        _check_line_times(file, space, trace.origin_ns)
        trace.errors.extend(space.errors)
        trace.warnings.extend(space.warnings)
        for decoded in space.planes:
            trace.planes.append(_build_plane(trace, decoded, host, columns, prepared))
            if on_plane is not None:
                on_plane(len(trace.planes), n_planes)
    ends = [int(t.start_ps[-1] + t.duration_ps.max()) for t in trace.tracks() if len(t)]
    trace.duration_ps = max(ends) if ends else 0
    trace.flows = correlation_flows(trace)
    return trace


# Trace-relative times are int64 picoseconds: a line whose start lies further than this from the trace's
# origin (about 53 days) cannot be one of this trace's lines; only a damaged timestamp gets there.
_MAX_LINE_SHIFT_PS = 1 << 62


# An event's offset from its line's start, and its duration, lie within this (about 13 days): with
# a line shift under _MAX_LINE_SHIFT_PS every start and end then fits int64 with room to spare, so no
# sum over times overflows (times near 2**63 wrapped negative). Only a damaged number gets past it.
_MAX_EVENT_PS = 1 << 60
PS_PER_DAY = 86_400 * 10**12


def _out_of_range(line: DecodedLine) -> np.ndarray:
    """Which of the line's events start or last beyond _MAX_EVENT_PS (a negative duration is
    clamped to zero later, not dropped)."""
    offsets, durations = line.offset_ps, line.event_duration_ps
    if not len(offsets) or (
        -_MAX_EVENT_PS <= int(offsets.min()) and int(offsets.max()) <= _MAX_EVENT_PS
        and int(durations.max()) <= _MAX_EVENT_PS
    ):  # fmt: skip
        return np.zeros(0, dtype=bool)
    return (offsets < -_MAX_EVENT_PS) | (offsets > _MAX_EVENT_PS) | (durations > _MAX_EVENT_PS)


def _drop_out_of_range(line: DecodedLine) -> int:
    """Drops the line's events that _out_of_range finds, with their stats; how many it dropped."""
    out = _out_of_range(line)
    if not out.any():
        return 0
    keep = ~out
    line.metadata_id = line.metadata_id[keep]
    line.offset_ps = line.offset_ps[keep]
    line.event_duration_ps = line.event_duration_ps[keep]
    new_row = np.cumsum(keep, dtype=np.int64) - 1  # a kept row's index among the kept
    for stat in line.stats.values():
        if stat.rows is None:
            stat.values = stat.values[keep]
        else:
            kept = keep[stat.rows]
            stat.values = stat.values[kept]
            stat.rows = new_row[stat.rows[kept]].astype(stat.rows.dtype)
    return int(out.sum())


def _check_line_times(file: ProfileFile, space: DecodedSpace, origin_ns: int) -> None:
    for plane in space.planes:
        for line in plane.lines:
            if abs((line.timestamp_ns - origin_ns) * 1000) >= _MAX_LINE_SHIFT_PS:
                raise ProfileError(
                    file, f"the file is corrupted (line {line.name!r} has an impossible start time)"
                )


def _host_names(spaces: list[tuple[ProfileFile, DecodedSpace]]) -> list[str]:
    claimed = [s.hostnames[0] if len(s.hostnames) == 1 else host_from_filename(f) for f, s in spaces]
    return host_labels(claimed, [host_from_filename(f) for f, _ in spaces])


def _origin_ns(spaces: list[tuple[ProfileFile, DecodedSpace]]) -> int:
    """The absolute time, in ns as written in the files, of the earliest event."""
    starts = [
        line.timestamp_ns + int(line.offset_ps.min()) // 1000
        for _, space in spaces
        for plane in space.planes
        for line in plane.lines
        if len(line)
    ]
    return min(starts) if starts else 0


class _ColumnBlock:
    """The per-event columns the model adds (name_id for every track; meta_index and depth for those not
    prepared in the decoder threads) for all tracks at once.

    Why one block: ~10 bytes per event of fresh memory, which as per-track
    arrays costs a page fault per 4 KiB; one block of 4 MiB or more gets huge
    pages from numpy. Each track's columns are contiguous views into it.
    """

    def __init__(self, n_events: int, n_unprepared: int):
        self.name_id = np.empty(n_events, np.int32)
        self.meta_index = np.empty(n_unprepared, np.int32)
        self.depth = np.empty(n_unprepared, np.int16)
        self.named = self.used = 0

    def take_name_ids(self, n: int) -> np.ndarray:
        lo, self.named = self.named, self.named + n
        return self.name_id[lo : self.named]

    def take(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """meta_index and depth for a track not prepared in the decoder threads."""
        lo, self.used = self.used, self.used + n
        return self.meta_index[lo : self.used], self.depth[lo : self.used]


def _build_plane(
    trace: Trace, decoded: DecodedPlane, host: str, columns: _ColumnBlock, prepared: dict[int, _PreparedLine]
) -> Plane:
    plane = Plane(trace, decoded.plane_id, decoded.name, host, decoded.stats, plane_identity(decoded.name))
    meta_ids = decoded.metadata_ids
    names = list(decoded.metadata_names)
    display_names = list(decoded.metadata_display_names)
    children = list(decoded.metadata_children)
    # Events may reference metadata ids the plane does not define: give each such id a row.
    unprepared = [line.metadata_id for line in decoded.lines if len(line) and id(line) not in prepared]
    missing = _undefined_ids(meta_ids, unprepared)  # prepared lines have none
    if len(missing):
        meta_ids = np.concatenate([meta_ids, missing])
        names += [f"<unknown event {int(m)}>" for m in missing]
        display_names += [b""] * len(missing)
        children += [()] * len(missing)
    row_of = _row_lookup(meta_ids)
    name_ids = trace.strings.intern_many(names) if names else np.empty(0, np.int32)
    meta_stats = _stat_table(trace, len(meta_ids), decoded.metadata_stats, None)
    plane.metadata = EventMetadataTable(meta_ids, name_ids, display_names, meta_stats, children)
    for position, line in enumerate(decoded.lines):
        name_id = columns.take_name_ids(len(line))
        ready = prepared.get(id(line))
        if ready is None:
            meta_index, depth = columns.take(len(line))
            if len(line):
                row_of(line.metadata_id, meta_index)
            ready = _order_and_nest(line, meta_index, depth)
        plane.tracks.append(_build_track(trace, plane, line, ready, name_id, name_ids))
        decoded.lines[position] = None  # type: ignore[call-overload]  # its columns now live in the track
    return plane


# Metadata ids are small sequential integers in every profile seen (../shared/traces, the generator):
# below this bound (256 KiB of int32 table) or this many times the number of ids, a direct lookup
# table maps ids to rows in O(1) per event instead of a binary search (assembly 58 -> 10 ms for 1M).
_LOOKUP_TABLE_MIN_BOUND = 1 << 16
_LOOKUP_TABLE_SLACK = 8


def _lookup_bound(ids: np.ndarray) -> int | None:
    """The size of a lookup table indexed by `ids`, or None when the ids are too sparse or negative."""
    if len(ids) == 0:
        return 0
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= max(_LOOKUP_TABLE_MIN_BOUND, _LOOKUP_TABLE_SLACK * len(ids)):
        return None
    return high + 1


def _undefined_ids(defined: np.ndarray, referenced: list[np.ndarray]) -> np.ndarray:
    """Sorted distinct ids that events reference but the plane's metadata does not define."""
    if not referenced:
        return np.empty(0, np.int64)
    bound = _lookup_bound(defined)
    known = None
    if bound is not None:
        known = np.zeros(bound, bool)
        known[defined] = True
    missing = []
    for ids in referenced:
        if known is not None and int(ids.min()) >= 0 and int(ids.max()) < len(known):
            unknown = ids[~known[ids]]
        else:
            unknown = ids[~order_statistics.isin(ids, defined)]
        if len(unknown):
            missing.append(order_statistics.sorted_distinct(unknown))
    return order_statistics.sorted_distinct(np.concatenate(missing)) if missing else np.empty(0, np.int64)


def _row_table(meta_ids: np.ndarray, bound: int) -> np.ndarray:
    """int32 row of each id below `bound` (-1 for ids not in meta_ids)."""
    table = np.full(bound, -1, np.int32)
    table[meta_ids] = np.arange(len(meta_ids), dtype=np.int32)
    return table


def _row_lookup(meta_ids: np.ndarray):
    """A function writing the int32 row numbers of metadata ids (all in `meta_ids`) into `out`."""
    bound = _lookup_bound(meta_ids)
    if bound is not None:
        table = _row_table(meta_ids, bound)
        return lambda ids, out: _gather_rows(table, ids, out)
    order = np.argsort(meta_ids, kind="stable").astype(np.int32)
    sorted_ids = meta_ids[order]
    return lambda ids, out: np.take(order, np.searchsorted(sorted_ids, ids), out=out)


def _gather_rows(table: np.ndarray, indices: np.ndarray, out: np.ndarray) -> int:
    """out[:] = table[indices] for an int32 table and out (gather_rows in tpuscope/model/_kernels.c: no
    intp copy of the indices, which numpy's take makes); how many indices fell outside
    the table (their out is -1)."""
    contiguous = indices.flags.c_contiguous and out.flags.c_contiguous and table.flags.c_contiguous
    if indices.dtype.kind == "i" and table.dtype == out.dtype == np.int32 and contiguous:
        return _kernels.gather_rows(table, indices, indices.dtype.itemsize, out)
    outside = (indices < 0) | (indices >= len(table))  # unsigned or strided columns (none of ours): numpy
    out[:] = -1
    out[~outside] = table[indices[~outside]]
    return int(outside.sum())


def _order_and_nest(line: DecodedLine, meta_index: np.ndarray, depth: np.ndarray) -> _PreparedLine:
    """Durations clamped, the events in the model's order (start ascending, longer first on ties) and
    their depths, in place: the decoded columns become the track's (no copy of the biggest arrays)."""
    duration = np.maximum(line.event_duration_ps, 0, out=line.event_duration_ps)
    _, _, permutation = order_and_nest(line.offset_ps, duration, depth, in_place=True)
    if permutation is not None:
        meta_index[:] = meta_index[permutation]
    return _PreparedLine(meta_index, depth, permutation)


def _build_track(trace: Trace, plane: Plane, line: DecodedLine, ready: _PreparedLine, name_id: np.ndarray,
                 name_ids: np.ndarray) -> Track:  # fmt: skip
    """One track from a decoded line in the model's order; name_id is a view to fill in place."""
    start = line.offset_ps
    start += (line.timestamp_ns - trace.origin_ns) * 1000  # in place: the offsets become trace times
    if len(ready.meta_index):
        _gather_rows(name_ids, ready.meta_index, name_id)
    return Track(
        plane=plane,
        line_id=line.line_id,
        display_id=line.display_id,
        name=line.name,
        display_name=line.display_name,
        start_ps=start,
        duration_ps=line.event_duration_ps,
        meta_index=ready.meta_index,
        name_id=name_id,
        depth=ready.depth,
        stats=_stat_table(trace, len(start), line.stats, ready.permutation),
        kind=track_kind(plane.identity, line.name),
    )


def _stat_table(
    trace: Trace, n_rows: int, raw_columns: dict[str, RawStatColumn], permutation: np.ndarray | None
) -> StatTable:
    columns: dict[str, StatColumn] = {}
    inverse = None
    if permutation is not None:
        inverse = np.empty(len(permutation), np.int32)
        inverse[permutation] = np.arange(len(permutation), dtype=np.int32)
    for name, raw in raw_columns.items():
        rows, values = raw.rows, raw.values
        if raw.kind == "str":
            ids = trace.strings.intern_many(raw.uniques or [])
            values = ids[values]
        elif raw.kind == "bytes":
            base = len(trace.blobs)
            trace.blobs.extend(raw.uniques or [])
            values = (values + base).astype(np.int32)
        elif raw.kind == "int":
            values = narrow_integers(values)
        if rows is None:  # dense: one value per row, in decoded order
            if permutation is not None:
                values = values[permutation]
            columns[name] = StatColumn(name, raw.kind, None, values)
            continue
        if inverse is not None:
            rows = inverse[rows]
            order = np.argsort(rows, kind="stable")
            rows, values = rows[order], values[order]
        dense = len(rows) == n_rows and (n_rows == 0 or bool((np.diff(rows) == 1).all()))
        columns[name] = StatColumn(name, raw.kind, None if dense else rows.astype(np.int32), values)
    return StatTable(n_rows, columns)


__all__ = ["assemble", "load_xplane_files"]
