"""The trace and its analyses as Arrow tables, built over the model's numpy columns.

Each table is built only when a query names it (`TABLES`: its columns with one line of meaning
each, and how to build it). The events table takes the model's columns as they are: one Arrow
chunk per track over the track's own numpy column (no copy, no Python per event), event names are
an Arrow dictionary over the trace's string table (the event's name id is the index, so DuckDB
groups by name on integer codes), and stats a plane's event metadata carries (an op's category,
FLOPs, program) are dictionaries indexed by the event's metadata row: no value is gathered per
event unless the events carry the stat themselves. Columns a query does not name are not built.
Perfetto splits its trace the same way (`slice`, `track`, `args`, `flow`, `counter` tables; https://perfetto.dev/docs/analysis/
sql-tables).

The analysis tables (`ops`, `steps`, `findings`, `metrics`, `memory_*`) hold the records the CLI's `--json`
prints, from the same `TraceAnalysis` results, so a query and a command never disagree.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from tpuscope.analysis.results import Result, ResultSource
from tpuscope.analysis.trace_results import STEPS
from tpuscope.model.records import record
from tpuscope.model.trace import Trace, Track
from tpuscope.model.vocabulary import Stat, TrackKind

if TYPE_CHECKING:  # the analyses are imported when a table of theirs is built: `events` needs none
    from tpuscope.analysis.session import TraceAnalysis
    from tpuscope.analysis.steps import Steps


@record(frozen=True)
class Column:
    name: str
    type: pa.DataType
    meaning: str


@record(frozen=True)
class TableSpec:
    name: str
    meaning: str
    columns: tuple[Column, ...]
    build: Callable[[TraceAnalysis], pa.Table]

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.type) for c in self.columns])


_NAMES = pa.dictionary(pa.int32(), pa.string())
_STR_BY_ROW = pa.dictionary(pa.int32(), pa.string())
_F64_BY_ROW = pa.dictionary(pa.int32(), pa.float64())
_I64_BY_ROW = pa.dictionary(pa.int32(), pa.int64())
_U64_BY_ROW = pa.dictionary(pa.int32(), pa.uint64())
_VALUE_DTYPES: dict[str, Any] = {"int": np.int64, "uint": np.uint64, "float": np.float64, "str": np.int64}
_ARROW_VALUES = {"int": pa.int64(), "uint": pa.uint64(), "float": pa.float64()}

# The per-event stat columns: (column, neutral stat, Arrow value type, meaning).
EVENT_STATS: tuple[tuple[str, str, str, str], ...] = (
    ("program_id", Stat.PROGRAM_ID, "uint", "the compiled program the event belongs to (its id)"),
    ("program", Stat.PROGRAM_NAME, "str", "that program's name, where the event says it"),
    ("hlo_op", Stat.OP_TEXT, "str", "the HLO op's text or name, when the event name is something else"),
    ("category", Stat.OP_CATEGORY, "str", "the op's category (convolution, fusion, gemm, nccl...)"),
    ("framework_op", Stat.FRAMEWORK_OP, "str", "the framework op the op came from"),
    ("source", Stat.SOURCE, "str", "the op's source line, file:line, when the runtime wrote it"),
    ("flops", Stat.FLOPS, "float", "FLOPs of one occurrence"),
    ("bytes_accessed", Stat.BYTES_ACCESSED, "float", "bytes accessed by one occurrence"),
    ("device_dur_ps", Stat.DEVICE_DURATION_PS, "int", "duration on the device's own clock (ps)"),
)


class TraceColumns:
    """The events of every track as Arrow columns of one chunk per track, each built when first asked.

    A chunk is the track's own numpy column where its type allows (zero-copy, so a column no query
    reads is never touched: DuckDB reads only the columns a query names); names and metadata stats
    are dictionaries whose indices are the track's name ids and metadata rows. `table(needed)` holds
    the built columns and typed nulls for the rest, so a query that names only `name` and `dur_ps`
    costs neither the ids nor the step of every event.
    """

    def __init__(self, trace: Trace, steps: Callable[[], Steps]):
        self.trace = trace
        self._steps = steps  # the trace's steps, found only when a query names `step`
        self.tracks: list[Track] = self.trace.track_list()
        lengths = np.fromiter((len(t) for t in self.tracks), np.int64, len(self.tracks))
        self.offsets = np.zeros(len(self.tracks) + 1, np.int64)
        np.cumsum(lengths, out=self.offsets[1:])
        self.lengths = lengths
        self._strings: pa.Array | None = None
        self._built: dict[str, pa.ChunkedArray] = {}
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        return int(self.offsets[-1])

    def strings(self) -> pa.Array:
        """The trace's string table as one Arrow array: the dictionary of every name column."""
        if self._strings is None:
            self._strings = pa.array(self.trace.strings.as_list(), pa.string())
        return self._strings

    def table(self, needed: set[str] | None = None) -> pa.Table:
        """The events table with the `needed` columns (None: all) built, typed nulls elsewhere."""
        spec = TABLES["events"]
        with self._lock:
            for column in spec.columns:
                if (needed is None or column.name in needed) and column.name not in self._built:
                    self._built[column.name] = self._build(column.name)
            arrays = [self._built.get(c.name) or self._nulls(c) for c in spec.columns]
        return pa.Table.from_arrays(arrays, names=[c.name for c in spec.columns])

    def built(self) -> set[str]:
        return set(self._built)

    def _chunked(self, chunks: list[pa.Array], arrow_type: pa.DataType) -> pa.ChunkedArray:
        return pa.chunked_array(chunks, arrow_type) if chunks else pa.chunked_array([], arrow_type)

    def _nulls(self, column: Column) -> pa.ChunkedArray:
        """A column no query has named: untyped nulls, which cost no memory. A query that names it
        re-registers the table with the column built, so its type is never seen unbuilt."""
        return pa.chunked_array([pa.nulls(self.count)], pa.null())

    def _type_of(self, column: Column) -> pa.DataType:
        stat = _STAT_OF.get(column.name)
        if stat is not None and any(stat[0] in t.stats for t in self.tracks):
            return _ARROW_VALUES[stat[1]] if stat[1] != "str" else _NAMES
        return column.type

    def _build(self, name: str) -> pa.ChunkedArray:
        tracks = self.tracks
        if name == "id":
            chunks = [pa.array(np.arange(self.offsets[k], self.offsets[k + 1], dtype=np.int64))
                      for k in range(len(tracks))]  # fmt: skip
            return self._chunked(chunks, pa.int64())
        if name == "track_id":
            return self._chunked(
                [pa.array(np.full(len(t), k, np.int32)) for k, t in enumerate(tracks)], pa.int32()
            )
        if name in ("ts_ps", "dur_ps"):
            get = (lambda t: t.start_ps) if name == "ts_ps" else (lambda t: t.duration_ps)
            return self._chunked([pa.array(get(t).astype(np.int64, copy=False)) for t in tracks], pa.int64())
        if name == "depth":
            return self._chunked([pa.array(t.depth.astype(np.int16, copy=False)) for t in tracks], pa.int16())
        if name == "parent_id":
            chunks = []
            for k, t in enumerate(tracks):
                parent = parent_indices(t)
                chunks.append(pa.array(parent + self.offsets[k], mask=parent < 0))
            return self._chunked(chunks, pa.int64())
        if name == "name":
            strings = self.strings()
            chunks = [_dictionary(t.name_id, strings) for t in tracks]
            return self._chunked(chunks, _NAMES)
        if name == "step":
            return self._step()
        stat, kind = _STAT_OF[name]
        return self._stat(stat, kind, self._type_of(TABLES["events"].column(name)))

    def _step(self) -> pa.ChunkedArray:
        steps = self._steps()
        numbers = pa.array(np.concatenate([[0], steps.number]).astype(np.int64),
                           mask=np.arange(len(steps) + 1) == 0)  # fmt: skip
        chunks = []
        for t in self.tracks:
            position = steps.step_of(t.start_ps) if len(steps) else np.full(len(t), -1, np.int64)
            chunks.append(pa.DictionaryArray.from_arrays(pa.array((position + 1).astype(np.int32)), numbers,
                                                         safe=False))  # fmt: skip
        return self._chunked(chunks, _I64_BY_ROW)

    def _stat(self, stat: str, kind: str, arrow_type: pa.DataType) -> pa.ChunkedArray:
        by_plane: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}
        own_values = any(stat in t.stats for t in self.tracks)
        chunks = []
        for t in self.tracks:
            key = id(t.plane)
            if key not in by_plane:
                by_plane[key] = _metadata_values(t.plane.metadata, stat, kind)
            meta = by_plane[key]
            rows = t.meta_index
            if meta is not None and len(t) and (int(rows.min()) < 0 or int(rows.max()) >= len(meta[0])):
                meta = None  # rows outside the plane's metadata: no value from it
            if own_values:
                chunks.append(self._own_chunk(t, stat, kind, meta, arrow_type))
            elif meta is None:
                chunks.append(pa.nulls(len(t), arrow_type))
            else:
                chunks.append(
                    pa.DictionaryArray.from_arrays(
                        pa.array(rows.astype(np.int32, copy=False)), self._dictionary(meta, kind), safe=False
                    )
                )
        return self._chunked(chunks, arrow_type)

    def _dictionary(self, meta: tuple[np.ndarray, np.ndarray], kind: str) -> pa.Array:
        values, present = meta
        if kind == "str":
            strings = self.trace.strings
            return pa.array([strings[int(v)] if p else None for v, p in zip(values, present, strict=True)],
                            pa.string())  # fmt: skip
        return pa.array(values, _ARROW_VALUES[kind], mask=~present)

    def _own_chunk(self, t: Track, stat: str, kind: str, meta, arrow_type: pa.DataType) -> pa.Array:
        """A stat some events carry themselves: the event's own value over its metadata's."""
        n = len(t)
        if meta is not None:
            values, present = meta[0][t.meta_index], meta[1][t.meta_index]
        else:
            values, present = np.zeros(n, _VALUE_DTYPES[kind]), np.zeros(n, bool)
        column = t.stats.column(stat)
        if column is not None and column.kind != "bytes" and n:
            own = column.present(n)
            values = values.copy()
            values[own] = column.dense(n, 0)[own].astype(values.dtype)
            present = present | own
        if kind == "str":
            indices = pa.array(np.where(present, values, 0).astype(np.int32), pa.int32(), mask=~present)
            return pa.DictionaryArray.from_arrays(indices, self.strings(), safe=False)
        return pa.array(values, arrow_type, mask=~present)


def parent_indices(track: Track) -> np.ndarray:
    """Each event's parent on its track (-1 for none): the last event one level up before it, when it
    contains the event (events are in start order, ties longer first, so no earlier one can). Stacked
    rows of overlapping async events are levels that do not nest: there an event has no parent."""
    depth = track.depth
    parent = np.full(len(depth), -1, np.int64)
    order = np.argsort(depth, kind="stable")  # each level's events in track order, levels in turn
    levels = np.searchsorted(depth[order], np.arange(int(depth.max()) + 2 if len(depth) else 0))
    for d in range(1, len(levels) - 1):
        parents, kids = order[levels[d - 1] : levels[d]], order[levels[d] : levels[d + 1]]
        if not len(parents) or not len(kids):
            continue
        owner = np.searchsorted(parents, kids) - 1
        kids, owners = kids[owner >= 0], parents[owner[owner >= 0]]
        contains = track.end_ps[owners] >= track.end_ps[kids]  # (it starts no later, by the order)
        parent[kids[contains]] = owners[contains]
    return parent


def _dictionary(indices: np.ndarray, values: pa.Array) -> pa.DictionaryArray:
    """Indices (valid by construction: string ids, metadata rows) over `values`, without a check pass."""
    return pa.DictionaryArray.from_arrays(pa.array(indices.astype(np.int32, copy=False)), values, safe=False)


def _metadata_values(metadata: Any, stat: str, kind: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(values, present) of `stat` per metadata row (string ids for text); None when no row has it."""
    column = metadata.stats.column(stat)
    if column is None or column.kind == "bytes" or not len(metadata):
        return None
    n = len(metadata)
    return column.dense(n, 0).astype(_VALUE_DTYPES[kind], copy=False), column.present(n)


def _columns(analysis: TraceAnalysis) -> TraceColumns:
    return analysis.get(TRACE_COLUMNS)


def _build_events(analysis: TraceAnalysis) -> pa.Table:
    return _columns(analysis).table()


def _build_tracks(analysis: TraceAnalysis) -> pa.Table:
    cols = _columns(analysis)
    t = cols.tracks
    return _table(
        "tracks",
        {
            "id": pa.array(np.arange(len(t), dtype=np.int32)),
            "host": pa.array([x.plane.host for x in t], pa.string()),
            "plane": pa.array([x.plane.name for x in t], pa.string()),
            "line": pa.array([x.name for x in t], pa.string()),
            "display_name": pa.array([x.display_name for x in t], pa.string()),
            "kind": pa.array([TrackKind(x.kind).name.lower() for x in t], pa.string()),
            "role": pa.array([x.plane.role for x in t], pa.string()),
            "device_kind": pa.array([x.plane.kind for x in t], pa.string()),
            "device_index": pa.array([x.plane.index for x in t], pa.int32()),
            "events": pa.array(cols.lengths),
        },
    )


def _build_args(analysis: TraceAnalysis) -> pa.Table:
    cols = _columns(analysis)
    keys: list[str] = []
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("event", "key", "int", "real", "str", "kind")}
    for k, track in enumerate(cols.tracks):
        n = len(track)
        if n == 0:
            continue
        for name, column in track.stats.columns.items():
            if column.kind == "bytes":
                continue
            rows = np.arange(n, dtype=np.int64) if column.rows is None else column.rows.astype(np.int64)
            if name not in keys:
                keys.append(name)
            count = len(rows)
            parts["event"].append(rows + cols.offsets[k])
            parts["key"].append(np.full(count, keys.index(name), np.int32))
            kind = {"int": 0, "uint": 0, "float": 1, "str": 2}[column.kind]
            parts["kind"].append(np.full(count, kind, np.int8))
            v = column.values
            parts["int"].append(v.astype(np.int64) if kind == 0 else np.zeros(count, np.int64))
            parts["real"].append(v.astype(np.float64) if kind == 1 else np.zeros(count, np.float64))
            parts["str"].append(v.astype(np.int32) if kind == 2 else np.zeros(count, np.int32))

    def cat(name: str, dtype: Any) -> np.ndarray:
        return np.concatenate(parts[name]).astype(dtype, copy=False) if parts[name] else np.empty(0, dtype)

    kinds = cat("kind", np.int8)
    return _table(
        "args",
        {
            "event_id": pa.array(cat("event", np.int64)),
            "key": pa.DictionaryArray.from_arrays(
                pa.array(cat("key", np.int32)), pa.array(keys, pa.string())
            ),
            "int_value": pa.array(cat("int", np.int64), mask=kinds != 0),
            "real_value": pa.array(cat("real", np.float64), mask=kinds != 1),
            "string_value": pa.DictionaryArray.from_arrays(
                pa.array(cat("str", np.int32), mask=kinds != 2), cols.strings()
            ),
        },
    )


def _build_flows(analysis: TraceAnalysis) -> pa.Table:
    cols = _columns(analysis)
    flows = analysis.trace.flows
    source = cols.offsets[flows.source_track.astype(np.int64)] + flows.source_event.astype(np.int64)
    target = cols.offsets[flows.target_track.astype(np.int64)] + flows.target_event.astype(np.int64)
    return _table(
        "flows",
        {
            "id": pa.array(np.arange(len(flows), dtype=np.int64)),
            "source_id": pa.array(source.astype(np.int64)),
            "target_id": pa.array(target.astype(np.int64)),
            "category": pa.DictionaryArray.from_arrays(
                pa.array(flows.category.astype(np.int32)), cols.strings()
            ),
        },
    )


def _build_counters(analysis: TraceAnalysis) -> pa.Table:
    from tpuscope.analysis.memory.report import ALLOCATORS

    allocators = analysis.get(ALLOCATORS)
    hosts = [a.host for a in allocators for _ in range(a.samples)]
    names = [f"memory in use, allocator {a.id}" for a in allocators for _ in range(a.samples)]

    def cat(field: str) -> np.ndarray:
        found = [np.asarray(getattr(a, field), np.int64) for a in allocators]
        return np.concatenate(found) if found else np.empty(0, np.int64)

    return _table(
        "counters",
        {
            "name": pa.array(names, pa.string()),
            "host": pa.array(hosts, pa.string()),
            "ts_ps": pa.array(cat("time_ps")),
            "value": pa.array(cat("in_use").astype(np.float64)),
            "unit": pa.array(["bytes"] * len(hosts), pa.string()),
        },
    )


def _build_ops(analysis: TraceAnalysis) -> pa.Table:
    return _records("ops", ops_records(analysis))


def ops_records(analysis: TraceAnalysis, by: str = "op", device: str | int = "all") -> list[dict]:
    """The rows `tpuscope ops --json` prints (empty when the profile has no device ops)."""
    from tpuscope.analysis.programs import PROGRAM_CODE

    if not analysis.chosen_devices(device):
        return []
    table = analysis.op_table(by, device)
    if table is None:
        return []
    return table.rows_json(None, code=analysis.get(PROGRAM_CODE) if by == "op" else None)


def steps_records(analysis: TraceAnalysis, device: str | int = "all") -> list[dict]:
    """The step rows of `tpuscope ops --json` (`steps.rows`), each with its times in ps too."""
    breakdown = analysis.step_breakdown(device) if analysis.chosen_devices(device) else None
    if breakdown is None:
        return []
    rows = breakdown.to_json()["rows"]
    for row, start, dur in zip(rows, breakdown.start_ps, breakdown.duration_ps, strict=True):
        row["ts_ps"] = int(start)
        row["dur_ps"] = int(dur)
    return rows


def _build_steps(analysis: TraceAnalysis) -> pa.Table:
    return _records("steps", steps_records(analysis))


def _build_findings(analysis: TraceAnalysis) -> pa.Table:
    return _records("findings", analysis.report.to_json()["findings"])


def _build_metrics(analysis: TraceAnalysis) -> pa.Table:
    from tpuscope.analysis.metrics import METRICS

    return _records("metrics", analysis.get(METRICS).to_json())


def _build_memory_allocations(analysis: TraceAnalysis) -> pa.Table:
    from tpuscope.analysis.memory.report import MEMORY_REPORT

    report = analysis.get(MEMORY_REPORT).to_json()
    rows = [
        {"host": a["host"], "allocator": a["id"], **live}
        for a in report["allocators"]
        for live in a["live_at_peak"]
    ]
    return _records("memory_allocations", rows)


def _build_memory_buffers(analysis: TraceAnalysis) -> pa.Table:
    from tpuscope.analysis.memory.report import MEMORY_REPORT

    report = analysis.get(MEMORY_REPORT).to_json()
    rows = [
        {"program": p["name"], "program_id": p["program_id"], "memory_space": p["memory_space_name"], **b}
        for p in report["programs"]
        for b in p["buffers_at_peak"]
    ]
    return _records("memory_buffers", rows)


def _table(name: str, arrays: dict[str, pa.Array]) -> pa.Table:
    """The arrays in the spec's column order; a stat column is a dictionary or plain values, whichever
    its data made (both read as the same SQL type)."""
    spec = TABLES[name]
    return pa.Table.from_arrays([arrays[c.name] for c in spec.columns], names=[c.name for c in spec.columns])


def _records(name: str, rows: list[dict]) -> pa.Table:
    """JSON records as a table of the spec's columns; untyped lists and objects become JSON text."""
    spec = TABLES[name]
    columns = []
    for column in spec.columns:
        values = [row.get(column.name) for row in rows]
        if pa.types.is_string(column.type):
            values = [v if v is None or isinstance(v, str) else json.dumps(v) for v in values]
        columns.append(pa.array(values, column.type))
    return pa.Table.from_arrays(columns, schema=spec.schema())


def _c(name: str, arrow_type: pa.DataType, meaning: str) -> Column:
    return Column(name, arrow_type, meaning)


_STAT_OF = {column: (stat, kind) for column, stat, kind, _ in EVENT_STATS}
_STAT_TYPES = {"int": _I64_BY_ROW, "uint": _U64_BY_ROW, "str": _STR_BY_ROW, "float": _F64_BY_ROW}
_I64, _F64, _STR, _I32 = pa.int64(), pa.float64(), pa.string(), pa.int32()

TABLES: dict[str, TableSpec] = {
    spec.name: spec
    for spec in (
        TableSpec(
            "events",
            "one row per event of every track",
            (
                _c("id", _I64, "the event's id (args.event_id and flows refer to it)"),
                _c("track_id", _I32, "its track (tracks.id)"),
                _c("ts_ps", _I64, "start, picoseconds from the trace start"),
                _c("dur_ps", _I64, "duration in picoseconds"),
                _c("name", _NAMES, "the event's name as the file writes it"),
                _c("depth", pa.int16(), "nesting depth on its track (0: outermost)"),
                _c("parent_id", _I64, "the event one level up that contains it (events.id), else null"),
                *(_c(col, _STAT_TYPES[kind], meaning) for col, _, kind, meaning in EVENT_STATS),
                _c(
                    "step",
                    _I64_BY_ROW,
                    "the step number the event starts in (steps.step), null outside steps",
                ),
            ),
            _build_events,
        ),
        TableSpec(
            "tracks",
            "one row per track (an XPlane line, a thread, a GPU stream)",
            (
                _c("id", _I32, "the track's id (events.track_id)"),
                _c("host", _STR, "the host the track was recorded on"),
                _c("plane", _STR, "its plane as the file names it (/device:TPU:0, /host:CPU)"),
                _c("line", _STR, "the line (thread, stream) as the file names it"),
                _c("display_name", _STR, "the line's display name"),
                _c("kind", _STR, "what its events are: device_ops, device_steps, host_thread, ..."),
                _c("role", _STR, "device, host or other"),
                _c("device_kind", _STR, "TPU, GPU, CPU, ... of its plane"),
                _c("device_index", _I32, "the device's number, when a device"),
                _c("events", _I64, "its number of events"),
            ),
            _build_tracks,
        ),
        TableSpec(
            "args",
            "the events' own stats, one row per (event, stat); stats of op metadata are columns of events",
            (
                _c("event_id", _I64, "the event (events.id)"),
                _c("key", _STR_BY_ROW, "the stat's name"),
                _c("int_value", _I64, "its value when an integer"),
                _c("real_value", _F64, "its value when a real number"),
                _c("string_value", _NAMES, "its value when text"),
            ),
            _build_args,
        ),
        TableSpec(
            "flows",
            "arrows between events (a host launch to the kernel it launched)",
            (
                _c("id", _I64, "the flow's number"),
                _c("source_id", _I64, "the event it starts at (events.id)"),
                _c("target_id", _I64, "the event it ends at (events.id)"),
                _c("category", _NAMES, "its category (Kineto's ac2g, ...)"),
            ),
            _build_flows,
        ),
        TableSpec(
            "counters",
            "sampled values over time: memory in use per allocator",
            (
                _c("name", _STR, "the counter"),
                _c("host", _STR, "its host"),
                _c("ts_ps", _I64, "the sample's time, picoseconds from the trace start"),
                _c("value", _F64, "the value"),
                _c("unit", _STR, "its unit"),
            ),
            _build_counters,
        ),
        TableSpec(
            "ops",
            "device time per HLO op: the rows of `tpuscope ops --json`",
            (
                _c("name", _STR, "the op"),
                _c("category", _STR, "its category"),
                _c("program", _STR, "its program"),
                _c("occurrences", _I64, "how often it ran"),
                _c("total_time_us", _F64, "total time (us), nested ops included"),
                _c("avg_time_us", _F64, "average time per occurrence (us)"),
                _c("self_time_us", _F64, "time not covered by nested ops (us)"),
                _c("percent", _F64, "share of all ops' self time (%)"),
                _c("cumulative_percent", _F64, "running share, largest first (%)"),
                _c("flops", _F64, "FLOPs of all occurrences"),
                _c("flop_rate_gflops", _F64, "GFLOP/s over self time"),
                _c("bytes_accessed", _F64, "bytes accessed by all occurrences"),
                _c("bandwidth_gbps", _F64, "GB/s over self time"),
                _c("operational_intensity", _F64, "FLOPs per byte"),
                _c("bound_by", _STR, "compute or memory, on the chip's roofline"),
                _c("program_id", pa.uint64(), "its program's id"),
                _c("framework_op", _STR, "the framework op it came from"),
                _c("hlo_text", _STR, "its HLO text"),
                _c("source", _STR, "its source line, file:line"),
                _c("stack", pa.list_(_STR), "its stack, file:line:column, innermost first"),
            ),
            _build_ops,
        ),
        TableSpec(
            "steps",
            "busy and idle device time per step: the step rows of `tpuscope ops --json`",
            (
                _c("step", _I64, "the step number"),
                _c("start_us", _F64, "start (us from the trace start)"),
                _c("duration_us", _F64, "duration (us)"),
                _c("busy_us", _F64, "device busy time inside it (us)"),
                _c("idle_us", _F64, "device idle time inside it (us)"),
                _c("ts_ps", _I64, "start in picoseconds (joins events.ts_ps)"),
                _c("dur_ps", _I64, "duration in picoseconds"),
            ),
            _build_steps,
        ),
        TableSpec(
            "findings",
            "integration problems: the findings of `tpuscope diagnose --json`",
            (
                _c("id", _STR, "the rule"),
                _c("severity", _STR, "critical, warning or info"),
                _c("title", _STR, "one line"),
                _c(
                    "impact",
                    pa.struct(
                        [
                            ("percent_of_step_time", _F64),
                            ("ms_per_step", _F64),
                            ("bytes", _I64),
                            ("percent_of_capacity", _F64),
                            ("basis", _STR),
                        ]
                    ),  # fmt: skip
                    "what it costs (impact.percent_of_step_time, .ms_per_step, .bytes, ...)",
                ),
                _c("impact_note", _STR, "why the cost is unknown, when it is"),
                _c("explanation", _STR, "the explanation with its numbers"),
                _c("metrics", _STR, "its numbers, JSON text"),
                _c("evidence", _STR, "the events behind it, JSON text"),
                _c("advice", pa.list_(_STR), "what to do"),
            ),
            _build_findings,
        ),
        TableSpec(
            "metrics",
            "the headline metrics: the records of `tpuscope metrics --json`",
            (
                _c("name", _STR, "the metric (step_time_mean, duty_cycle, input_share, ...)"),
                _c("value", _F64, "its value in `unit`, null when it does not apply"),
                _c("unit", _STR, "us, fraction (0..1), percent (0..100) or bytes"),
                _c("definition", _STR, "what it measures, in one line"),
                _c("scope", _STR, "what it covers: profile, steps, host, device or pod"),
                _c("reason", _STR, "why the value is null, when it is"),
                _c("host", _STR, "the host a host-scope row describes"),
                _c("over", _STR, "what a pod value is the mean of"),
            ),
            _build_metrics,
        ),
        TableSpec(
            "memory_allocations",
            "allocations live at each allocator's peak: `tpuscope memory --json` allocators[].live_at_peak",
            (
                _c("host", _STR, "the allocator's host"),
                _c("allocator", _STR, "the allocator (a device number, GPU_0_bfc)"),
                _c("bytes", _I64, "bytes allocated"),
                _c("requested_bytes", _I64, "bytes requested"),
                _c("op", _STR, "the op that allocated it"),
                _c("shape", _STR, "its shape"),
                _c("address", _I64, "its address"),
                _c("allocated_at_ps", _I64, "when it was allocated (ps from the trace start)"),
            ),
            _build_memory_allocations,
        ),
        TableSpec(
            "memory_buffers",
            "buffers live at each program's peak: `tpuscope memory --json` programs[].buffers_at_peak",
            (
                _c("program", _STR, "the program (jit_f(123))"),
                _c("program_id", pa.uint64(), "its id"),
                _c("memory_space", _STR, "the memory space"),
                _c("name", _STR, "the buffer, with its shape index"),
                _c("bytes", _I64, "its size"),
                _c("unpadded_bytes", _I64, "its size without tile padding"),
                _c("shape", _STR, "its shape with layout"),
                _c("defined_by", _STR, "the HLO instruction that defines it"),
                _c("category", _STR, "parameter, output, temporary, ..."),
                _c("op_code", _STR, "that instruction's opcode"),
                _c("framework_op", _STR, "the framework op it came from"),
                _c("buffer_id", _I64, "the buffer's id in the assignment"),
            ),
            _build_memory_buffers,
        ),
    )
}


def _trace_columns(analysis: ResultSource) -> TraceColumns:
    return TraceColumns(analysis.trace, lambda: analysis.get(STEPS))


TRACE_COLUMNS: Result[TraceColumns] = Result("query_trace_columns", _trace_columns)
