"""Serialized XSpace bytes -> plain numpy columns (no protobuf objects leave this module).

The C extension cuts the XSpace into planes and each plane into its lines
(zero-copy views of the file's bytes); upb parses the rest of each plane with
the skeleton schema (metadata, plane stats) and the C line decoder turns each
line into event and stat columns, several lines at once in threads. Strings in
event stats are interned by hash with numpy, so only distinct strings ever
become Python objects.
"""

from __future__ import annotations

import gzip
import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from google.protobuf.message import DecodeError

from tpuscope.xplane import _linedecode
from tpuscope.xplane.skeleton_pb2 import XPlaneSkeleton, XSpaceSkeleton

# Stat value kinds written by _linedecode.c.
KIND_NONE, KIND_DOUBLE, KIND_UINT, KIND_INT, KIND_STR, KIND_BYTES, KIND_REF, KIND_COMPRESSED = range(8)


class MalformedXSpace(ValueError):
    """The bytes are not a well-formed XSpace; the message says where."""


@dataclass
class RawStatColumn:
    """One stat over the rows that carry it, before interning into a trace.

    kind is "int", "uint", "float", "str" or "bytes". For "str"/"bytes",
    `values` are int32 indices into `uniques` (the distinct values).
    """

    kind: str
    rows: np.ndarray  # int32 row indices, ascending
    values: np.ndarray
    uniques: list | None = None


@dataclass
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

    def __len__(self) -> int:
        return len(self.metadata_id)


@dataclass
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


@dataclass
class DecodedSpace:
    planes: list[DecodedPlane]
    hostnames: list[str]
    errors: list[str]
    warnings: list[str]

    @property
    def event_count(self) -> int:
        return sum(len(line) for plane in self.planes for line in plane.lines)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _python_stat_value(stat, stat_names: dict[int, str]) -> object:
    which = stat.WhichOneof("value")
    if which is None:
        return None
    if which == "ref_value":
        return stat_names.get(stat.ref_value, "")
    if which == "compressed_str_value":
        return _gunzip_text(stat.compressed_str_value)
    return getattr(stat, which)


def _gunzip_text(raw: bytes) -> str:
    try:
        return _text(gzip.decompress(raw))
    except (OSError, EOFError, zlib.error):
        return ""


def _stats_to_dict(stats, stat_names: dict[int, str]) -> dict[str, object]:
    return {stat_names.get(s.metadata_id, str(s.metadata_id)): _python_stat_value(s, stat_names) for s in stats}


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
        if all(isinstance(v, bool | int) for v in values):
            if any(v >= 2**63 for v in values):
                columns[name] = RawStatColumn("uint", rows, np.array(values, dtype=np.uint64))
            else:
                columns[name] = RawStatColumn("int", rows, np.array(values, dtype=np.int64))
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


def decode_line(raw, stat_names: dict[int, str]) -> DecodedLine:
    """Decodes one serialized XLine (bytes or memoryview) into columns; raises MalformedXSpace.

    Safe to call from several threads at once: the C decoder releases the GIL.
    """
    try:
        line_id, display_id, ts_ns, dur_ps, name, display_name, n_events, n_stats = _linedecode.scan(raw)
        ev_meta = np.empty(n_events, np.int64)
        ev_offset = np.empty(n_events, np.int64)
        ev_duration = np.empty(n_events, np.int64)
        st_meta = np.empty(n_stats, np.int64)
        st_kind = np.empty(n_stats, np.uint8)
        st_value = np.empty(n_stats, np.int64)
        st_offset = np.empty(n_stats, np.int64)
        st_length = np.empty(n_stats, np.int64)
        st_hash = np.empty(n_stats, np.uint64)
        st_event = np.empty(n_stats, np.int32)
        _linedecode.fill(
            raw, n_events, n_stats, ev_meta, ev_offset, ev_duration,
            st_meta, st_kind, st_value, st_offset, st_length, st_hash, st_event,
        )  # fmt: skip
    except ValueError as exc:
        raise MalformedXSpace(str(exc)) from None
    line = DecodedLine(
        line_id, display_id, _text(name), _text(display_name), ts_ns, dur_ps, ev_meta, ev_offset, ev_duration
    )
    if n_stats:
        line.stats = _group_stats(raw, stat_names, st_meta, st_kind, st_value, st_offset, st_length,
                                  st_hash, st_event)  # fmt: skip
    return line


# Up to this many distinct stat ids on a line, one comparison pass per id beats sorting all records.
_FEW_STAT_IDS = 8
# Stat ids below this bound are found with one bincount instead of np.unique's sort.
_BINCOUNT_ID_BOUND = 1 << 16


def _stat_groups(st_meta: np.ndarray) -> list[tuple[int, np.ndarray | slice]]:
    """Each distinct stat id of a line with its records (ascending, i.e. in event order)."""
    low, high = int(st_meta.min()), int(st_meta.max())
    if low == high:
        return [(low, slice(None))]
    if low >= 0 and high < _BINCOUNT_ID_BOUND:
        ids = np.flatnonzero(np.bincount(st_meta))
    else:
        ids = np.unique(st_meta)
    if len(ids) <= _FEW_STAT_IDS:
        return [(int(i), np.flatnonzero(st_meta == i)) for i in ids]
    order = np.argsort(st_meta, kind="stable")  # stable: records of one id stay in event order
    cuts = np.flatnonzero(np.diff(st_meta[order])) + 1
    return [(int(st_meta[group[0]]), group) for group in np.split(order, cuts)]


def _group_stats(raw, stat_names, st_meta, st_kind, st_value, st_offset, st_length, st_hash, st_event):
    """Splits the flat stat records of a line into one column per stat name."""
    columns: dict[str, RawStatColumn] = {}
    for meta_id, group in _stat_groups(st_meta):
        name = stat_names.get(meta_id, str(meta_id))
        column = _column_for_group(raw, stat_names, group, st_kind, st_value, st_offset, st_length,
                                   st_hash, st_event)  # fmt: skip
        if column is None:
            continue
        previous = columns.get(name)
        columns[name] = column if previous is None else _merge_columns(previous, column)
    return columns


def _column_for_group(raw, stat_names, group, st_kind, st_value, st_offset, st_length, st_hash, st_event):
    kinds = st_kind[group]
    keep = kinds != KIND_NONE
    if not keep.all():
        group, kinds = _positions(group, len(st_kind))[keep], kinds[keep]
    if len(kinds) == 0:
        return None
    rows = st_event[group]
    values = st_value[group]
    is_float = kinds == KIND_DOUBLE
    is_text = (kinds == KIND_STR) | (kinds == KIND_REF) | (kinds == KIND_COMPRESSED)
    is_bytes = kinds == KIND_BYTES
    if is_text.any() or is_bytes.any():
        if not (is_text | is_bytes).all():
            # A stat that is a string on some events and a number on others:
            # keep the textual majority; numbers are rare outliers here.
            textual = is_text | is_bytes
            group, rows, values, kinds = _positions(group, len(st_kind))[textual], rows[textual], \
                values[textual], kinds[textual]  # fmt: skip
        group = _positions(group, len(st_kind))
        return _text_column(raw, stat_names, group, rows, values, kinds, st_offset, st_length, st_hash)
    if is_float.all():
        return RawStatColumn("float", rows, values.view(np.float64))
    if is_float.any():
        as_float = values.astype(np.float64)
        as_float[is_float] = values[is_float].view(np.float64)
        return RawStatColumn("float", rows, as_float)
    is_uint = kinds == KIND_UINT
    if is_uint.any() and (values[is_uint] < 0).any():  # uint64 beyond int64's range
        return RawStatColumn("uint", rows, values.view(np.uint64))
    return RawStatColumn("int", rows, values)


def _positions(group: np.ndarray | slice, n: int) -> np.ndarray:
    """A group of records as explicit indices (a slice means all n records)."""
    return np.arange(n)[group] if isinstance(group, slice) else group


def _text_column(raw, stat_names, group, rows, values, kinds, st_offset, st_length, st_hash):
    """Interns string stats by content hash: only distinct strings become Python objects.

    Refs are keyed by the stat-metadata id they point at; a ref and an inline
    string with the same text end up as two uniques, which the trace's string
    table collapses when it interns them.
    """
    is_ref = kinds == KIND_REF
    keys = np.where(is_ref, values.view(np.uint64), st_hash[group])
    combined = keys ^ (kinds.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    all_bytes = bool((kinds == KIND_BYTES).all())
    uniques: list = []
    for pos in first:
        kind = kinds[pos]
        if kind == KIND_REF:
            uniques.append(stat_names.get(int(values[pos]), ""))
            continue
        record = group[pos]
        start = int(st_offset[record])
        chunk = bytes(raw[start : start + int(st_length[record])])
        if all_bytes:
            uniques.append(bytes(chunk))
        elif kind == KIND_COMPRESSED:
            uniques.append(_gunzip_text(chunk))
        else:
            uniques.append(_text(chunk))
    return RawStatColumn("bytes" if all_bytes else "str", rows, inverse.astype(np.int32).ravel(), uniques)


def _merge_columns(a: RawStatColumn, b: RawStatColumn) -> RawStatColumn:
    """Two stat ids with the same name on one line (rare): concatenate, rows re-sorted."""
    if a.kind != b.kind or a.kind in ("str", "bytes"):
        return a if len(a.rows) >= len(b.rows) else b
    rows = np.concatenate([a.rows, b.rows])
    values = np.concatenate([a.values, b.values])
    order = np.argsort(rows, kind="stable")
    return RawStatColumn(a.kind, rows[order], values[order])


# Worker threads for line decoding: the C decoder releases the GIL, so lines decode in parallel.
# Capped because each thread holds one line's temporary stat records (~45 bytes per stat).
_MAX_THREADS = 4
# Below this many line bytes a thread pool costs more than it saves.
_PARALLEL_MIN_BYTES = 1 << 20

# XSpace.planes and XPlane.lines (tpuscope/xplane/xplane.proto).
_XSPACE_PLANES_FIELD = 1
_XPLANE_LINES_FIELD = 3


def _split(buffer, field: int) -> tuple[bytes, list[tuple[int, int]]]:
    try:
        return _linedecode.split_message(buffer, field)
    except ValueError:
        raise MalformedXSpace("protobuf decoding failed (malformed message)") from None


def _parse(message_type, raw: bytes):
    message = message_type()
    try:
        message.ParseFromString(raw)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise MalformedXSpace(f"protobuf decoding failed ({exc})") from None
    return message


def decode_xspace(data: bytes, progress=None, threads: int | None = None) -> DecodedSpace:
    """Decodes a serialized XSpace. Raises MalformedXSpace on any corruption.

    The C splitter cuts out planes and lines as zero-copy views of `data`;
    protobuf parses only what remains (metadata, stats, names). Lines decode
    in a thread pool. `progress(done_bytes, total_bytes)` is called in this
    thread after each line; it may raise to cancel the load.
    """
    view = memoryview(data)
    space_rest, plane_spans = _split(view, _XSPACE_PLANES_FIELD)
    space = _parse(XSpaceSkeleton, space_rest)
    headers, plane_lines = [], []
    for offset, length in plane_spans:
        plane_view = view[offset : offset + length]
        plane_rest, line_spans = _split(plane_view, _XPLANE_LINES_FIELD)
        headers.append(_parse(XPlaneSkeleton, plane_rest))
        plane_lines.append([plane_view[o : o + n] for o, n in line_spans])
    total = sum(len(raw) for lines in plane_lines for raw in lines) or 1
    stat_names_of = [{k: v.name for k, v in plane.stat_metadata.items()} for plane in headers]
    jobs = [(raw, names) for lines, names in zip(plane_lines, stat_names_of, strict=True) for raw in lines]
    workers = min(_MAX_THREADS, os.cpu_count() or 1, len(jobs)) if total >= _PARALLEL_MIN_BYTES else 1
    decoded: list[DecodedLine] = []
    done = 0
    if workers > 1:
        pool = ThreadPoolExecutor(workers, thread_name_prefix="xline")
        results = pool.map(lambda job: decode_line(*job), jobs)
    else:
        pool, results = None, (decode_line(*job) for job in jobs)
    try:
        for (raw, _), line in zip(jobs, results, strict=True):
            decoded.append(line)
            done += len(raw)
            if progress is not None:
                progress(done, total)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    planes: list[DecodedPlane] = []
    next_line = 0
    for plane, lines, stat_names in zip(headers, plane_lines, stat_names_of, strict=True):
        meta_items = sorted(plane.event_metadata.items())
        metadata_ids = np.fromiter((k for k, _ in meta_items), dtype=np.int64, count=len(meta_items))
        names = [m.name for _, m in meta_items]
        display_names = [bytes(m.display_name) for _, m in meta_items]
        children = [tuple(m.child_id) for _, m in meta_items]
        meta_stats = _columns_from_python([_stats_to_dict(m.stats, stat_names) for _, m in meta_items])
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
    return DecodedSpace(planes, list(space.hostnames), list(space.errors), list(space.warnings))
