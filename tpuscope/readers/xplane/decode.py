"""Serialized XSpace bytes -> plain numpy columns (no protobuf objects leave this module).

The C extension cuts the XSpace into planes and each plane into its lines
(zero-copy views of the file's bytes); _planeheader.c reads the rest of each
plane (metadata, plane stats) and the C line decoder turns each line into
event and stat columns, several lines at once in threads. Strings in event
stats are interned by hash, so only distinct strings ever become Python
objects. protobuf itself is never imported on this path (~25 ms of a start).
"""

from __future__ import annotations

import functools
import gzip
import os
import threading
import zlib
from collections.abc import Callable
from dataclasses import field
from typing import Literal, TypeVar

import numpy as np

from tpuscope.model import _kernels
from tpuscope.model.narrowing import narrow_integers
from tpuscope.model.records import record
from tpuscope.readers.xplane import _linedecode, _planeheader
from tpuscope.readers.xplane.workers import OrderedWorkers, ResultNotReady

# Stat value kinds written by _linedecode.c.
KIND_NONE, KIND_DOUBLE, KIND_UINT, KIND_INT, KIND_STR, KIND_BYTES, KIND_REF, KIND_COMPRESSED = range(8)


class MalformedXSpace(ValueError):
    """The bytes are not a well-formed XSpace; the message says where."""


RawStatKind = Literal["int", "uint", "float", "str", "bytes"]


@record
class RawStatColumn:
    """One stat over the rows that carry it, before interning into a trace.

    kind is "int", "uint", "float", "str" or "bytes". For "str"/"bytes",
    `values` are int32 indices into `uniques` (the distinct values).
    """

    kind: RawStatKind
    rows: np.ndarray | None  # int32 row indices, ascending; None when every row has one value
    values: np.ndarray
    uniques: list | None = None


@record
class DecodedLine:
    line_id: int
    display_id: int
    name: str
    display_name: str
    timestamp_ns: int
    duration_ps: int
    metadata_id: np.ndarray
    offset_ps: np.ndarray
    event_duration_ps: np.ndarray
    stats: dict[str, RawStatColumn] = field(default_factory=dict)
    source_bytes: int = 0  # its serialized size, for progress

    def __len__(self) -> int:
        return len(self.metadata_id)


@record
class DecodedPlane:
    plane_id: int
    name: str
    stats: dict[str, object]
    metadata_ids: np.ndarray
    metadata_names: list[str]
    metadata_display_names: list[bytes]
    metadata_children: list[tuple[int, ...]]
    metadata_stats: dict[str, RawStatColumn]
    lines: list[DecodedLine]


@record
class Truncation:
    """Where a serialized XSpace that ends early was cut, and what of it could still be read.

    Writers emit fields in field-number order (protobuf's C++ serializer,
    which TSL's profiler uses), so within a plane the lines come before the
    event and stat metadata: a plane cut in its lines loses its names too.
    """

    complete_planes: int  # planes before the cut, loaded whole
    section: str  # "trailer" (after the planes), "plane header" (between planes) or "plane"
    plane_name: str = ""  # the cut plane ("" when its name is cut off)
    plane_fraction: float = 0.0  # how far into the cut plane the file ends
    plane_field: int = 0  # XPlane field the cut falls in (or the last complete one)
    complete_lines: int = 0  # of the cut plane
    cut_line: str | None = None  # the line cut mid-way, when any of its events decoded
    cut_line_events: int = 0
    gzip: bool = False  # the gzip stream ended early (the XSpace inside may look whole)
    # The (uncompressed) bytes there are, and the fewest the whole XSpace has: these plus the rest the cut
    # plane declares (0 when the cut falls between planes, so nothing bounds what follows).
    bytes_read: int = 0
    bytes_known: int = 0

    def sentence(self) -> str:
        """What is missing, as the end of one sentence (no full stop): 'it ends 63% into ...'."""
        ends = "its gzip data ends" if self.gzip else "it ends"
        planes = _count(self.complete_planes, "complete plane")
        if self.section == "trailer":
            return (
                f"{ends} after its {planes}, in the host names and notes that follow them; every plane loaded"
            )
        if self.section == "plane header":
            return f"{ends} after {planes}; any planes after them are missing"
        name = self.plane_name or f"plane {self.complete_planes + 1} (its name is cut off)"
        kept = [_count(self.complete_lines, "complete line")] if self.complete_lines else []
        if self.cut_line is not None:
            which = "line" if self.complete_lines else "its first line"
            kept.append(f'{_count(self.cut_line_events, "event")} of {which} "{self.cut_line}"')
        missing = []
        if self.plane_field <= _XPLANE_LINES_FIELD:
            if self.cut_line is not None:
                missing.append("the rest of that line")
            missing += ["any later lines", "the plane's event and stat names"]
        elif self.plane_field == _XPLANE_EVENT_METADATA_FIELD:
            missing += ["some of its event names", "its stat names"]
        elif self.plane_field == _XPLANE_STAT_METADATA_FIELD:
            missing.append("some of its stat names")
        else:
            missing.append("some of its plane stats")
        missing.append("any planes after it")
        listed = ", ".join(missing[:-1]) + " and " + missing[-1]
        percent = min(99, int(self.plane_fraction * 100))  # rounded down: a cut plane never reads 100%
        after = f"after {' and '.join(kept)}" if kept else "before its first complete event"
        return f"{ends} {percent}% into {name}, {after}; {listed} are missing"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


@record
class DecodedSpace:
    planes: list[DecodedPlane]
    hostnames: list[str]
    errors: list[str]
    warnings: list[str]
    truncation: Truncation | None = None  # set when the bytes end early

    @property
    def event_count(self) -> int:
        return sum(len(line) for plane in self.planes for line in plane.lines)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


# A stat as _planeheader.c reads it: (stat metadata id, kind, value: float, int, bytes or None).
_HeaderStat = tuple[int, int, object]


def _python_stat_value(stat: _HeaderStat, stat_names: dict[int, str]) -> object:
    _, kind, value = stat
    if kind == KIND_REF:
        return stat_names.get(value, "")  # type: ignore[call-overload]  # a ref's value is an int
    if kind == KIND_COMPRESSED:
        return _gunzip_text(value)  # type: ignore[arg-type]  # bytes
    if kind == KIND_STR:
        return _text(value)  # type: ignore[arg-type]  # bytes
    return value  # None (no value), float, int or bytes


def _gunzip_text(raw: bytes) -> str:
    try:
        return _text(gzip.decompress(raw))
    except (OSError, EOFError, zlib.error):
        return ""


def _stats_to_dict(stats: list[_HeaderStat], stat_names: dict[int, str]) -> dict[str, object]:
    return {_stat_name(stat_names, s[0]): _python_stat_value(s, stat_names) for s in stats}


def _stat_name(stat_names: dict[int, str], meta_id: int) -> str:
    """A stat's name; its id as text when the plane's stat metadata lacks it."""
    return stat_names.get(meta_id, str(meta_id))


def _columns_from_python(per_row: list[dict[str, object]]) -> dict[str, RawStatColumn]:
    """Builds stat columns from a small table of Python dicts (event metadata, not events)."""
    by_name: dict[str, list[tuple[int, object]]] = {}
    for row, stats in enumerate(per_row):
        for name, value in stats.items():
            if value is not None:
                by_name.setdefault(name, []).append((row, value))
    columns: dict[str, RawStatColumn] = {}
    for name, items in by_name.items():
        rows = np.fromiter((r for r, _ in items), dtype=np.int32, count=len(items))
        values = [v for _, v in items]
        integers = [v for v in values if isinstance(v, int)]  # bools too
        if len(integers) == len(values):
            if any(v >= 2**63 for v in integers):
                columns[name] = RawStatColumn("uint", rows, np.array(integers, dtype=np.uint64))
            else:
                columns[name] = RawStatColumn("int", rows, np.array(integers, dtype=np.int64))
        elif all(isinstance(v, int | float) for v in values):
            columns[name] = RawStatColumn("float", rows, np.array(values, dtype=np.float64))
        elif all(isinstance(v, bytes) for v in values):
            uniques = list(dict.fromkeys(values))
            index = {u: i for i, u in enumerate(uniques)}
            columns[name] = RawStatColumn(
                "bytes", rows, np.array([index[v] for v in values], dtype=np.int32), uniques
            )
        else:
            texts = [v if isinstance(v, str) else str(v) for v in values]
            uniques = list(dict.fromkeys(texts))
            index = {u: i for i, u in enumerate(uniques)}
            columns[name] = RawStatColumn(
                "str", rows, np.array([index[t] for t in texts], dtype=np.int32), uniques
            )
    return columns


class _Scratch:
    """A per-thread, grow-only byte arena for a line's temporary columns.

    Why: the kernel faults in and zeroes fresh memory page by page, which
    dominated line decoding here (a 225k-event line: 40 ms CPU with fresh
    arrays, 12 ms with reused ones; perf: 17% of a load in clear_page). Each
    thread keeps one arena, grown to its biggest line, for the whole decode
    (freeing big arenas after each line instead: ~30% slower, same peak).
    """

    # numpy madvises transparent huge pages from 4 MiB on (numpy/_core/src/multiarray/alloc.c)
    MIN_BYTES = 4 << 20

    def __init__(self) -> None:
        self.buffer = np.empty(0, np.uint8)
        self.used = 0

    def reset(self, nbytes: int) -> None:
        if nbytes > len(self.buffer):
            self.buffer = np.empty(0, np.uint8)  # drop the old arena first: never two at once
            self.buffer = np.empty(max(nbytes, self.MIN_BYTES), np.uint8)
        self.used = 0

    def take(self, n: int, dtype) -> np.ndarray:
        itemsize = np.dtype(dtype).itemsize
        start = -(-self.used // 8) * 8  # 8-byte aligned
        self.used = start + n * itemsize
        return self.buffer[start : self.used].view(dtype)


_SCRATCH_BYTES_PER_EVENT = 8  # meta id
_SCRATCH_BYTES_PER_STAT = 8 + 1 + 8 + 4  # meta id, kind, value, event
_SCRATCH_BYTES_PER_STRING = 8 + 8 + 8  # offset, length, hash
# The records grouped by stat id (kind, value, event), last in the arena: lines whose stats are the
# same on every event never group them, so these pages are never touched for them.
_SCRATCH_BYTES_PER_GROUPED_STAT = 1 + 8 + 4
_SCRATCH_ALIGNMENT_SLACK = 8 * 11  # 11 arrays, each aligned to 8 bytes
_thread_scratch = threading.local()


def _scratch() -> _Scratch:
    scratch = getattr(_thread_scratch, "arena", None)
    if scratch is None:
        scratch = _thread_scratch.arena = _Scratch()
    return scratch


class DecodeStopped(Exception):
    """The load's control word asked the decoders in flight to stop (the user pressed Cancel)."""


def _decode_error(exc: ValueError) -> Exception:
    return DecodeStopped() if str(exc) == "stopped" else MalformedXSpace(str(exc))


def scan_line(raw: bytes | memoryview, control: np.ndarray | None = None) -> _linedecode.LineHeader:
    """The line's header and sizes: (id, display_id, timestamp_ns, duration_ps, name, display_name,
    n_events, n_stats, 0). Raises MalformedXSpace (DecodeStopped when `control[0]` is set)."""
    try:
        return _linedecode.scan(raw) if control is None else _linedecode.scan(raw, control, 0)
    except ValueError as exc:
        raise _decode_error(exc) from None


def decode_line(
    raw: bytes | memoryview,
    stat_names: dict[int, str],
    header: _linedecode.LineHeader | None = None,
    offset_out: np.ndarray | None = None,
    duration_out: np.ndarray | None = None,
    control: np.ndarray | None = None,
    slot: int = 0,
) -> DecodedLine:
    """Decodes one serialized XLine (bytes or memoryview) into columns; raises MalformedXSpace.

    `control` (int64 words shared by a load): setting word 0 stops the C
    decoder within about a millisecond (DecodeStopped); word `slot` is kept
    at the number of this line's bytes decoded so far.

    `header` is scan_line's result when the caller already has it; the event
    offsets and durations go into `offset_out`/`duration_out` (int64 views
    of the caller's block) when given. Safe to call from several threads at
    once: the C decoder releases the GIL and scratch memory is per thread.
    """
    if header is None:
        # The light count first: for a regular line (see _decode_regular) it is all the scanning needed.
        light, per_event = _scan_events(raw, control)
        n_events = light[6]
        offset_out = np.empty(n_events, np.int64) if offset_out is None else offset_out
        duration_out = np.empty(n_events, np.int64) if duration_out is None else duration_out
        events = (offset_out, duration_out)
        regular = _decode_regular(raw, stat_names, light, per_event, events, control, slot)
        if regular is not None:
            return regular
        header = scan_line(raw, control)
    line_id, display_id, ts_ns, dur_ps, name, display_name, n_events, n_stats, _ = header
    ev_offset = np.empty(n_events, np.int64) if offset_out is None else offset_out
    ev_duration = np.empty(n_events, np.int64) if duration_out is None else duration_out
    str_capacity = n_stats  # every string is a stat; fill() says how many there are
    scratch = _scratch()
    scratch.reset(n_events * _SCRATCH_BYTES_PER_EVENT + n_stats * _SCRATCH_BYTES_PER_STAT
                  + str_capacity * _SCRATCH_BYTES_PER_STRING + n_stats * _SCRATCH_BYTES_PER_GROUPED_STAT
                  + _SCRATCH_ALIGNMENT_SLACK)  # fmt: skip
    ev_meta = scratch.take(n_events, np.int64)
    st_meta = scratch.take(n_stats, np.int64)
    st_kind = scratch.take(n_stats, np.uint8)
    st_value = scratch.take(n_stats, np.int64)  # for string kinds: the row in the str_* columns
    st_event = scratch.take(n_stats, np.int32)
    # Last in the arena: the pages of unused string capacity are never touched, so never resident.
    str_offset = scratch.take(str_capacity, np.int64)
    str_length = scratch.take(str_capacity, np.int64)
    str_hash = scratch.take(str_capacity, np.uint64)
    try:
        columns = (raw, n_events, n_stats, str_capacity, ev_meta, ev_offset, ev_duration,
                   st_meta, st_kind, st_value, st_event, str_offset, str_length, str_hash)  # fmt: skip
        extra = () if control is None else (control, slot)
        n_strings = _linedecode.fill(*columns, *extra)
    except ValueError as exc:
        raise _decode_error(exc) from None
    # Metadata ids are small: 1-4 bytes per event instead of 8 while the file loads.
    ev_meta = _own(narrow_integers(ev_meta))
    line = DecodedLine(
        line_id, display_id, _text(name), _text(display_name), ts_ns, dur_ps, ev_meta, ev_offset, ev_duration
    )
    if n_stats:
        strings = (str_offset[:n_strings], str_length[:n_strings], str_hash[:n_strings])
        records = _StatRecords(st_meta, st_kind, st_value, st_event, strings)
        line.stats = _group_stats(raw, stat_names, records, n_events, scratch)
        for column in line.stats.values():  # nothing may keep pointing into the scratch arena
            column.values = _own(column.values)
            column.rows = None if column.rows is None else _own(column.rows)
    return line


def _scan_events(raw: bytes | memoryview, control: np.ndarray | None) -> tuple[_linedecode.LineHeader, int]:
    try:
        return _linedecode.scan_events(raw) if control is None else _linedecode.scan_events(raw, control)
    except ValueError as exc:
        raise _decode_error(exc) from None


def _decode_regular(raw: bytes | memoryview, stat_names: dict[int, str], header: _linedecode.LineHeader,
                    per_event: int, events: tuple[np.ndarray, np.ndarray], control: np.ndarray | None,
                    slot: int) -> DecodedLine | None:  # fmt: skip
    """The line decoded by fill_regular when its every event carries the same `per_event` numeric stats
    (as its first event does) in the same order: then each stat is one dense value column, with no
    flat records to group, and no pass counting the stats. None otherwise."""
    line_id, display_id, ts_ns, dur_ps, name, display_name, n_events, *_ = header
    if n_events == 0 or not 0 < per_event <= _MAX_EVERY_EVENT_STATS:
        return None
    ev_offset, ev_duration = events
    scratch = _scratch()
    scratch.reset(n_events * (_SCRATCH_BYTES_PER_EVENT + 8 * per_event) + _SCRATCH_ALIGNMENT_SLACK)
    ev_meta = scratch.take(n_events, np.int64)
    values = scratch.take(n_events * per_event, np.int64)
    try:
        extra = () if control is None else (control, slot)
        found = _linedecode.fill_regular(
            raw, n_events, per_event, ev_meta, ev_offset, ev_duration, values, *extra
        )
    except ValueError as exc:
        raise _decode_error(exc) from None
    if found is None:
        return None
    ids, kinds = found
    columns: list[tuple[int, RawStatColumn]] = []
    for j, (meta_id, present) in enumerate(zip(ids, kinds, strict=True)):
        column = _one_kind_column(values[j * n_events : (j + 1) * n_events], present)
        if column is None:  # one stat with two kinds of value: the general path decides
            return None
        columns.append((meta_id, column))
    line = DecodedLine(line_id, display_id, _text(name), _text(display_name), ts_ns, dur_ps,
                       _own(narrow_integers(ev_meta)), ev_offset, ev_duration)  # fmt: skip
    for meta_id, column in columns:
        column.values = _own(column.values)  # nothing may keep pointing into the scratch arena
        _add_column(line.stats, _stat_name(stat_names, meta_id), column)
    return line


def _one_kind_column(values: np.ndarray, present: int) -> RawStatColumn | None:
    """A dense column of int64 values (or double bits) whose kinds present (bit k: kind k occurs) are
    one numeric kind; None for a mix of kinds or for any other kind (the general path decides)."""
    if present == _BIT_DOUBLE:
        return RawStatColumn("float", None, values.view(np.float64))
    if present == 1 << KIND_INT or (present == _BIT_UINT and int(values.min()) >= 0):
        return RawStatColumn("int", None, narrow_integers(values))
    if present == _BIT_UINT:  # uint64 beyond int64's range
        return RawStatColumn("uint", None, values.view(np.uint64))
    return None


def _own(array: np.ndarray) -> np.ndarray:
    """`array` itself when it owns its memory, else a copy (views into scratch must not escape)."""
    return array if array.base is None else array.copy()


def _stat_groups(st_meta: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Each distinct stat id of a line with its records (ascending, i.e. in event order), for ids that
    group_by_id's counting table does not cover (negative or very large: no real writer's)."""
    order = np.argsort(st_meta, kind="stable")  # stable: the records of one id stay in event order
    cuts = np.flatnonzero(np.diff(st_meta[order])) + 1
    return [(int(st_meta[group[0]]), group) for group in np.split(order, cuts)]


def _every_event_groups(
    st_meta: np.ndarray, st_event: np.ndarray, n_events: int
) -> list[tuple[int, slice]] | None:
    """When each event carries the same k stats in the same order: each stat's records as a strided
    slice (no index arrays); else None."""
    if n_events == 0 or len(st_meta) % n_events:
        return None
    k = len(st_meta) // n_events
    ids = st_meta[:k].tolist()
    if not 0 < k <= _MAX_EVERY_EVENT_STATS or len(set(ids)) != k:
        return None
    if not _linedecode.every_event_has_each(st_meta, st_event, k):
        return None
    return [(meta_id, slice(j, None, k)) for j, meta_id in enumerate(ids)]


# Beyond this many stats per event the strided views stop paying: the grouped copy reads each record once.
_MAX_EVERY_EVENT_STATS = 8

# A line's string records (str_offset, str_length, str_hash): see fill() in _linedecode.c.
_StringRecords = tuple[np.ndarray, np.ndarray, np.ndarray]


@record
class _StatRecords:
    """A line's flat stat records as fill() wrote them (one per stat of each event, event by event)."""

    meta: np.ndarray
    kind: np.ndarray
    value: np.ndarray  # for string kinds: the row in `strings`
    event: np.ndarray
    strings: _StringRecords


# One group of records with one stat id: (meta id, kinds, values, owning events, kinds present as bits).
_Group = tuple[int, np.ndarray, np.ndarray, np.ndarray, int]


def _grouped(records: _StatRecords, scratch: _Scratch) -> list[_Group]:
    """The records by stat id, each id's in event order: contiguous copies made by one C pass."""
    n = len(records.meta)
    kinds, values, events = scratch.take(n, np.uint8), scratch.take(n, np.int64), scratch.take(n, np.int32)
    groups = _linedecode.group_by_id(records.meta, records.kind, records.value, records.event,
                                     kinds, values, events)  # fmt: skip
    if groups is not None:
        return [(meta_id, kinds[a:b], values[a:b], events[a:b], present) for meta_id, a, b, present in groups]
    out: list[_Group] = []
    for meta_id, group in _stat_groups(records.meta):
        kinds = records.kind[group]
        out.append((meta_id, kinds, records.value[group], records.event[group], _kinds_present(kinds)))
    return out


def _kinds_present(kinds: np.ndarray) -> int:
    """Bit k set when kind k occurs (as group_by_id reports it)."""
    return sum(1 << int(kind) for kind in np.flatnonzero(np.bincount(kinds, minlength=8)))


_BIT_NONE = 1 << KIND_NONE
_BIT_DOUBLE = 1 << KIND_DOUBLE
_BIT_UINT = 1 << KIND_UINT
_BITS_TEXT = (1 << KIND_STR) | (1 << KIND_REF) | (1 << KIND_COMPRESSED)
_BIT_BYTES = 1 << KIND_BYTES


def _group_stats(raw: bytes | memoryview, stat_names: dict[int, str], records: _StatRecords, n_events: int,
                 scratch: _Scratch) -> dict[str, RawStatColumn]:  # fmt: skip
    """Splits the flat stat records of a line into one column per stat name."""
    columns: dict[str, RawStatColumn] = {}
    every_event = _every_event_groups(records.meta, records.event, n_events)
    if every_event is not None:
        groups: list[_Group] = []
        for meta_id, strided in every_event:
            kinds, values = records.kind[strided], records.value[strided]
            column = _dense_numeric_column(kinds, values)
            if column is not None:
                _add_column(columns, _stat_name(stat_names, meta_id), column)
            else:
                rows = records.event[strided]
                groups.append((meta_id, kinds, values, rows, _kinds_present(kinds)))
    else:
        groups = _grouped(records, scratch)
    for meta_id, kinds, values, rows, present in groups:
        column = _column_for_group(raw, stat_names, kinds, values, rows, present, records.strings)
        if column is None:
            continue
        if _is_every_row(column.rows, n_events):
            column.rows = None  # dense: saves 4 bytes per event while the file loads
        _add_column(columns, _stat_name(stat_names, meta_id), column)
    return columns


def _add_column(columns: dict[str, RawStatColumn], name: str, column: RawStatColumn) -> None:
    previous = columns.get(name)
    columns[name] = column if previous is None else _merge_columns(previous, column)


def _column_for_group(raw: bytes | memoryview, stat_names: dict[int, str], kinds: np.ndarray,
                      values: np.ndarray, rows: np.ndarray, present: int,
                      strings: _StringRecords) -> RawStatColumn | None:  # fmt: skip
    """One stat's column from its records; `present` (bit k: kind k occurs) picks the type without
    scanning the records again in the common case of one kind."""
    if present & _BIT_NONE:
        keep = kinds != KIND_NONE
        kinds, values, rows = kinds[keep], values[keep], rows[keep]
        present &= ~_BIT_NONE
    if not present:
        return None
    if present & (_BITS_TEXT | _BIT_BYTES):
        if present & ~(_BITS_TEXT | _BIT_BYTES):
            # A stat that is a string on some events and a number on others:
            # keep the textual majority; numbers are rare outliers here.
            textual = (kinds >= KIND_STR) & (kinds <= KIND_COMPRESSED)
            rows, values, kinds = rows[textual], values[textual], kinds[textual]
            present &= _BITS_TEXT | _BIT_BYTES
        return _text_column(raw, stat_names, rows, values, kinds, present, strings)
    if present == _BIT_DOUBLE:
        return RawStatColumn("float", rows, values.view(np.float64))
    if present & _BIT_DOUBLE:
        is_float = kinds == KIND_DOUBLE
        as_float = values.astype(np.float64)
        as_float[is_float] = values[is_float].view(np.float64)
        return RawStatColumn("float", rows, as_float)
    if present & _BIT_UINT:
        beyond_int64 = values < 0 if present == _BIT_UINT else (values < 0) & (kinds == KIND_UINT)
        if beyond_int64.any():
            return RawStatColumn("uint", rows, values.view(np.uint64))
    return RawStatColumn("int", rows, narrow_integers(values))


def _dense_numeric_column(kinds: np.ndarray, values: np.ndarray) -> RawStatColumn | None:
    """A stat on every event with one numeric kind throughout (the common case) as a dense column,
    found with two reductions and no temporaries; None for anything else (the general path)."""
    kind = int(kinds.min())
    if kind != int(kinds.max()):
        return None
    return _one_kind_column(values, 1 << kind)


def _is_every_row(rows: np.ndarray | None, n_rows: int) -> bool:
    if rows is None or len(rows) != n_rows:
        return rows is None
    if n_rows == 0:
        return True
    return int(rows[0]) == 0 and int(rows[-1]) == n_rows - 1 and bool((np.diff(rows) == 1).all())


def _text_column(raw: bytes | memoryview, stat_names: dict[int, str], rows: np.ndarray, values: np.ndarray,
                 kinds: np.ndarray, present: int, strings: _StringRecords) -> RawStatColumn:  # fmt: skip
    """Interns string stats by content hash: only distinct strings become Python objects.

    Refs are keyed by the stat-metadata id they point at; a ref and an inline
    string with the same text end up as two uniques, which the trace's string
    table collapses when it interns them.
    """
    str_offset, str_length, str_hash = strings
    if not present & (1 << KIND_REF):
        keys = str_hash[values]
    else:
        keys = values.view(np.uint64).copy()  # a ref's key is the stat-metadata id it names
        inline = kinds != KIND_REF
        keys[inline] = str_hash[values[inline]]
    if present & (present - 1):  # more than one kind: the same bytes as str and as bytes differ
        keys ^= kinds.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    inverse = np.empty(len(keys), np.int32)
    first = _linedecode.intern_keys(keys, inverse)
    all_bytes = present == _BIT_BYTES
    uniques: list[str | bytes] = []
    for pos in first:
        kind = kinds[pos]
        if kind == KIND_REF:
            uniques.append(stat_names.get(int(values[pos]), ""))
            continue
        string_row = int(values[pos])
        start = int(str_offset[string_row])
        chunk = bytes(raw[start : start + int(str_length[string_row])])
        if all_bytes:
            uniques.append(chunk)
        elif kind == KIND_COMPRESSED:
            uniques.append(_gunzip_text(chunk))
        else:
            uniques.append(_text(chunk))
    return RawStatColumn("bytes" if all_bytes else "str", rows, inverse, uniques)


def _merge_columns(a: RawStatColumn, b: RawStatColumn) -> RawStatColumn:
    """Two stat ids with the same name on one line (rare): concatenate, rows re-sorted."""
    if a.kind != b.kind or a.kind in ("str", "bytes"):
        return a if len(a.values) >= len(b.values) else b
    a_rows = np.arange(len(a.values), dtype=np.int32) if a.rows is None else a.rows
    b_rows = np.arange(len(b.values), dtype=np.int32) if b.rows is None else b.rows
    rows = np.concatenate([a_rows, b_rows])
    values = np.concatenate([a.values, b.values])
    order = np.argsort(rows, kind="stable")
    return RawStatColumn(a.kind, rows[order], values[order])


# Worker threads for line decoding: the C decoder releases the GIL, so lines decode in parallel.
# Capped because each thread holds one line's scratch (21 bytes per stat, 8 per event) while the
# file and the decoded columns are also resident: 2 threads cost ~20 MB more peak than 1 on the
# 1M-event file (benchmarks/README.md).
_MAX_THREADS = 4
# Below this many line bytes (~30k events) a thread pool's start-up costs more than it saves.
_PARALLEL_MIN_BYTES = 1 << 20

# XSpace.planes and XPlane's fields (tpuscope/readers/xplane/xplane.proto).
_XSPACE_PLANES_FIELD = 1
_XPLANE_LINES_FIELD = 3
_XPLANE_EVENT_METADATA_FIELD = 4
_XPLANE_STAT_METADATA_FIELD = 5


_Read = TypeVar("_Read")


def _wire_read(reader: Callable[..., _Read], *args: object) -> _Read:
    """A C reader's result (_linedecode.c, _planeheader.c), its ValueError (malformed bytes) raised as
    MalformedXSpace."""
    try:
        return reader(*args)
    except ValueError:
        raise MalformedXSpace("protobuf decoding failed (malformed message)") from None


def _split(buffer, field: int) -> tuple[bytes, list[tuple[int, int]]]:
    return _wire_read(_linedecode.split_message, buffer, field)


class _PlaneHeader:
    """An XPlane's fields other than its lines (plane_header in _planeheader.c), strings decoded."""

    __slots__ = ("id", "name", "event_metadata", "stat_names", "stats")

    def __init__(self, raw: bytes):
        plane_id, name, events, stat_entries, stats = _wire_read(_planeheader.plane_header, raw)
        self.id: int = plane_id
        self.name = _text(name)
        # Map entries in file order: the last of a key wins, as protobuf's maps do.
        # Each value: (id, name, display_name, stats, child ids).
        self.event_metadata: dict[int, tuple] = {entry[0]: entry[1:] for entry in events}
        self.stat_names: dict[int, str] = {key: _text(text) for key, text in stat_entries}
        self.stats: list[_HeaderStat] = stats


def _space_strings(raw: bytes) -> tuple[list[str], list[str], list[str]]:
    """The XSpace's errors, warnings and host names."""
    errors, warnings, hostnames = _wire_read(_planeheader.space_strings, raw)
    return [_text(t) for t in errors], [_text(t) for t in warnings], [_text(t) for t in hostnames]


def _intact_prefix(buffer) -> tuple[int, int, int, int, int]:
    """(length, last_field, cut_field, cut_offset, cut_declared): see intact_prefix in _linedecode.c."""
    return _wire_read(_linedecode.intact_prefix, buffer)


@record
class _Planes:
    """The XSpace cut into its pieces: headers, line views and the byte span of every plane."""

    space_rest: bytes
    headers: list[_PlaneHeader]
    lines: list[list[memoryview]]
    spans: list[tuple[int, int]]
    truncation: Truncation | None = None
    cut_line_of: tuple[int, int] | None = None  # (plane, line) of the line cut mid-way


def _cut_into_planes(view: memoryview, ends_early: bool) -> _Planes:
    """Splits planes and lines; for bytes that end early, keeps every complete piece and the cut line's
    complete events (each a valid message of its type), and records where the cut fell."""
    length, last_field, cut_field, cut_offset, cut_declared = _intact_prefix(view)
    whole = view if length == len(view) else view[:length]
    space_rest, plane_spans = _split(whole, _XSPACE_PLANES_FIELD)
    pieces = _Planes(space_rest, [], [], list(plane_spans))
    for offset, size in plane_spans:
        header, lines = _cut_plane(view[offset : offset + size])
        pieces.headers.append(header)
        pieces.lines.append(lines)
    if length == len(view) and not ends_early:
        return pieces
    n_planes = len(plane_spans)
    if cut_field != _XSPACE_PLANES_FIELD or cut_offset < 0:
        # Cut between planes (or inside the next one's tag or length), or in the host names, errors
        # and warnings that follow the planes.
        in_trailer = cut_field > _XSPACE_PLANES_FIELD or (
            cut_field == -1 and last_field > _XSPACE_PLANES_FIELD
        )
        section = "trailer" if in_trailer else "plane header"
        pieces.truncation = Truncation(n_planes, section, gzip=ends_early, bytes_read=len(view))
        return pieces
    partial = view[cut_offset:]
    header, lines, plane_field, cut_line = _salvage_plane(partial)
    cut_name, cut_events = (None, 0) if cut_line is None else cut_line
    pieces.truncation = Truncation(
        n_planes, "plane", plane_name=header.name, plane_fraction=len(partial) / max(cut_declared, 1),
        plane_field=plane_field, complete_lines=len(lines) - (cut_line is not None),
        cut_line=cut_name, cut_line_events=cut_events, gzip=ends_early,
        bytes_read=len(view), bytes_known=max(len(view), cut_offset + cut_declared),
    )  # fmt: skip
    if lines:
        pieces.headers.append(header)
        pieces.lines.append(lines)
        pieces.spans.append((cut_offset, len(partial)))
        if cut_line is not None:
            pieces.cut_line_of = (len(pieces.headers) - 1, len(lines) - 1)
    return pieces


def _cut_plane(plane_view: memoryview) -> tuple[_PlaneHeader, list[memoryview]]:
    plane_rest, line_spans = _split(plane_view, _XPLANE_LINES_FIELD)
    return _PlaneHeader(plane_rest), [plane_view[o : o + n] for o, n in line_spans]


def _salvage_plane(
    partial: memoryview,
) -> tuple[_PlaneHeader, list[memoryview], int, tuple[str, int] | None]:
    """A cut plane's complete fields and its cut line's complete events.

    Returns the plane header, its line views (the cut line last, when any of
    its events decode cleanly), the XPlane field the cut falls in (or the last
    complete one) and the cut line's (name, events kept).
    """
    length, last_field, cut_field, cut_offset, _ = _intact_prefix(partial)
    header, lines = _cut_plane(partial[:length])
    plane_field = cut_field if cut_field > 0 else max(last_field, 1)
    if cut_field != _XPLANE_LINES_FIELD or cut_offset < 0:
        return header, lines, plane_field, None
    line = partial[cut_offset:]
    try:
        line = line[: _intact_prefix(line)[0]]
        line_header = scan_line(line)
    except MalformedXSpace:
        return header, lines, plane_field, None  # the cut line's events do not decode cleanly: dropped
    n_events = line_header[6]
    if n_events == 0:
        return header, lines, plane_field, None
    return header, [*lines, line], plane_field, (_text(line_header[4]), n_events)


class _PlaneReleaser:
    """Hands a plane's pages back as soon as its last line is decoded, by the thread that decoded it.

    Why in the workers: the calling thread takes lines in file order and, on
    a busy machine, can lag behind the pool; planes the pool has finished
    would stay resident until it caught up (10M events: peak 0.6 -> 1.1 GB).
    """

    def __init__(self, release, spans: list[tuple[int, int]], line_counts: list[int]):
        self._release = release
        self._spans = spans
        self._left = list(line_counts)
        self._lock = threading.Lock()
        self.plane_of_line = np.repeat(np.arange(len(spans)), line_counts)
        if release is not None:
            for plane, count in enumerate(line_counts):
                if count == 0:
                    release(*spans[plane])

    def line_done(self, line_index: int) -> None:
        if self._release is None:
            return
        plane = int(self.plane_of_line[line_index])
        with self._lock:
            self._left[plane] -= 1
            last = self._left[plane] == 0
        if last:
            self._release(*self._spans[plane])


# on_line(line, metadata_ids): the caller's own work on a decoded line, run in the thread that decoded it.
LineHook = Callable[[DecodedLine, np.ndarray], None]


def _decode_job(
    job: tuple, index: int, releaser: _PlaneReleaser, control: np.ndarray | None = None,
    on_line: LineHook | None = None,
) -> DecodedLine:  # fmt: skip
    raw, stat_names, metadata_ids = job
    line = decode_line(raw, stat_names, control=control, slot=0 if control is None else 1 + index)
    line.source_bytes = len(raw)
    releaser.line_done(index)
    if on_line is not None:
        on_line(line, metadata_ids)
    return line


def _await_line(pool: OrderedWorkers, index: int, progress, done: int, control: np.ndarray,
                total: int) -> DecodedLine:  # fmt: skip
    """Line `index` from the pool; meanwhile, progress inside long lines (their bytes decoded so far)."""
    while True:
        try:
            return pool.result(index, timeout=_PROGRESS_POLL_S)
        except ResultNotReady:
            if progress is not None:
                progress(done + int(control[1 + index :].sum()), total)


# While lines decode in the pool, the calling thread reports progress (and so notices Cancel) at least
# this often, even inside one long line (a 25M-event line takes seconds); our choice.
_PROGRESS_POLL_S = 0.2


def decode_xspace(
    data, progress=None, threads: int | None = None, ends_early: bool = False, release=None,
    on_line: LineHook | None = None,
) -> DecodedSpace:  # fmt: skip
    """Decodes a serialized XSpace (bytes or any buffer). Raises MalformedXSpace on any corruption.

    Bytes that end early (a file cut short) decode too: every complete plane
    and line, and the complete events of the cut line; `truncation` says
    where the cut fell. `ends_early` says the caller knows the bytes are cut
    (a gzip stream without its end), even if they end between two fields.

    The C splitter cuts out planes and lines as zero-copy views of `data`;
    protobuf parses only what remains (metadata, stats, names). Lines decode
    in file order in a thread pool (`threads`, default: up to 4 cores). `progress(done_bytes, total_bytes)` is
    called in this thread after each line; it may raise to cancel the load.

    `release(offset, length)`, when given, is called with each plane's byte
    range as soon as its lines are decoded (the loader hands a mapped file's
    pages back to the OS there), so those bytes are never read again; for
    writable `data` (a buffer of the caller's own) the default releases them.

    `on_line(line, metadata_ids)`, when given, is called with each decoded line
    and its plane's event-metadata ids (sorted, as in DecodedPlane) in the
    thread that decoded it: the caller's per-line work then runs beside the
    decoding of other lines instead of after the whole file.
    """
    view = memoryview(data)
    pieces = _cut_into_planes(view, ends_early)
    errors, warnings, hostnames = _space_strings(pieces.space_rest)
    headers, plane_lines, plane_spans = pieces.headers, pieces.lines, pieces.spans
    total = sum(len(raw) for lines in plane_lines for raw in lines) or 1
    stat_names_of = [plane.stat_names for plane in headers]
    metadata_ids_of = [np.fromiter(sorted(plane.event_metadata), np.int64, len(plane.event_metadata))
                       for plane in headers]  # fmt: skip
    if threads is None:
        threads = min(_MAX_THREADS, os.cpu_count() or 1) if total >= _PARALLEL_MIN_BYTES else 1
    per_plane = zip(plane_lines, stat_names_of, metadata_ids_of, strict=True)
    jobs = [(raw, names, ids) for lines, names, ids in per_plane for raw in lines]
    workers = max(1, min(threads, len(jobs)))
    # Big files always decode in the pool (even with one worker), so this thread stays free to report
    # progress and to stop the decoders when the caller cancels.
    pooled = workers > 1 or total >= _PARALLEL_MIN_BYTES
    if release is None and not view.readonly:
        release = functools.partial(_kernels.release_pages, view)
    control = np.zeros(1 + len(jobs), np.int64)  # word 0: stop; word 1 + i: bytes of line i decoded
    # Each line is scanned and decoded by one task, lines in file order across the pool, and a plane's
    # pages are released as soon as its last line is decoded: only the planes of the lines in flight are
    # ever resident (a mapped 2 GB file would otherwise end up resident whole), while a big line of one
    # plane decodes beside the next plane's.
    releaser = _PlaneReleaser(release, plane_spans, [len(lines) for lines in plane_lines])
    work = functools.partial(_decode_job, releaser=releaser, control=control, on_line=on_line)
    pool = OrderedWorkers(work, jobs, workers, "xline") if pooled else None
    decoded: list[DecodedLine] = []
    done = 0
    try:
        for index, job in enumerate(jobs):
            if pool is None:
                line = _decode_job(job, index, releaser, None, on_line)
            else:
                line = _await_line(pool, index, progress, done, control, total)
            decoded.append(line)
            done += line.source_bytes
            if progress is not None:
                progress(done, total)
    finally:
        control[0] = 1  # decoders still in flight (the caller cancelled, or a line failed) stop now
        if pool is not None:
            pool.close()  # its threads' arenas go with them
        _thread_scratch.__dict__.pop("arena", None)  # this thread's arena, when it decoded lines itself
    planes: list[DecodedPlane] = []
    next_line = 0
    for plane, lines, stat_names, metadata_ids in zip(headers, plane_lines, stat_names_of, metadata_ids_of,
                                                      strict=True):  # fmt: skip
        meta_items = [plane.event_metadata[key] for key in metadata_ids.tolist()]  # by id, as metadata_ids
        names = [_text(name) for _, name, _, _, _ in meta_items]
        display_names = [display_name for _, _, display_name, _, _ in meta_items]
        children = [child_ids for *_, child_ids in meta_items]
        meta_stats = _columns_from_python(
            [_stats_to_dict(stats, stat_names) for _, _, _, stats, _ in meta_items]
        )
        planes.append(
            DecodedPlane(
                plane_id=plane.id,
                name=plane.name,
                stats=_stats_to_dict(plane.stats, stat_names),
                metadata_ids=metadata_ids,
                metadata_names=names,
                metadata_display_names=display_names,
                metadata_children=children,
                metadata_stats=meta_stats,
                lines=decoded[next_line : next_line + len(lines)],
            )
        )
        next_line += len(lines)
    return DecodedSpace(planes, hostnames, errors, warnings, pieces.truncation)
