"""Op-level breakdown: where device time goes, by HLO op, category, program, framework op or source line.

Per event, columns are gathered once (`collect_op_events`) and then grouped with numpy
(`aggregate`), so a table of any grouping costs one `np.unique` and a few `np.bincount`s.

Times agree with XProf's hlo_stats tool on purpose:
- An op's time is its `device_duration_ps` stat (the device's own clock) where present, as XProf
  adds up; the event's host-aligned duration differs by up to ~15% per op on the v6e profile.
  Timeline positions and busy intervals still use the host-aligned times, which is what the
  timeline draws.
- Self time = time not covered by nested ops on the same line, nesting judged on those same
  device times (`device_offset_ps` + `device_duration_ps`).
- Ops are identified by (program, op name): `fusion.3` of two programs are two rows, as in XProf.
- By source line, each op's line is its code's (`tpuscope.analysis.op_source`): every event of an
  op is on that line or in `(no source)`, so the lines' self times add up to the ops' exactly. Where
  events name their own lines (a PyTorch kernel's is the line of the CPU op that launched it, and
  one kernel runs for many lines), each event counts on its own line.
- "percent" is the share of all ops' total self time (XProf's "Total self time (%)"), which is
  the share of device busy time when ops do not overlap (one TPU core, one GPU stream); when
  ops run in parallel (several GPU streams, CPU thunks on several threads) busy time is smaller
  than the sum, and `OpTable.busy_ps` reports the union.
Where we differ from XProf: for CPU-only runs XProf lists no device ops at all; here XLA:CPU thunks
are the ops. GPU kernels without an `hlo_op` stat (driver copies) are kept, named by the kernel.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

import numpy as np

from tpuscope.analysis.async_ops import is_async_half
from tpuscope.analysis.bound_codes import BOUND_NAMES, BOUND_UNKNOWN
from tpuscope.analysis.device_ops import Device, busy_intervals, find_devices, select_devices
from tpuscope.model import id_columns, order_statistics
from tpuscope.model.records import record
from tpuscope.model.strings import StringTable
from tpuscope.model.trace import Trace, Track
from tpuscope.model.vocabulary import Stat, TrackKind

if TYPE_CHECKING:  # the code behind ops (and its records) loads where a grouping or a view reads it
    from tpuscope.analysis.op_source import OpCode, OpDetails
    from tpuscope.analysis.roofline import Peaks
    from tpuscope.model.code import ProgramCode

GROUPINGS = ("op", "category", "program", "framework", "source")
NO_LABEL = "(none)"
NO_SOURCE = "(no source)"  # the row of ops without a source line, by source
CODE_GROUPINGS = ("framework", "source")  # the groupings that read the programs' code

_OPCODE = re.compile(r" = .*? ([a-z][a-z0-9-]*)\(")  # "%x = f32[2]{0} add(...)" -> "add"
_NUMBER_SUFFIX = re.compile(r"(\.\d+|\.clone)+$")  # "fusion.3.clone" -> "fusion"
# Value ranges up to this size are mapped through a dense lookup table (4 MiB of int32 at most).
DENSE_RANGE_LIMIT = 1 << 20


def short_op_name(text: str) -> str:
    """HLO op name from an event name: `%fusion.3 = f32[...] fusion(...)` -> `fusion.3`."""
    head = text.split(" = ", 1)[0] if " = " in text else text
    return head.lstrip("%").strip()


def derived_category(text: str) -> str:
    """HLO category from op text or name, for ops without an `hlo_category` stat.

    Uses the opcode of full HLO text; else the op name without its `.N` suffix, with fusions
    named by kind as XLA names them (`loop_convert_fusion` -> `loop fusion`).
    """
    m = _OPCODE.search(text)
    base = m.group(1) if m else _NUMBER_SUFFIX.sub("", short_op_name(text))
    if base.endswith(".kd"):  # AMD kernel object suffix
        base = base[:-3]
    if base.endswith("fusion") or base.startswith("gemm_fusion"):
        for kind in ("loop", "input", "output", "gemm"):
            if base.startswith(kind + "_"):
                return f"{kind} fusion"
        return "fusion"
    if base.startswith("wrapped_"):
        return base[len("wrapped_") :]
    if "copybuffer" in base.lower() or "memcpy" in base.lower():
        return "memcpy"
    return base


class _Labels:
    """A small local interner for the labels of one breakdown (op names, categories, ...).

    Kept apart from the trace's string table so analysis never mutates a loaded trace. Tables
    grouped by source or framework op add their labels to the shared events' interner, possibly
    from several worker threads at once: adding takes a lock.
    """

    def __init__(self) -> None:
        self.texts: list[str] = [NO_LABEL]
        self._index: dict[str, int] = {NO_LABEL: 0}
        self._lock = threading.Lock()

    def add(self, text: str) -> int:
        found = self._index.get(text)
        if found is None:
            with self._lock:
                found = self._index.get(text)
                if found is None:
                    found = len(self.texts)
                    self.texts.append(text)
                    self._index[text] = found
        return found

    def map_ids(self, values: np.ndarray, to_text) -> np.ndarray:
        """Label ids for integer `values`, calling `to_text` once per distinct value (ascending)."""
        distinct = _Distinct(values)
        return distinct.spread(self.add_each(distinct.values, to_text))

    def map_column(self, values: np.ndarray | None, to_text) -> np.ndarray | int:
        """`map_ids` of a stat column, where None (no item has the stat: all read 0) is one label id."""
        return self.add(to_text(0) or NO_LABEL) if values is None else self.map_ids(values, to_text)

    def add_each(self, values: np.ndarray, to_text) -> np.ndarray:
        """The label id of `to_text(v)` (NO_LABEL when empty) for each of `values`, in their order."""
        return np.fromiter((self.add(to_text(int(v)) or NO_LABEL) for v in values), np.int32, len(values))


class _Distinct:
    """The distinct values of an integer column (ascending), and each item's place among them.

    Ids into the string table span a bounded range, so the distinct values come from one bincount
    and are spread back through a lookup table, instead of sorting every event (np.unique's argsort).
    Non-negative ids index that table as they are, counted and looked up a slice at a time
    (`tpuscope.model.id_columns`): no 64-bit copy of the column is made."""

    def __init__(self, values: np.ndarray):
        self.items = values
        self.low: int | None = None  # what an item's value less is its place in the lookup table
        if len(values) == 0:
            self.values, self.code = np.empty(0, np.int64), np.empty(0, np.int64)
            return
        low, high = int(values.min()), int(values.max())
        dense = max(8 * len(values), DENSE_RANGE_LIMIT)
        if 0 <= low and high <= dense:  # the values are the table's places
            self.low, self.size, self.code = 0, high + 1, values
            self.values = id_columns.distinct(values)
        elif high - low <= dense:
            self.low, self.size = low, high - low + 1
            self.code = np.subtract(values, low, dtype=np.int64)  # the value's place in the range
            self.values = np.flatnonzero(np.bincount(self.code)) + low
        else:
            self.values, inverse = np.unique(values, return_inverse=True)
            self.code = inverse.reshape(-1)  # the value's place among the distinct ones

    def spread(self, per_value: np.ndarray) -> np.ndarray:
        """Per item, the entry of `per_value` (one per distinct value) of its value."""
        return self.gather(per_value).into(np.empty(len(self.items), per_value.dtype))

    def gather(self, per_value: np.ndarray) -> _Gather:
        """`spread(per_value)`, to be written where it is kept (`_Gather.into`)."""
        if self.low is None:
            return _Gather(per_value, self.code)
        lookup = np.zeros(self.size, per_value.dtype)
        lookup[self.values - self.low] = per_value
        return _Gather(lookup, self.code)


class _Gather:
    """Per item, `table[places[i]]`: a column of few distinct values, written straight into the
    column that keeps it (no copy of it made first and then copied). A plain class: a dataclass
    costs every command that imports this module ~0.5 ms to define."""

    def __init__(self, table: np.ndarray, places: np.ndarray):
        self.table = table
        self.places = places  # per item, non-negative, below len(table)

    def __len__(self) -> int:
        return len(self.places)

    def into(self, out: np.ndarray, of_event: np.ndarray | None = None) -> np.ndarray:
        """Writes the items' values into `out` (one per item, or per event: `of_event` is each event's
        item) and returns it."""
        if of_event is None:
            return id_columns.take(self.table, self.places, out)
        per_item = self.table[self.places].astype(out.dtype, copy=False)
        return np.take(per_item, of_event, out=out, mode="clip")


@record
class OpEvents:
    """Every op event of some devices as parallel columns (one entry per event)."""

    devices: list[Device]
    labels: _Labels
    device: np.ndarray  # position in `devices`
    op: np.ndarray  # label ids
    category: np.ndarray
    program: np.ndarray
    framework: np.ndarray
    time_ps: np.ndarray  # int64: device duration where recorded, else event duration
    self_ps: np.ndarray  # int64
    flops: np.ndarray  # float64 per occurrence, NaN unknown (read-only where all are unknown)
    bytes_accessed: np.ndarray  # float64 per occurrence, NaN unknown (read-only where all are unknown)
    segments: list[tuple[Track, np.ndarray, int]] = field(default_factory=list)  # (track, indices, offset)
    # For each op's code (tpuscope.analysis.op_source): its program id, and trace string ids (0: none)
    # of its full text and of the source line and stack the event itself carries.
    program_id: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    text: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    source: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    stack: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    strings: StringTable | None = None

    def __len__(self) -> int:
        return len(self.op)

    def events_at(self, rows: np.ndarray) -> list[tuple[Track, np.ndarray]]:
        """The (track, event indices) pairs of the events at `rows` (ascending), as `events_of` gives
        them for a mask selecting those rows."""
        found = []
        ends = np.searchsorted(rows, [offset + len(indices) for _, indices, offset in self.segments])
        begin = 0
        for (track, indices, offset), end in zip(self.segments, ends, strict=True):
            if end > begin:
                found.append((track, np.sort(indices[rows[begin:end] - offset])))
            begin = end
        return found

    def events_of(self, mask: np.ndarray) -> list[tuple[Track, np.ndarray]]:
        """The (track, event indices) pairs of the events selected by a boolean mask over rows."""
        found = []
        for track, indices, offset in self.segments:
            chosen = indices[mask[offset : offset + len(indices)]]
            if len(chosen):
                found.append((track, np.sort(chosen)))
        return found


def parents_one_level_up(depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(children, parents): for each event below the top level (by position, events in start order),
    the last earlier event one level up, where there is one.

    All levels at once (a loop over levels was quadratic when events repeat or nest deep: 80,000
    identical ops nest 80,000 levels): the events sorted by (depth, position), and for each the
    entry just before its own key one level up."""
    n = len(depth)
    level = depth.astype(np.int64, copy=False)
    by_level = np.sort(level * n + np.arange(n))
    kids = np.flatnonzero(level > 0)
    slot = np.searchsorted(by_level, (level[kids] - 1) * n + kids) - 1
    found = slot >= 0
    found[found] = by_level[slot[found]] // n == level[kids[found]] - 1
    return kids[found], by_level[slot[found]] % n


def self_times(start_ps: np.ndarray, duration_ps: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Per-event time not covered by nested events of the same line (inputs in any order), written
    into `out` (int64, one per event) when given.

    Vectorized nesting: sorted by (start, longer first), an event's depth is the number of earlier
    events still open at its start (its enclosing ancestors when events nest properly). Each event's
    parent is the last earlier event one level up; children's overlap with it is subtracted.
    Zero-length events cover nothing and are left out of the nesting (their self time is 0).
    """
    start = np.asarray(start_ps, dtype=np.int64)
    duration = np.asarray(duration_ps, dtype=np.int64)
    has_length = duration > 0
    everyone = bool(has_length.all())
    if out is None:
        out = np.zeros(len(start), dtype=np.int64)
    elif not everyone:
        out[~has_length] = 0
    # The events with a length, by a slice when that is all of them (no copies of the columns).
    order: np.ndarray | slice = slice(None) if everyone else np.flatnonzero(has_length)
    s, d = start[order], duration[order]
    if len(s) == 0:
        return out
    in_order = (s[1:] > s[:-1]) | ((s[1:] == s[:-1]) & (d[1:] <= d[:-1]))
    if not in_order.all():  # lines come sorted by host time; device times nearly always agree
        positive = np.arange(len(start)) if everyone else np.flatnonzero(has_length)
        order = positive[np.lexsort((-d, s))]
        s, d = start[order], duration[order]
    e = s + d
    if not (e[:-1] > s[1:]).any():  # each ends before the next starts (a TPU's op line): none nests
        out[order] = d
        return out
    n = len(s)
    depth = np.arange(n) - np.searchsorted(np.sort(e), s, side="right")
    kids, parent = parents_one_level_up(depth)
    overlap = np.clip(np.minimum(e[kids], e[parent]) - s[kids], 0, None)
    covered = np.bincount(parent, weights=overlap, minlength=n).astype(np.int64)
    out[order] = np.maximum(d - covered, 0)
    return out


# The stats that say what an op is (its name, category, program, framework op, code, FLOPs and bytes):
# on XPlane's op lines they are the op's metadata's, the same for every occurrence.
_PER_OP_STATS = (
    Stat.OP_TEXT, Stat.OP_CATEGORY, Stat.FRAMEWORK_OP, Stat.NAME_SCOPE, Stat.PROGRAM_NAME,
    Stat.PROGRAM_ID, Stat.FLOPS, Stat.BYTES_ACCESSED, Stat.SOURCE, Stat.SOURCE_STACK,
)  # fmt: skip


class _EventStats:
    """The per-op stats of events `idx` of a track, one value per event; None where no event has the
    stat (every event reads 0, or NaN for floats). Values may be the stat columns' own storage: read
    them only."""

    def __init__(self, track: Track, idx: np.ndarray):
        self.track, self.idx = track, idx
        self._name_id: np.ndarray | None = None

    @property
    def name_id(self) -> np.ndarray:
        """The events' names (gathered when asked: most op events name their op by a stat)."""
        if self._name_id is None:
            self._name_id = self.track.name_id[self.idx]
        return self._name_id

    def strings(self, name: str) -> np.ndarray | None:
        values = self.track.stat_values_at(name, self.idx, fill=0)
        return None if values is None else values.astype(np.int32, copy=False)

    def floats(self, name: str) -> np.ndarray | None:
        values = self.track.stat_values_at(name, self.idx, fill=np.nan)
        return None if values is None else values.astype(np.float64, copy=False)

    def program_ids(self) -> np.ndarray | None:
        """The program ids: integers in the type the stat column stores them in (as uint64 they are
        `_as_uint64`'s), converted only where they are kept (the pid column), not copied first."""
        values = self.track.stat_values_at(Stat.PROGRAM_ID, self.idx, fill=0, widen=False)
        return values if values is None or values.dtype.kind in "iu" else _as_uint64(values)


def _as_uint64(values: np.ndarray | None) -> np.ndarray | None:
    """`values.astype(np.uint64)`; int64 by a view, the same bits without a copy."""
    if values is None:
        return None
    return values.view(np.uint64) if values.dtype == np.int64 else values.astype(np.uint64, copy=False)


class _OpStats(_EventStats):
    """The per-op stats of events `idx` of a track, one value per metadata row (op) they use, when
    no event carries one of its own and each metadata row names its events (XPlane's op lines):
    what an op is is then worked out once per op, not once per event, and `of_event` maps each
    event to its op. The values per op are those `_EventStats` gives each of its events."""

    def __init__(self, track: Track, idx: np.ndarray, rows: np.ndarray, of_event: np.ndarray, name_id):
        self.track, self.idx, self.rows, self.of_event, self._name_id = track, idx, rows, of_event, name_id
        self._metadata = track.plane.metadata

    @classmethod
    def of(cls, track: Track, idx: np.ndarray) -> _OpStats | None:
        """The stats per op of these events, or None when they cannot be read per op."""
        if not len(idx) or any(track.stats.column(name) is not None for name in _PER_OP_STATS):
            return None
        meta = track.meta_index[idx]
        count = len(track.plane.metadata)
        if int(meta.min()) < 0 or int(meta.max()) >= count:
            return None
        rows = np.flatnonzero(np.bincount(meta, minlength=count))
        position = np.zeros(count, np.int64)
        position[rows] = np.arange(len(rows))
        of_event = position[meta]
        names = track.name_id[idx]
        name_id = np.empty(len(rows), names.dtype)
        name_id[of_event] = names  # any event's: checked to be every event's of the row just below
        if not np.array_equal(name_id[of_event], names):
            return None  # events of one metadata row with different names: read per event
        return cls(track, idx, rows, of_event, name_id)

    def _values(self, name: str, fill: float) -> np.ndarray | None:
        column = self._metadata.stats.column(name)
        return None if column is None else column.dense(len(self._metadata), fill)[self.rows]

    def strings(self, name: str) -> np.ndarray | None:
        values = self._values(name, 0)
        return None if values is None else values.astype(np.int32, copy=False)

    def floats(self, name: str) -> np.ndarray | None:
        values = self._values(name, np.nan)
        return None if values is None else values.astype(np.float64, copy=False)

    def program_ids(self) -> np.ndarray | None:
        return _as_uint64(self._values(Stat.PROGRAM_ID, 0))


def module_names(device: Device) -> dict[int, str]:
    """program id -> module name, from the device's program executions (XPlane: `jit_f(<id>)`)."""
    track = device.plane.first_track_of_kind(TrackKind.DEVICE_MODULES)
    pattern = device.plane.trace.dialect.program_name
    if track is None or len(track) == 0 or not pattern:
        return {}
    names = {}
    strings = device.plane.trace.strings
    matcher = re.compile(pattern)
    for name_id in order_statistics.sorted_distinct(track.name_id):
        m = matcher.match(strings[int(name_id)])
        if m:
            names[int(m.group(2))] = m.group(1)
    return names


# The columns of `OpEvents` `collect_op_events` fills, with their types.
_COLUMNS = {
    "device": np.int32, "op": np.int32, "category": np.int32, "program": np.int32,
    "framework": np.int32, "time": np.int64, "self": np.int64, "flops": np.float64,
    "bytes": np.float64, "pid": np.uint64, "text": np.int64, "source": np.int64, "stack": np.int64,
}  # fmt: skip
_PER_OP_COLUMNS = (
    "op", "category", "program", "framework", "flops", "bytes", "pid", "text", "source", "stack",
)  # fmt: skip


def _per_op_columns(
    labels: _Labels,
    trace: Trace,
    stats: _EventStats,
    modules: dict[int, str],
    category_text: Callable[[int], str],
) -> dict[str, np.ndarray | _Gather | float]:
    """What the ops are, one value per item of `stats` (an event, or an op of `_OpStats`); a number
    instead of an array where every item has that value (a stat no item has). `category_text` names
    a category code (`_category_text`)."""
    strings = trace.strings
    # What the op is called: the op-text stat (GPU kernels, CPU thunks), else the event name.
    op_text = stats.strings(Stat.OP_TEXT)
    if op_text is None:
        op_text = stats.name_id
    elif not op_text.all():
        op_text = np.where(op_text > 0, op_text, stats.name_id)
    op, category = _op_and_category_labels(
        labels, strings, op_text, stats.strings(Stat.OP_CATEGORY), category_text
    )
    framework = stats.strings(Stat.FRAMEWORK_OP)
    scope = stats.strings(Stat.NAME_SCOPE)  # GPU kernels: JAX name scope
    module = stats.strings(Stat.PROGRAM_NAME)
    program_id = stats.program_ids()
    flops, bytes_accessed = stats.floats(Stat.FLOPS), stats.floats(Stat.BYTES_ACCESSED)
    source, stack = stats.strings(Stat.SOURCE), stats.strings(Stat.SOURCE_STACK)
    return {
        "op": op,
        "category": category,
        "framework": _framework_labels(labels, trace, framework, scope),
        "program": _program_labels(labels, strings, program_id, module, modules, len(op_text)),
        "flops": np.nan if flops is None else flops,
        "bytes": np.nan if bytes_accessed is None else bytes_accessed,
        "pid": 0 if program_id is None else program_id,
        "text": op_text,
        "source": 0 if source is None else source,
        "stack": 0 if stack is None else stack,
    }


def _op_and_category_labels(
    labels: _Labels,
    strings: StringTable,
    op_text: np.ndarray,
    category: np.ndarray | None,
    category_text: Callable[[int], str],
) -> tuple[_Gather, _Gather | np.ndarray]:
    """Each item's op label (from its op text) and category label (its category stat, else derived
    from its op text). Without any category stat both come from one pass over the distinct op texts;
    the labels are added in the order the category column's own pass would add them (by its codes,
    the negated text ids: descending text)."""
    distinct = _Distinct(op_text)
    op = distinct.gather(labels.add_each(distinct.values, lambda i: short_op_name(strings[i])))
    if category is None:
        derived = labels.add_each(distinct.values[::-1], lambda i: category_text(-i))[::-1]
        return op, distinct.gather(np.ascontiguousarray(derived))
    category = np.where(category > 0, category, -op_text)  # negative: derive from the op text
    return op, labels.map_ids(category, category_text)


_EXACT_IN_FLOAT = 1 << 53  # integers below this in size survive a round trip through float64


def _exact_in_float(values: np.ndarray) -> bool:
    return -_EXACT_IN_FLOAT < int(values.min()) and int(values.max()) < _EXACT_IN_FLOAT


def _device_times(track: Track, idx: np.ndarray, time: np.ndarray) -> np.ndarray:
    """Writes each event's time into `time` and returns its start, in ps as int64: its device duration
    and offset where it has both (the device's own clock), else its host-aligned duration and start
    (read through float64, as where some events have both)."""
    own = [track.stats.column(name) for name in (Stat.DEVICE_DURATION_PS, Stat.DEVICE_OFFSET_PS)]
    from_metadata = any(track.plane.metadata.stats.column(c.name) for c in own if c is not None)
    if all(c is not None and c.rows is None and c.kind in ("int", "uint") for c in own) and not from_metadata:
        # Every event has both as integers (XPlane's TPU op lines): taken as they are, which is what
        # the float path below gives for values it holds exactly.
        values = [c.values for c in own if c is not None]
        if all(len(v) == 0 or _exact_in_float(v) for v in values):
            time[...] = values[0][idx]
            return values[1][idx].astype(np.int64)
    events = _EventStats(track, idx)
    device_duration = events.floats(Stat.DEVICE_DURATION_PS)
    device_offset = events.floats(Stat.DEVICE_OFFSET_PS)
    if device_duration is None or device_offset is None:  # no event is on the device's clock
        _through_float(_take(track.duration_ps, idx, out=time))
        return _through_float(_take(track.start_ps, idx))
    on_device_clock = np.isfinite(device_duration) & np.isfinite(device_offset)
    time[...] = np.where(on_device_clock, device_duration, track.duration_ps[idx])
    return np.where(on_device_clock, device_offset, track.start_ps[idx]).astype(np.int64)


def _take(values: np.ndarray, idx: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """`values[idx]` as int64, into `out` when given (no temporary when the column is int64)."""
    if out is None:
        return values[idx].astype(np.int64, copy=False)
    if values.dtype == out.dtype:
        return np.take(values, idx, out=out, mode="clip")
    out[...] = values[idx]
    return out


def _through_float(values: np.ndarray) -> np.ndarray:
    """int64 `values` made (in place) what a round trip through float64 gives: themselves, unless
    beyond 2**53."""
    if len(values) and not _exact_in_float(values):
        values[...] = values.astype(np.float64)
    return values


def _column_block(total: int) -> dict[str, np.ndarray]:
    """The columns of `collect_op_events`, zeroed, as views of one allocation.

    Writing fresh memory costs a page fault per page, and those faults were most of the time of
    gathering a million-event recording's op columns. One block is one mapping, which the OS backs
    by large pages where it can (numpy asks for them for big arrays); being zeroed, the columns of
    stats no event has need no writing at all.
    """
    sizes = [_aligned(total * np.dtype(dtype).itemsize) for dtype in _COLUMNS.values()]
    block = np.zeros(sum(sizes), np.uint8)
    columns, start = {}, 0
    for (key, dtype), size in zip(_COLUMNS.items(), sizes, strict=True):
        columns[key] = block[start : start + total * np.dtype(dtype).itemsize].view(dtype)
        start += size
    return columns


def _aligned(size: int, to: int = 64) -> int:
    return -(-size // to) * to


def _put(column: np.ndarray, values: np.ndarray | _Gather | float, of_event: np.ndarray | None) -> None:
    """Writes per-op `values` into `column` (zeroed): per event, or through `of_event` (each event's
    op); a number is every event's value, and 0 needs no writing."""
    if isinstance(values, _Gather):
        values.into(column, of_event)
    elif np.ndim(values) == 0:
        if values != 0:  # NaN too
            column[...] = values
    elif of_event is None:
        column[...] = values
    else:
        np.take(np.asarray(values).astype(column.dtype, copy=False), of_event, out=column, mode="clip")


def collect_op_events(trace: Trace, devices: list[Device] | None = None) -> OpEvents:
    """Gathers the op columns of `devices` (all devices of the trace by default).

    Each column is written in place into one array over all events (no per-track parts joined at
    the end); what an op is (its labels, FLOPs, code) is worked out once per op where the events
    take it from their metadata (`_OpStats`), and gathered to the events by one index."""
    devices = find_devices(trace) if devices is None else devices
    labels = _Labels()
    # Each category named once per code over all tracks (a regex over the op's text where derived).
    category_text = functools.cache(lambda code: _category_text(trace.strings, code))
    total = sum(len(idx) for device in devices for _, idx in device.events)
    out = _column_block(total)
    # A float stat that no op event has (XLA:CPU thunks carry no FLOPs or bytes) reads NaN for every
    # event: one read-only NaN repeated by a zero stride, not 8 bytes per event written.
    unknown = [key for key, name in _FLOAT_STATS.items() if not _any_has(devices, name)]
    for key in unknown:
        out[key] = np.broadcast_to(np.float64(np.nan), (total,))
    segments = []
    offset = 0
    for position, device in enumerate(devices):
        modules = module_names(device)
        for track, idx in device.events:
            n = len(idx)
            at = slice(offset, offset + n)
            stats = _OpStats.of(track, idx) or _EventStats(track, idx)
            per_op = _per_op_columns(labels, trace, stats, modules, category_text)
            of_event = stats.of_event if isinstance(stats, _OpStats) else None
            for key in _PER_OP_COLUMNS:
                if key not in unknown:
                    _put(out[key][at], per_op[key], of_event)
            _put(out["device"][at], position, None)
            start = _device_times(track, idx, out["time"][at])
            self_times(start, out["time"][at], out=out["self"][at])
            segments.append((track, idx, offset))
            offset += n

    return OpEvents(
        devices=devices,
        labels=labels,
        device=out["device"],
        op=out["op"],
        category=out["category"],
        program=out["program"],
        framework=out["framework"],
        time_ps=out["time"],
        self_ps=out["self"],
        flops=out["flops"],
        bytes_accessed=out["bytes"],
        segments=segments,
        program_id=out["pid"],
        text=out["text"],
        source=out["source"],
        stack=out["stack"],
        strings=trace.strings,
    )


# The float columns of `collect_op_events` and the stat each is read from.
_FLOAT_STATS = {"flops": Stat.FLOPS, "bytes": Stat.BYTES_ACCESSED}


def _any_has(devices: list[Device], name: str) -> bool:
    """Whether any op track of `devices` has stat `name`, on its events or their metadata."""
    return any(
        track.stats.column(name) is not None or track.plane.metadata.stats.column(name) is not None
        for device in devices
        for track, _ in device.events
    )


def _category_text(strings: StringTable, code: int) -> str:
    return strings[code] if code > 0 else derived_category(strings[-code])


def _framework_labels(
    labels: _Labels, trace: Trace, tf_op: np.ndarray | None, scope: np.ndarray | None
) -> np.ndarray | int:
    """The `tf_op` stat without its trailing ':', else the `name` scope (where `tf_op` is the dialect's
    placeholder for no framework op: GPU kernels say "XlaModule:"); one label id where no item has
    either (None)."""
    strings, placeholders = trace.strings, trace.dialect.no_framework_op

    def tf_text(i: int) -> str:
        name = strings[i].rstrip(":") if i else ""
        return "" if name in placeholders else name

    from_tf = labels.map_column(tf_op, tf_text)
    if not np.any(from_tf == 0):
        return from_tf
    from_scope = labels.map_column(scope, lambda i: strings[i] if i else "")
    return from_scope if np.ndim(from_tf) == 0 else np.where(from_tf != 0, from_tf, from_scope)


def _program_labels(
    labels, strings, program_id: np.ndarray | None, module: np.ndarray | None, modules: dict[int, str], n: int
) -> np.ndarray | int:
    """Each item's program label ("name(id)") from its program id (any integer type: as uint64) and name
    stats (None: no item has it, all read 0), the name else from the device's module names; one label
    id where every item has the same."""

    def text(pair) -> str:
        pid, module_id = int(pair[0]), int(pair[1])
        name = strings[module_id] if module_id else modules.get(pid, "")
        if not pid:
            return name
        return f"{name}({pid})" if name else f"program {pid}"

    if n == 0:
        return np.empty(0, np.int32)
    if program_id is None and module is None:
        return labels.add(text((0, 0)) or NO_LABEL)
    program_id = np.zeros(n, np.uint64) if program_id is None else program_id
    module = np.zeros(n, np.int32) if module is None else module
    # Consecutive ops almost always belong to the same program: label each run once.
    change = np.ones(n, dtype=bool)
    change[1:] = (program_id[1:] != program_id[:-1]) | (module[1:] != module[:-1])
    heads = np.flatnonzero(change)
    programs, program_code = np.unique(program_id[heads].astype(np.uint64), return_inverse=True)
    module_ids, module_code = np.unique(module[heads].astype(np.uint64), return_inverse=True)
    n = len(module_ids)
    pair_code = program_code.reshape(-1) * n + module_code.reshape(-1)  # small, dense ints
    mapped = labels.map_ids(pair_code, lambda c: text((programs[c // n], module_ids[c % n])))
    if len(heads) == 1:  # one program throughout (a thread's thunks, an op line): every item's label
        return int(mapped[0])
    return np.repeat(mapped, np.diff(np.append(heads, len(program_id))))


@record
class OpTable:
    """One breakdown: rows as parallel numpy columns, in self-time order (largest first)."""

    by: str
    devices: list[Device]
    labels: list[str]
    name: np.ndarray  # label ids of the row's name (op, category, program or framework op)
    category: np.ndarray  # label id (by op: the op's category; by category: itself; else 0)
    program: np.ndarray  # label id (by op: the op's program; else 0)
    occurrences: np.ndarray  # int64
    total_ps: np.ndarray  # int64
    self_ps: np.ndarray  # int64
    flops: np.ndarray  # float64 totals over occurrences, NaN unknown
    bytes_accessed: np.ndarray  # float64 totals, NaN unknown
    bound: np.ndarray  # int8 BOUND_* codes
    busy_ps: int  # union of busy time, summed over the devices
    peaks: Peaks | None
    row_of_event: np.ndarray  # per OpEvents row: the table row it belongs to
    events: OpEvents
    first_event: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # an event of each row
    code: Mapping[int, ProgramCode] | None = None  # the programs' code the table was grouped with
    functions: list[str] = field(default_factory=list)  # by source: the function of each row's line
    folded_ops: list[list[str]] = field(default_factory=list)  # by source: each row's ops, most self first
    # Rows whose every event is an async start, update or done (`tpuscope.analysis.async_ops`): their
    # time is a launch or a wait, so they get no FLOP/s or GB/s (empty: none).
    async_half: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    _by_row: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.name)

    def names(self) -> list[str]:
        return [self.labels[i] for i in self.name]

    def label(self, label_id: int) -> str:
        return self.labels[int(label_id)]

    @property
    def total_self_ps(self) -> int:
        return int(self.self_ps.sum())

    @property
    def avg_ps(self) -> np.ndarray:
        return self.total_ps / np.maximum(self.occurrences, 1)

    @property
    def percent(self) -> np.ndarray:
        total = self.total_self_ps
        return self.self_ps * (100.0 / total) if total else np.zeros(len(self))

    @property
    def cumulative_percent(self) -> np.ndarray:
        return np.cumsum(self.percent)

    @property
    def flop_rate(self) -> np.ndarray:
        """FLOP/s over self time (as XProf's hlo_stats), NaN when FLOPs or time are unknown or the
        time is not the work's (an async start or done: `rate_known`)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where((self.self_ps > 0) & self.rate_known, self.flops / (self.self_ps * 1e-12), np.nan)

    @property
    def bytes_rate(self) -> np.ndarray:
        """Bytes/s over self time, NaN when unknown or not the work's time (as `flop_rate`)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(
                (self.self_ps > 0) & self.rate_known, self.bytes_accessed / (self.self_ps * 1e-12), np.nan
            )

    @property
    def rate_known(self) -> np.ndarray:
        """Per row: whether its self time is its work's time, so that FLOPs or bytes over it is a rate
        (False for async starts and dones: NO_RATE_REASON says why)."""
        if len(self.async_half) != len(self):
            return np.ones(len(self), bool)
        return ~self.async_half

    @property
    def intensity(self) -> np.ndarray:
        """Operational intensity, FLOPs per byte accessed (NaN when unknown)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.bytes_accessed > 0, self.flops / self.bytes_accessed, np.nan)

    def events_of_row(self, row: int) -> list[tuple[Track, np.ndarray]]:
        """The row's events, per track, for highlighting them in the timeline (and for the rules,
        which ask for many rows: the events are put in row order once, so each row costs its own
        events, not a pass over every event)."""
        order, bounds = self._events_by_row()
        return self.events.events_at(order[bounds[row] : bounds[row + 1]])

    def _events_by_row(self) -> tuple[np.ndarray, np.ndarray]:
        """(OpEvents rows ordered by table row, ascending within one; where each table row's start)."""
        found = self._by_row
        if found is None:
            rows = self.row_of_event
            # A stable sort of small ints: numpy sorts 16-bit keys by radix, in linear time.
            keys = rows.astype(np.uint16) if len(self) <= np.iinfo(np.uint16).max else rows
            order = np.argsort(keys, kind="stable")
            bounds = np.zeros(len(self) + 1, np.int64)
            np.cumsum(np.bincount(rows, minlength=len(self)), out=bounds[1:])
            found = self._by_row = (order, bounds)  # two threads may both make it: the same arrays
        return found

    def op_code(self, row: int, code: Mapping[int, ProgramCode] | None = None) -> OpCode | None:
        """By op: the code behind the row's op (`code`: the programs' code, else the table's own);
        None for other groupings."""
        if self.by != "op" or not len(self.first_event):
            return None
        from tpuscope.analysis.op_source import op_code

        return op_code(self.events, int(self.first_event[row]), self.code if code is None else code)

    def rows_json(self, top: int | None = None, code: Mapping[int, ProgramCode] | None = None) -> list[dict]:
        """Rows as JSON-ready dicts (times in microseconds), largest self time first.

        `code` (the programs' code) adds to rows by op their program id, framework op, op text,
        source line and stack; rows by source always name their line's function and their ops.
        """
        count = len(self) if top is None else min(top, len(self))
        avg, pct, cum = self.avg_ps, self.percent, self.cumulative_percent
        rate, bw, oi = self.flop_rate, self.bytes_rate, self.intensity
        rows: list[dict[str, Any]] = []
        for r in range(count):
            rows.append(
                {
                    "name": self.label(self.name[r]),
                    "category": self.label(self.category[r]) if self.category[r] else None,
                    "program": self.label(self.program[r]) if self.program[r] else None,
                    "occurrences": int(self.occurrences[r]),
                    "total_time_us": float(self.total_ps[r]) / 1e6,
                    "avg_time_us": float(avg[r]) / 1e6,
                    "self_time_us": float(self.self_ps[r]) / 1e6,
                    "percent": float(pct[r]),
                    "cumulative_percent": float(cum[r]),
                    "flops": _finite_or_none(self.flops[r]),
                    "flop_rate_gflops": _finite_or_none(rate[r] / 1e9),
                    "bytes_accessed": _finite_or_none(self.bytes_accessed[r]),
                    "bandwidth_gbps": _finite_or_none(bw[r] / 1e9),
                    "operational_intensity": _finite_or_none(oi[r]),
                    "bound_by": BOUND_NAMES[int(self.bound[r])],
                }
            )
            if code is not None and self.by == "op":
                from tpuscope.analysis.op_source import OpCode

                found = self.op_code(r, code)
                rows[-1].update((found or OpCode(None)).to_json())
            if self.by == "source" and self.folded_ops:
                rows[-1]["function"] = self.functions[r]
                rows[-1]["ops"] = list(self.folded_ops[r])
        return rows


def _finite_or_none(value: float) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


def _sum_known(values: np.ndarray, groups: np.ndarray, n: int) -> np.ndarray:
    """Per-group sum of the finite values; NaN for groups where none is known. The known values are
    picked out only when some are not (each pick is a fresh copy over every event)."""
    known = np.isfinite(values)
    if not known.all():
        values, groups = values[known], groups[known]
    sums = np.bincount(groups, weights=values, minlength=n)
    counts = np.bincount(groups, minlength=n)
    return np.where(counts > 0, sums, np.nan)


def _group(key: np.ndarray, reuse_key: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(one event index per group, group of each event) for non-negative int keys, groups in key order.

    Keys are built from label ids, so they usually span a small range: then a bincount replaces
    np.unique's sort of every event, and the groups are looked up and their members numbered a slice
    at a time (no array of every event's position). `reuse_key`: `key` (int64) is the caller's own
    temporary, and the groups are written over it: one array over every event fewer to fault in.
    """
    if len(key) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    high = int(key.max())
    if high <= max(8 * len(key), DENSE_RANGE_LIMIT):
        present = np.flatnonzero(np.bincount(key))
        rank = np.zeros(high + 1, np.int64)
        rank[present] = np.arange(len(present))
        inverse = id_columns.take(rank, key, key if reuse_key else np.empty(len(key), np.int64))
        representative = np.empty(len(present), np.int64)
        for start in range(0, len(key), id_columns.SLICE):  # any member will do: its labels are the group's
            stop = min(start + id_columns.SLICE, len(key))
            representative[inverse[start:stop]] = np.arange(start, stop)
        return representative, inverse
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def _op_key(events: OpEvents) -> np.ndarray:
    """One int per (program, op): ops are identified per program, as XProf does (made in one int64
    array: each temporary over every event is fresh memory to fault in)."""
    key = np.multiply(events.program, len(events.labels.texts) + 1, dtype=np.int64)
    return np.add(key, events.op, out=key)


def _own_line_key(events: OpEvents) -> np.ndarray:
    """One int per (program, op, the source line its event carries): `_op_key` where no event
    carries one (XLA's events name one line per op, or none)."""
    key = _op_key(events)
    if not len(events.source) or not events.source.any():
        return key
    _, dense = _group(events.source)
    return key * (int(dense.max()) + 1) + dense


def aggregate(events: OpEvents, by: str = "op", code: Mapping[int, ProgramCode] | None = None) -> OpTable:
    """Groups op events into a table sorted by self time (largest first).

    `code` (the programs' code, `tpuscope.model.code`) is what `by="source"` reads the lines of ops
    without their own from, and what `by="framework"` names ops without a framework-op stat by.
    """
    if by not in GROUPINGS:
        raise ValueError(f"unknown grouping {by!r}; expected one of {', '.join(GROUPINGS)}")
    grouped_by = events.framework
    op_codes: list[OpCode] = []
    op_first = op_inverse = np.empty(0, np.int64)
    if by in ("source", "framework"):
        # Each distinct op's code, once: its source line or framework op labels all its events. Ops
        # whose events name their own lines (a PyTorch kernel launched from several lines) are one
        # op per line they name.
        from tpuscope.analysis.op_source import op_code

        op_first, op_inverse = _group(_own_line_key(events), reuse_key=True)
        op_codes = [op_code(events, int(i), code) for i in op_first]
        if by == "source":
            labels = np.fromiter((events.labels.add(c.source or NO_SOURCE) for c in op_codes), np.int32)
            grouped_by = labels[op_inverse] if len(op_inverse) else np.empty(0, np.int32)
        else:
            labels = np.fromiter((events.labels.add(c.framework_op or NO_LABEL) for c in op_codes), np.int32)
            filled = labels[op_inverse] if len(op_inverse) else np.empty(0, np.int32)
            grouped_by = np.where(events.framework != 0, events.framework, filled).astype(np.int32)
    if by == "op":
        key = _op_key(events)
    elif by in ("source", "framework"):
        key = grouped_by.astype(np.int64)
    else:
        key = getattr(events, by).astype(np.int64)
    first, inverse = _group(key, reuse_key=True)  # every key above is a fresh int64 array of its own
    n = len(first)
    occurrences = np.bincount(inverse, minlength=n).astype(np.int64)
    total = np.bincount(inverse, weights=events.time_ps, minlength=n).astype(np.int64)
    self_ps = np.bincount(inverse, weights=events.self_ps, minlength=n).astype(np.int64)
    flops = _sum_known(events.flops, inverse, n)
    bytes_accessed = _sum_known(events.bytes_accessed, inverse, n)
    async_half = _all_async(events, inverse, occurrences)
    name = (
        events.op if by == "op" else grouped_by if by in ("source", "framework") else getattr(events, by)
    )[first]
    category = events.category[first] if by in ("op", "category") else np.zeros(n, np.int32)
    program = events.program[first] if by == "op" else np.zeros(n, np.int32)

    peaks = _common_peaks(events.devices)
    if peaks:
        from tpuscope.analysis.roofline import bound_by

        bound = bound_by(flops, bytes_accessed, peaks)
    else:
        bound = np.full(n, BOUND_UNKNOWN, np.int8)
    order = np.lexsort((-total, -self_ps))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    busy = sum(int((e - s).sum()) for s, e in (busy_intervals(d) for d in events.devices))
    functions: list[str] = []
    folded: list[list[str]] = []
    row_of_event = id_columns.take(rank, inverse, inverse)  # each event's row, over its group (read no more)
    if by == "source":
        functions, folded = _folded_ops(events, op_first, op_inverse, op_codes, row_of_event, n)
    return OpTable(
        by=by,
        devices=events.devices,
        labels=events.labels.texts,
        name=name[order],
        category=category[order],
        program=program[order],
        occurrences=occurrences[order],
        total_ps=total[order],
        self_ps=self_ps[order],
        flops=flops[order],
        bytes_accessed=bytes_accessed[order],
        bound=bound[order],
        busy_ps=busy,
        peaks=peaks,
        row_of_event=row_of_event,
        events=events,
        first_event=first[order],
        code=code,
        functions=functions,
        folded_ops=folded,
        async_half=async_half[order],
    )


def _all_async(events: OpEvents, inverse: np.ndarray, occurrences: np.ndarray) -> np.ndarray:
    """Per group: whether all its events' ops (by name or category) are async starts, updates or
    dones; each label is tested once, and no event is read when no label is one."""
    texts = events.labels.texts
    is_async = np.fromiter((is_async_half(t) for t in texts), bool, len(texts))
    if not is_async.any():
        return np.zeros(len(occurrences), bool)
    of_event = is_async[events.op] | is_async[events.category]
    return np.bincount(inverse, weights=of_event, minlength=len(occurrences)) == occurrences


def _folded_ops(
    events: OpEvents,
    op_first: np.ndarray,
    op_inverse: np.ndarray,
    op_codes: list[OpCode],
    row_of_event: np.ndarray,
    n_rows: int,
) -> tuple[list[str], list[list[str]]]:
    """By source: each row's function and the names of the ops on its line, most self time first
    (an op name of several programs once, where its largest part ranks)."""
    functions = [""] * n_rows
    folded: list[list[str]] = [[] for _ in range(n_rows)]
    if not len(op_first):
        return functions, folded
    op_self = np.bincount(op_inverse, weights=events.self_ps, minlength=len(op_first))
    op_row = row_of_event[op_first]
    for k in np.lexsort((np.arange(len(op_first)), -op_self)):  # per distinct op, not per event
        row = int(op_row[k])
        name = events.labels.texts[int(events.op[op_first[k]])]
        if name not in folded[row]:
            folded[row].append(name)
        if not functions[row] and op_codes[k].function:
            functions[row] = op_codes[k].function
    return functions, folded


def _common_peaks(devices: list[Device]) -> Peaks | None:
    """The devices' peaks when they all agree (one chip type), else None: a roofline verdict
    over mixed chips would have no single ridge point."""
    if not any(d.plane.is_device for d in devices):
        return None  # no peaks (XLA:CPU, a PyTorch CPU run): the roofline's tables are not imported
    from tpuscope.analysis.roofline import device_peaks

    found = {device_peaks(d.plane) if d.plane.is_device else None for d in devices}
    return found.pop() if len(found) == 1 else None


def op_details_of_event(
    devices: list[Device], track: Track, index: int, code: Mapping[int, ProgramCode] | None
) -> OpDetails | None:
    """The code behind one event (the details of a clicked op), None when it is no device's op.

    The event is gathered alone into op columns, so its code is found exactly as for the op table's
    rows (`op_source.op_code`), not by a second reading of its stats."""
    for device in devices:
        for events_track, indices in device.events:
            if events_track is not track:
                continue
            at = int(np.searchsorted(indices, index))
            if at < len(indices) and int(indices[at]) == index:
                alone = Device(
                    device.name, device.kind, device.host, device.plane, [(track, indices[at : at + 1])]
                )
                from tpuscope.analysis.op_source import op_details

                return op_details(collect_op_events(track.plane.trace, [alone]), 0, code)
    return None


@record
class RooflinePoints:
    """The ops of an op table by op that a roofline can place: each with known FLOPs, bytes and
    self time (XProf's roofline_model rows), as parallel columns over those rows."""

    table: OpTable
    rows: np.ndarray  # table rows
    intensity: np.ndarray  # FLOPs per byte accessed
    flop_rate: np.ndarray  # FLOP/s over self time (XProf's measured_flop_rate, in FLOP/s)
    self_ps: np.ndarray
    programs: list[str]  # the programs the table's ops ran in, most self time first
    total_self_ps: int = 0  # every op's self time in the window (placed or not), all programs

    def __len__(self) -> int:
        return len(self.rows)


def roofline_points(
    table: OpTable, program: str | None = None, window_ps: tuple[int, int] | None = None
) -> RooflinePoints:
    """The roofline's dots: every op row by op (of `program`, a program label, when given) with
    FLOPs > 0, bytes accessed > 0 and self time > 0. Ops XProf places at zero FLOPs (copies) have no
    place on log axes and are left out, as they are of XProf's chart; so are async starts and dones,
    whose time is not their work's (`OpTable.rate_known`).

    `window_ps` (trace time, start inclusive, end exclusive: a step range's bounds) keeps the
    occurrences that start inside it: each op's FLOPs, bytes and self time are summed over those
    alone, as XProf's roofline_model does per step. `programs` still lists every program."""
    if table.by != "op":
        raise ValueError("a roofline places ops: it needs the op table by op")
    flops, bytes_accessed, self_ps = table.flops, table.bytes_accessed, table.self_ps
    if window_ps is not None:
        flops, bytes_accessed, self_ps = _sums_in_window(table, window_ps)
    known = np.isfinite(flops) & (flops > 0)
    known &= np.isfinite(bytes_accessed) & (bytes_accessed > 0) & (self_ps > 0) & table.rate_known
    program_self = np.bincount(table.program, weights=table.self_ps, minlength=len(table.labels))
    programs = [table.labels[int(p)] for p in np.argsort(-program_self, kind="stable") if program_self[p] > 0]
    if program is not None:
        wanted = table.labels.index(program) if program in table.labels else -1
        known &= table.program == wanted
    rows = np.flatnonzero(known)
    with np.errstate(divide="ignore", invalid="ignore"):
        intensity = flops[rows] / bytes_accessed[rows]
        flop_rate = flops[rows] / (self_ps[rows] * 1e-12)
    return RooflinePoints(
        table, rows, intensity, flop_rate, self_ps[rows].astype(np.int64), programs, int(self_ps.sum())
    )


def _sums_in_window(table: OpTable, window_ps: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per table row: FLOPs, bytes accessed (NaN where none is known) and self time of the
    occurrences whose timeline start lies in [start, end)."""
    events = table.events
    starts = [track.start_ps[indices] for track, indices, _ in events.segments]
    start_ps = np.concatenate(starts) if starts else np.empty(0, np.int64)
    inside = (start_ps >= window_ps[0]) & (start_ps < window_ps[1])
    rows, n = table.row_of_event[inside], len(table)
    return (
        _sum_known(events.flops[inside], rows, n),
        _sum_known(events.bytes_accessed[inside], rows, n),
        np.bincount(rows, weights=events.self_ps[inside], minlength=n).astype(np.int64),
    )


def op_breakdown(trace: Trace, device: str | int | None = "all", by: str = "op") -> OpTable:
    """The op table of the chosen devices ("all", a position, or a kind) grouped `by`."""
    devices = select_devices(find_devices(trace), device)
    return aggregate(collect_op_events(trace, devices), by)
