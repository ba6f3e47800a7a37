"""Trace-event JSON (the Chrome trace event format) -> plain numpy columns.

PyTorch's profiler (Kineto), TSL (the `<host>.trace.json.gz` JAX writes beside each XPlane
file) and Perfetto's JSON export all write this format: a `traceEvents` list of records with a
phase `ph` (`X` complete, `i`/`I` instant, `M` metadata, `s`/`t`/`f` flow, `C` counter...),
`name`, `cat`, `pid`, `tid`, `ts` and `dur` in microseconds, and `args`. Format reference:
"Trace Event Format" (Google, docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU)
and Kineto's writer (pytorch/kineto, libkineto/src/output_json.cpp).

Most files never come here record by record: the C decoder (native.py, _jsontok.c) writes the same
columns straight from the bytes, and this module's msgspec path reads only the files it declines
(damaged or oddly typed ones, which the repairs below handle); the types, checks and the final
assembly (`finish_file`) below serve both.

Parsing uses msgspec with typed structs (benchmarks/bench_json_parsers.py measured it against
orjson, simdjson and the standard library): only the fields below are decoded, unknown keys are
skipped in C, and each column is then pulled out with C-level iteration (`map`/`attrgetter`,
`np.fromiter`). The decoded records are temporaries of this module; only columns leave it.

Bad input costs nothing on that path: each field is checked where its column is made (times the
model can hold and ids in int64, by numpy over the whole column; ids per distinct thread), and a
record that fails is dropped and counted (`TraceEventFile.losses`). Only a document the typed
decoder refuses takes a slower road, one repair at a time: invalid UTF-8 replaced, nesting past
MAX_NESTING blanked (found by a numpy scan of the bytes), a cut document closed after its last
complete record, and wrong types decoded untyped and coerced record by record.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import field
from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import Any

import msgspec
import numpy as np

from tpuscope.errors import ProfileError, display_path
from tpuscope.model import order_statistics
from tpuscope.model.completeness import CUT, DROPPED, Loss
from tpuscope.model.records import record
from tpuscope.readers.files import GZIP_MAGIC, gunzip_salvaging
from tpuscope.readers.registry import ProfileFile


class _Args(msgspec.Struct, gc=False, rename={
    "external_id": "External id", "registers_per_thread": "registers per thread",
    "shared_memory": "shared memory", "occupancy": "est. achieved occupancy %",
    "bandwidth": "memory bandwidth (GB/s)", "collective_name": "Collective name",
    "in_msg_nelems": "In msg nelems", "out_msg_nelems": "Out msg nelems",
    "group_size": "Group size", "process_group_name": "Process Group Name",
    "call_stack": "Call stack", "call_from": "CallFrom", "python_id": "Python id",
    "external_id_2021": "external id", "device_id": "Device Id", "device_type": "Device Type",
    "address": "Addr", "allocation_bytes": "Bytes", "total_allocated": "Total Allocated",
    "total_reserved": "Total Reserved",
}):  # fmt: skip
    """The args tpuscope keeps (Kineto's and TSL's); others are skipped by the decoder.

    Typed `Any`: writers disagree on types (TSL writes every stat as a string, Kineto numbers).
    """

    # Kineto (libkineto/src/output_json.cpp and its GPU activity writers).
    external_id: Any = None
    correlation: Any = None
    stream: Any = None
    device: Any = None
    registers_per_thread: Any = None
    shared_memory: Any = None
    occupancy: Any = None
    bytes: Any = None
    bandwidth: Any = None
    flops: Any = None
    collective_name: Any = None
    in_msg_nelems: Any = None
    out_msg_nelems: Any = None
    group_size: Any = None
    dtype: Any = None
    process_group_name: Any = None
    cuda_sync_kind: Any = None
    # Kineto's 2020-21 spelling of `External id` (pytorch/kineto issue #109).
    external_id_2021: Any = None
    # `[memory]` records of the caching allocator (pytorch/pytorch torch/csrc/autograd/profiler_kineto.cpp).
    device_id: Any = None
    device_type: Any = None
    address: Any = None
    allocation_bytes: Any = None
    total_allocated: Any = None
    total_reserved: Any = None
    # Python frames recorded with `with_stack=True` (tpuscope.readers.trace_event.python_stacks).
    call_stack: Any = None
    call_from: Any = None
    python_id: Any = None
    # TSL (xla/tsl/profiler/convert/trace_events_to_json.cc).
    hlo_op: Any = None
    hlo_module: Any = None
    long_name: Any = None
    tf_op: Any = None
    program_id: Any = None
    step_num: Any = None
    group_id: Any = None
    correlation_id: Any = None
    bytes_accessed: Any = None
    # M records: process_name / thread_name / process_labels.
    name: Any = None
    labels: Any = None


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float = 0.0
    dur: float = 0.0
    id: int | str | None = None
    bp: str = ""
    args: _Args | None = None


class _Document(msgspec.Struct, gc=False):
    traceEvents: list[_Event] = []  # noqa: N815 (the format's name)
    schemaVersion: int | None = None  # noqa: N815
    deviceProperties: list[dict[str, Any]] | None = None  # noqa: N815
    distributedInfo: dict[str, Any] | None = None  # noqa: N815
    displayTimeUnit: str | None = None  # noqa: N815
    baseTimeNanoseconds: int | None = None  # noqa: N815
    traceName: str | None = None  # noqa: N815


_DOCUMENT = msgspec.json.Decoder(_Document)
_EVENT_LIST = msgspec.json.Decoder(list[_Event])

# The args kept as stat columns: (attribute, stat name as shown). Names that mean a neutral stat are
# the neutral names (tpuscope.model.vocabulary.Stat): correlation -> correlation_id, bytes -> bytes_accessed.
ARG_COLUMNS: tuple[tuple[str, str], ...] = (
    ("external_id", "External id"),
    ("external_id_2021", "External id"),
    ("correlation", "correlation_id"),
    ("stream", "stream"),
    ("device", "device"),
    ("registers_per_thread", "registers per thread"),
    ("shared_memory", "shared memory"),
    ("occupancy", "est. achieved occupancy %"),
    ("bytes", "bytes_accessed"),
    ("bandwidth", "memory bandwidth (GB/s)"),
    ("flops", "flops"),
    ("collective_name", "Collective name"),
    ("in_msg_nelems", "In msg nelems"),
    ("out_msg_nelems", "Out msg nelems"),
    ("group_size", "Group size"),
    ("dtype", "dtype"),
    ("process_group_name", "Process Group Name"),
    ("cuda_sync_kind", "cuda_sync_kind"),
    ("call_stack", "Call stack"),
    ("call_from", "CallFrom"),
    ("python_id", "Python id"),
    ("device_id", "Device Id"),
    ("device_type", "Device Type"),
    ("address", "Addr"),
    ("allocation_bytes", "Bytes"),
    ("total_allocated", "Total Allocated"),
    ("total_reserved", "Total Reserved"),
    ("hlo_op", "hlo_op"),
    ("hlo_module", "hlo_module"),
    ("long_name", "long_name"),
    ("tf_op", "tf_op"),
    ("program_id", "program_id"),
    ("step_num", "step_num"),
    ("group_id", "group_id"),
    ("correlation_id", "correlation_id"),
    ("bytes_accessed", "bytes_accessed"),
)
# Phase letters -> small codes, looked up at C speed (unknown phases read 0).
PHASE_X, PHASE_INSTANT, PHASE_META, PHASE_FLOW_START, PHASE_FLOW_STEP, PHASE_FLOW_END = range(1, 7)
PHASE_COUNTER = 7
_PHASE_CODES: defaultdict = defaultdict(
    int, {"X": PHASE_X, "i": PHASE_INSTANT, "I": PHASE_INSTANT, "n": PHASE_INSTANT, "M": PHASE_META,
          "s": PHASE_FLOW_START, "t": PHASE_FLOW_STEP, "f": PHASE_FLOW_END, "C": PHASE_COUNTER}
)  # fmt: skip
_BINDS_ENCLOSING: defaultdict = defaultdict(bool, {"e": True})


@record
class Interner:
    """Distinct strings -> dense ids, filled at C speed (`defaultdict.__missing__` calls `len`)."""

    ids: defaultdict = field(default_factory=defaultdict)

    def __post_init__(self) -> None:
        self.ids.default_factory = self.ids.__len__

    def many(self, values, n: int) -> np.ndarray:
        return np.fromiter(map(self.ids.__getitem__, values), np.int64, n)

    def strings(self) -> list:
        return list(self.ids)


@record
class EventColumns:
    """The events of one file (X and instant records), one numpy column per field."""

    phase: np.ndarray  # uint8: ord of "X" or "i"
    name: np.ndarray  # int64 ids into `names`
    category: np.ndarray  # int64 ids into `categories`
    thread: np.ndarray  # int64 ids into `threads` ((pid, tid) pairs)
    ts_us: np.ndarray  # float64
    dur_us: np.ndarray  # float64
    names: list[str]
    categories: list[str]
    threads: list[tuple[int | str, int | str]]
    # arg attribute -> (rows that carry it, the values as the records hold them)
    args: dict[str, tuple[np.ndarray, list]]

    def __len__(self) -> int:
        return len(self.ts_us)


@record
class FlowColumns:
    """Flow records (`s`, `t`, `f`): where each flow id starts and ends."""

    phase: np.ndarray  # uint8
    flow_id: np.ndarray  # int64 ids into `ids`
    category: np.ndarray  # int64 ids into the events' categories
    thread: np.ndarray  # int64 ids into the events' threads
    ts_us: np.ndarray
    binds_enclosing: np.ndarray  # bool: "bp": "e" (bind to the enclosing slice)


@record
class TraceEventFile:
    """One decoded trace-event JSON file."""

    path: ProfileFile
    events: EventColumns
    flows: FlowColumns
    process_names: dict[int | str, str]
    process_labels: dict[int | str, str]
    thread_names: dict[tuple[int | str, int | str], str]
    schema_version: int | None
    device_properties: list[dict[str, Any]]
    distributed_info: dict[str, Any]
    display_time_unit: str | None
    base_time_ns: int | None
    counters_skipped: int = 0
    # What the reader could not keep: (the load warning, the cause of the error `--strict` makes of it).
    losses: list[tuple[str, str]] = field(default_factory=list)
    # The same measured, for the profile's completeness (a cut, records dropped): tpuscope.model.completeness.
    measured_losses: list[Loss] = field(default_factory=list)
    # Which decoder read it: "c" (native.py), else "msgspec" and why the C decoder declined.
    decoder: str = "msgspec"


def read_trace_events(
    path: ProfileFile, data: bytes | bytearray | memoryview, gzip_cut: bool = False
) -> TraceEventFile:
    """Decodes a trace-event JSON document into columns.

    A record whose field fails its check (type, or a time the model cannot hold) is dropped and
    counted in `losses`, as is a document cut short (the records before the cut are kept); a
    document that cannot be read at all is a one-sentence ProfileError. `gzip_cut`: the gzip stream
    around `data` ended early, which the cut's sentence names.
    """
    losses: list[tuple[str, str]] = []
    decoded = _decode_document(path, _utf8_text(path, data), gzip_cut, losses)
    records = decoded.records
    drops: Counter[str] = Counter(decoded.drops)
    get = attrgetter
    codes = np.fromiter(map(_PHASE_CODES.__getitem__, map(get("ph"), records)), np.uint8, len(records))
    is_event = (codes == PHASE_X) | (codes == PHASE_INSTANT)
    is_flow = (codes >= PHASE_FLOW_START) & (codes <= PHASE_FLOW_END)
    events = list(map(records.__getitem__, np.flatnonzero(is_event).tolist()))
    flows = list(map(records.__getitem__, np.flatnonzero(is_flow).tolist()))
    meta = list(map(records.__getitem__, np.flatnonzero(codes == PHASE_META).tolist()))
    counters = int((codes == PHASE_COUNTER).sum())
    event_phase, flow_phase = codes[is_event], codes[is_flow]
    del records, codes
    threads = Interner()
    n, m = len(events), len(flows)
    event_thread = threads.many(zip(map(get("pid"), events), map(get("tid"), events), strict=True), n)
    flow_thread = threads.many(zip(map(get("pid"), flows), map(get("tid"), flows), strict=True), m)
    ts_us = np.fromiter(map(get("ts"), events), np.float64, n)
    dur_us = np.fromiter(map(get("dur"), events), np.float64, n)
    flow_ts_us = np.fromiter(map(get("ts"), flows), np.float64, m)
    # Checks on whole columns: times the model can hold, threads whose ids are in range.
    bad_thread = _bad_threads(threads.strings())
    event_keep = _times_in_range(ts_us, dur_us, bad_thread[event_thread], drops, _middle(ts_us))
    flow_keep = _times_in_range(flow_ts_us, None, bad_thread[flow_thread], drops, _middle(ts_us[event_keep]))
    if not event_keep.all():
        events = list(compress(events, event_keep.tolist()))
        event_phase, event_thread, ts_us, dur_us = (
            event_phase[event_keep],
            event_thread[event_keep],
            ts_us[event_keep],
            dur_us[event_keep],
        )
        n = len(events)
    if not flow_keep.all():
        flows = list(compress(flows, flow_keep.tolist()))
        flow_phase, flow_thread, flow_ts_us = (
            flow_phase[flow_keep],
            flow_thread[flow_keep],
            flow_ts_us[flow_keep],
        )
        m = len(flows)
    thread_list = threads.strings()
    if bad_thread.any():  # the bad (pid, tid) pairs leave the thread table: ids renumbered densely
        used = np.flatnonzero(~bad_thread)
        renumber = np.full(len(bad_thread), -1, np.int64)
        renumber[used] = np.arange(len(used))
        event_thread, flow_thread = renumber[event_thread], renumber[flow_thread]
        thread_list = [thread_list[i] for i in used.tolist()]
    names, categories = Interner(), Interner()
    event_columns = EventColumns(
        phase=event_phase,
        name=names.many(map(get("name"), events), n),
        category=categories.many(map(get("cat"), events), n),
        thread=event_thread,
        ts_us=ts_us,
        dur_us=dur_us,
        names=[],
        categories=[],
        threads=thread_list,
        args=_arg_columns(events),
    )
    flow_ids = Interner()
    flow_columns = FlowColumns(
        phase=flow_phase,
        flow_id=flow_ids.many(zip(map(get("cat"), flows), map(get("id"), flows), strict=True), m),
        category=categories.many(map(get("cat"), flows), m),
        thread=flow_thread,
        ts_us=flow_ts_us,
        binds_enclosing=np.fromiter(map(_BINDS_ENCLOSING.__getitem__, map(get("bp"), flows)), bool, m),
    )
    event_columns.names = names.strings()
    event_columns.categories = categories.strings()
    return finish_file(path, event_columns, flow_columns, meta, decoded, drops, counters, losses)


def finish_file(
    path: ProfileFile,
    events: EventColumns,
    flows: FlowColumns,
    meta: list,
    decoded: _Decoded,
    drops: Counter[str],
    counters: int,
    losses: list[tuple[str, str]],
) -> TraceEventFile:
    """The file from its columns, metadata records (typed `_Event`s) and top-level fields, and what
    reading it cost as load warnings (both decoders end here)."""
    process_names: dict[int | str, str] = {}
    process_labels: dict[int | str, str] = {}
    thread_names: dict[tuple[int | str, int | str], str] = {}
    for entry in meta:  # a handful per process and thread
        args = entry.args
        if args is None or entry.name not in _META_FIELDS:
            continue
        key = _META_FIELDS[entry.name]
        value = getattr(args, key)
        if value is None:
            continue
        if not isinstance(value, str):
            drops[f"metadata `args.{key}` is not a string"] += 1
        elif entry.name == "process_name":
            process_names[entry.pid] = value
        elif entry.name == "thread_name":
            thread_names[(entry.pid, entry.tid)] = value
        elif value:
            process_labels[entry.pid] = value
    measured: list[Loss] = []
    kept = len(events.ts_us) + len(flows.ts_us)
    if drops:
        cause = _drop_sentence(drops)
        losses.insert(0, (f"{display_path(path)}: {cause}.", cause))
        dropped = sum(drops.values())
        measured.append(Loss(DROPPED, display_path(path), losses[0][0], kept, kept + dropped))
    if decoded.cut is not None:  # how long the document was is unknown: its records read are counted
        sentence = f"{display_path(path)} is cut short: {decoded.cut}."
        measured.append(Loss(CUT, display_path(path), sentence, kept))
    if decoded.cut is not None and len(events) == 0:
        raise ProfileError(path, f"the file is cut short before its first complete event ({decoded.cut})")
    if drops and len(events) == 0:
        raise ProfileError(path, f"it is not a trace-event JSON file ({_drop_sentence(drops)}, none kept)")
    return TraceEventFile(
        path=path,
        events=events,
        flows=flows,
        process_names=process_names,
        process_labels=process_labels,
        thread_names=thread_names,
        schema_version=decoded.schema_version,
        device_properties=decoded.device_properties,
        distributed_info=decoded.distributed_info,
        display_time_unit=decoded.display_time_unit,
        base_time_ns=decoded.base_time_ns,
        counters_skipped=counters,
        losses=losses,
        measured_losses=measured,
    )


# The model's clock (tpuscope.model.trace): int64 picoseconds from the trace's start, whose absolute
# time is int64 nanoseconds (Trace.origin_ns). A time outside these cannot be held: it is dropped.
_INT64 = 2**63
_MAX_ABS_TS_US = _INT64 / 1e3  # an absolute time in nanoseconds fits int64
# Each start lies within this of the file's middle, and each duration below twice it: a start, an end
# (start + duration) and the distance between two events all fit int64 picoseconds (2**61 ps: 26 days).
_MAX_FROM_MIDDLE_US = 2.0**61 / 1e6
_MAX_DURATION_US = 2.0**62 / 1e6


def _middle(ts_us: np.ndarray) -> float:
    """A time near most of the file's events: the middle of their range where that range fits
    (every valid file), else the median of the times the model can hold (0 when there is none)."""
    if not len(ts_us):
        return 0.0
    low, high = float(ts_us.min()), float(ts_us.max())
    if -_MAX_ABS_TS_US < low and high < _MAX_ABS_TS_US and high - low < _MAX_FROM_MIDDLE_US:
        return (low + high) / 2  # min and max are NaN if any time is: then the median's road
    usable = ts_us[np.isfinite(ts_us) & (np.abs(ts_us) < _MAX_ABS_TS_US)]
    return float(order_statistics.median(usable)) if len(usable) else 0.0


def _times_in_range(
    ts_us: np.ndarray, dur_us: np.ndarray | None, bad_thread: np.ndarray, drops: Counter[str], middle: float
) -> np.ndarray:
    """Which records to keep; the others are counted in `drops` under their first failing field."""
    if len(ts_us) and not bad_thread.any() and _all_in_range(ts_us, dur_us, middle):
        return np.ones(len(ts_us), bool)
    keep = ~bad_thread
    if bad_thread.any():
        drops["`pid` or `tid` out of range"] += int(bad_thread.sum())
    with np.errstate(invalid="ignore", over="ignore"):
        ts_ok = (
            np.isfinite(ts_us)
            & (np.abs(ts_us) < _MAX_ABS_TS_US)
            & (np.abs(ts_us - middle) < _MAX_FROM_MIDDLE_US)
        )
        failed = keep & ~ts_ok
        if failed.any():
            drops["`ts` out of range"] += int(failed.sum())
        keep &= ts_ok
        if dur_us is not None:  # NaN reads as no duration (as before); anything else must fit
            dur_ok = np.isnan(dur_us) | (np.abs(dur_us) < _MAX_DURATION_US)
            failed = keep & ~dur_ok
            if failed.any():
                drops["`dur` out of range"] += int(failed.sum())
            keep &= dur_ok
    return keep


def _all_in_range(ts_us: np.ndarray, dur_us: np.ndarray | None, middle: float) -> bool:
    """Every record passes (a valid file): known from the columns' extremes, without a pass per check.
    A NaN makes min and max NaN, every comparison false, and the full check run."""
    low, high = float(ts_us.min()), float(ts_us.max())
    fits = -_MAX_ABS_TS_US < low and high < _MAX_ABS_TS_US
    fits = fits and high - middle < _MAX_FROM_MIDDLE_US and middle - low < _MAX_FROM_MIDDLE_US
    if dur_us is not None:
        fits = fits and -_MAX_DURATION_US < float(dur_us.min()) and float(dur_us.max()) < _MAX_DURATION_US
    return fits


def _bad_threads(threads: list) -> np.ndarray:
    """Per distinct (pid, tid): an integer id outside int64 (strings are names, kept as they are)."""
    bad = [
        any(type(v) is int and not -_INT64 <= v < _INT64 for v in pair) for pair in threads
    ]  # one check per thread, not per event
    return np.array(bad, dtype=bool).reshape(len(threads))


def _drop_sentence(drops: Counter[str]) -> str:
    """'312 events dropped: `ts` out of range' (the reasons, most frequent first)."""
    total = sum(drops.values())
    noun = "record" if total == 1 else "records"
    if len(drops) == 1:
        (reason,) = drops
        return f"{total:,} {noun} dropped: {reason}"
    reasons = ", ".join(f"{reason} ({count:,})" for reason, count in drops.most_common())
    return f"{total:,} {noun} dropped: {reasons}"


def _arg_columns(events: list[_Event]) -> dict[str, tuple[np.ndarray, list]]:
    """Per kept arg, the rows that carry it and their values (C-level passes only)."""
    all_args = list(map(attrgetter("args"), events))
    has_args = np.fromiter(map(is_not, all_args, repeat(None)), bool, len(all_args))
    if not has_args.any():
        return {}
    rows_of_args = np.flatnonzero(has_args)
    args = list(map(all_args.__getitem__, rows_of_args.tolist()))
    del all_args
    out: dict[str, tuple[np.ndarray, list]] = {}
    for attribute, _ in ARG_COLUMNS:
        values = list(map(attrgetter(attribute), args))
        present = np.fromiter(map(is_not, values, repeat(None)), bool, len(values))
        if not present.any():
            continue
        positions = np.flatnonzero(present)
        out[attribute] = (rows_of_args[positions], list(map(values.__getitem__, positions.tolist())))
    return out


@record
class _Decoded:
    """The document's records (typed `_Event`s) and top-level fields, and what decoding them cost."""

    records: list
    schema_version: int | None = None
    device_properties: list[dict[str, Any]] = field(default_factory=list)
    distributed_info: dict[str, Any] = field(default_factory=dict)
    display_time_unit: str | None = None
    base_time_ns: int | None = None
    drops: Counter[str] = field(default_factory=Counter)
    cut: str | None = None  # the cut's sentence ("it ends after 12 complete records; ..."), if cut


class _LooseDocument(msgspec.Struct, gc=False):
    """The top level with every field untyped: for a document the typed decoder refused."""

    traceEvents: Any = msgspec.field(default_factory=list)  # noqa: N815 (the format's names)
    schemaVersion: Any = None  # noqa: N815
    deviceProperties: Any = None  # noqa: N815
    distributedInfo: Any = None  # noqa: N815
    displayTimeUnit: Any = None  # noqa: N815
    baseTimeNanoseconds: Any = None  # noqa: N815


# Numbers beyond float64 (1e400) become inf (then a time out of range) instead of failing the document.
_LOOSE_DOCUMENT = msgspec.json.Decoder(_LooseDocument, float_hook=float)
_LOOSE_ARRAY = msgspec.json.Decoder(Any, float_hook=float)
# Deeper than any trace-event field nests (an arg's value holds a few levels at most): values below
# this are replaced before decoding when the decoder would recurse too deep (and in the untyped decode).
MAX_NESTING = 64
_BLANK = re.compile(rb"[^ \t\n\r]")  # JSON's whitespace (RFC 8259, section 2)
_UTF8_BOM = b"\xef\xbb\xbf"
# Byte-order marks and, without one, the zero bytes around a first ASCII character (RFC 4627, section 3).
_WIDE_ENCODINGS = (
    (b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32 (big-endian)"),
    (b"\xff\xfe\x00\x00", "utf-32-le", "UTF-32 (little-endian)"),
    (b"\xfe\xff", "utf-16-be", "UTF-16 (big-endian)"),
    (b"\xff\xfe", "utf-16-le", "UTF-16 (little-endian)"),
)


def _wide_encoding(head: bytes) -> tuple[int, str, str] | None:
    """(bytes of byte-order mark, codec, name) of a UTF-16 or UTF-32 document, else None."""
    for mark, codec, name in _WIDE_ENCODINGS:
        if head.startswith(mark):
            return len(mark), codec, name
    if len(head) >= 4 and head[:3] == b"\0\0\0" and head[3]:
        return 0, "utf-32-be", "UTF-32 (big-endian)"
    if len(head) >= 4 and head[0] and head[1:4] == b"\0\0\0":
        return 0, "utf-32-le", "UTF-32 (little-endian)"
    if len(head) >= 2 and head[0] == 0 and head[1]:
        return 0, "utf-16-be", "UTF-16 (big-endian)"
    if len(head) >= 2 and head[0] and head[1] == 0:
        return 0, "utf-16-le", "UTF-16 (little-endian)"
    return None


def _utf8_text(path: ProfileFile, data: bytes | bytearray | memoryview) -> memoryview:
    """The document as UTF-8 from its first non-blank byte: a UTF-8 byte-order mark skipped, UTF-16 and
    UTF-32 (which JSON's RFC 8259 forbids, and Windows tools write) converted."""
    view = memoryview(data)
    head = bytes(view[:4])
    if head.startswith(_UTF8_BOM):
        view = view[len(_UTF8_BOM) :]
    else:
        wide = _wide_encoding(head)
        if wide is not None:
            skip, codec, name = wide
            try:
                view = memoryview(str(view[skip:], codec).encode("utf-8"))
            except (UnicodeDecodeError, UnicodeEncodeError) as exc:
                raise ProfileError(
                    path, f"the file is {name} text that does not decode ({exc.reason})"
                ) from None
    first = _BLANK.search(view)
    if first is None:
        raise ProfileError(path, "the file holds no JSON (it is empty or blank)")
    return view[first.start() :]


def _decode_document(
    path: ProfileFile, text: memoryview | bytes | bytearray, gzip_cut: bool, losses: list
) -> _Decoded:
    """The typed decode; where it refuses, the repair that lets the document load (once each)."""
    array_form = bytes(text[:1]) == b"["  # the format's array form: the records alone
    loose = bounded = utf8_fixed = closed = False
    while True:
        try:
            if loose:
                document = (_LOOSE_ARRAY if array_form else _LOOSE_DOCUMENT).decode(text)
                decoded = _from_loose(path, document, array_form)
            elif array_form:
                decoded = _Decoded(_EVENT_LIST.decode(text))
            else:
                decoded = _from_typed(_DOCUMENT.decode(text))
            if closed:
                decoded.cut = cut = _cut_sentence(len(decoded.records), gzip_cut)
                losses.append((f"{display_path(path)} is cut short: {cut}.", f"the file is cut short: {cut}"))
            return decoded
        except RecursionError:
            if bounded:
                raise ProfileError(path, f"its JSON nests deeper than {MAX_NESTING} levels") from None
            text, bounded = _bound_nesting(text), True
        except msgspec.ValidationError as exc:
            if loose:
                raise ProfileError(
                    path, f"it is not a trace-event JSON file ({_lower_first(str(exc))})"
                ) from None
            loose = True
            if not bounded:  # the untyped decode builds every value: none may nest deep
                text, bounded = _bound_nesting(text), True
        except msgspec.DecodeError as exc:
            message = str(exc)
            if "utf-8" in message.lower() and not utf8_fixed:
                text, replaced = _replace_invalid_utf8(text)
                utf8_fixed = True
                noun = "sequence" if replaced == 1 else "sequences"
                cause = f"{replaced:,} invalid UTF-8 {noun} replaced by U+FFFD"
                losses.append((f"{display_path(path)}: {cause}.", cause))
            elif "truncated" in message.lower() and not closed:
                text, closed = _close_cut(path, text, array_form, gzip_cut), True
            elif "truncated" in message.lower():
                raise ProfileError(path, f"the file is cut short: {_cut_sentence(0, gzip_cut)}") from None
            else:
                raise ProfileError(path, f"the file is not valid JSON ({_lower_first(message)})") from None


def _from_typed(document: _Document) -> _Decoded:
    return _Decoded(
        records=document.traceEvents,
        schema_version=document.schemaVersion,
        device_properties=list(document.deviceProperties or []),
        distributed_info=dict(document.distributedInfo or {}),
        display_time_unit=document.displayTimeUnit,
        base_time_ns=document.baseTimeNanoseconds,
    )


def _from_loose(path: ProfileFile, document: Any, array_form: bool) -> _Decoded:
    """Records of any shape made typed records, or counted as dropped under their first bad field
    (a Python pass per record: only documents the typed decode refused come here)."""
    raw = document if array_form else document.traceEvents
    if not isinstance(raw, list):
        raise ProfileError(path, "it is not a trace-event JSON file (`traceEvents` is not a list)")
    drops: Counter[str] = Counter()
    records = []
    for item in raw:
        coerced = _coerce(item)
        if isinstance(coerced, str):
            drops[coerced] += 1
        else:
            records.append(coerced)
    if raw and not records:
        raise ProfileError(path, f"it is not a trace-event JSON file ({_drop_sentence(drops)}, none kept)")
    decoded = _Decoded(records=records, drops=drops)
    if not array_form:
        if isinstance(document.schemaVersion, int) and not isinstance(document.schemaVersion, bool):
            decoded.schema_version = document.schemaVersion
        if isinstance(document.deviceProperties, list):
            decoded.device_properties = [p for p in document.deviceProperties if isinstance(p, dict)]
        if isinstance(document.distributedInfo, dict):
            decoded.distributed_info = document.distributedInfo
        if isinstance(document.displayTimeUnit, str):
            decoded.display_time_unit = document.displayTimeUnit
        base = document.baseTimeNanoseconds
        if type(base) is int and -_INT64 <= base < _INT64:
            decoded.base_time_ns = base
    return decoded


_KNOWN_PHASES = frozenset(_PHASE_CODES) - {"C"}
_META_FIELDS = {"process_name": "name", "thread_name": "name", "process_labels": "labels"}


def _coerce(item: Any) -> _Event | str:
    """One record as an `_Event`, or why it cannot be one (a sentence fragment naming the field)."""
    if not isinstance(item, dict):
        return "a record is not a JSON object"
    ph = item.get("ph", "")
    if not isinstance(ph, str):
        return "`ph` is not a string"
    if ph not in _KNOWN_PHASES:
        return _Event(ph=ph)  # phases the reader skips: their other fields are not read
    fields: dict[str, Any] = {"ph": ph}
    for key in ("name", "cat", "bp"):
        value = item.get(key, "")
        if not isinstance(value, str):
            return f"`{key}` is not a string"
        fields[key] = value
    for key in ("pid", "tid"):
        value = item.get(key, 0)
        if type(value) not in (int, str):
            return f"`{key}` is not a number or a string"
        fields[key] = value
    for key in ("ts", "dur"):
        value = item.get(key, 0.0)
        if type(value) not in (int, float):
            return f"`{key}` is not a number"
        try:
            fields[key] = float(value)
        except OverflowError:  # an integer beyond float64: out of range, as the range check says
            fields[key] = float("inf")
    flow_id = item.get("id")
    if flow_id is not None and type(flow_id) not in (int, str):
        return "`id` is not a number or a string"
    fields["id"] = flow_id
    args = item.get("args")
    if args is not None:
        if not isinstance(args, dict):
            return "`args` is not an object"
        fields["args"] = msgspec.convert(args, _Args, str_keys=True)
    return _Event(**fields)


def _cut_sentence(complete: int, gzip_cut: bool) -> str:
    """What is missing, as the end of one sentence, in the XPlane reader's words."""
    ends = "its gzip data ends" if gzip_cut else "it ends"
    if complete == 0:
        return f"{ends} inside its first record"
    noun = "record" if complete == 1 else "records"
    return f"{ends} after {complete:,} complete {noun}; any records after them are missing"


# Byte classes for the structure scan: 1 `{`, 2 `[`, 3 `}`, 4 `]`, 5 `"`, 6 `\`.
_CLASSES = np.zeros(256, np.uint8)
for _code, _char in enumerate(b'{[}]"\\', start=1):
    _CLASSES[_char] = _code


def _structure(text: memoryview | bytes | bytearray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The brackets outside strings: their byte offsets, kinds (1-4 as in _CLASSES) and the nesting depth
    after each. numpy passes over the bytes; used only for documents the decoder refused."""
    kinds = _CLASSES[np.frombuffer(text, np.uint8)]
    position = np.flatnonzero(kinds)
    kind = kinds[position]
    del kinds
    backslash = kind == 6
    escaped = np.zeros(len(kind), bool)
    if backslash.any():  # a quote is escaped by an odd run of backslashes right before it
        index = np.arange(len(kind))
        follows = np.zeros(len(kind), bool)
        follows[1:] = backslash[:-1] & (position[1:] == position[:-1] + 1)
        run_start = np.maximum.accumulate(np.where(backslash & ~follows, index, 0))
        run = index - run_start + 1
        escaped[1:] = follows[1:] & (run[:-1] % 2 == 1)
    quote = (kind == 5) & ~escaped
    outside = (np.cumsum(quote) & 1) == 0
    bracket = (kind <= 4) & outside
    position, kind = position[bracket], kind[bracket]
    depth = np.cumsum(np.where(kind <= 2, 1, -1))
    return position, kind, depth


def _bound_nesting(text: memoryview | bytes | bytearray) -> bytearray | memoryview | bytes:
    """The document with every value nested deeper than MAX_NESTING replaced by 0 (and blanks), so
    the decoder never recurses past it: an unknown key's deep value is skipped as before, a kept
    field's is then of the wrong type."""
    position, kind, depth = _structure(text)
    deep = np.flatnonzero((kind <= 2) & (depth == MAX_NESTING + 1))
    if not len(deep):
        return text
    back = np.flatnonzero((kind > 2) & (depth == MAX_NESTING))
    after = np.searchsorted(back, deep)  # each deep value ends at the first return to MAX_NESTING
    closed = after < len(back)
    ends = np.full(len(deep), len(text) - 1, np.int64)  # a value the cut leaves open: to the end
    ends[closed] = position[back[after[closed]]]
    out = bytearray(text)
    for start, end in zip(position[deep].tolist(), ends.tolist(), strict=True):  # one per deep value
        out[start : end + 1] = b"0" + b" " * (end - start)
    return out


def _close_cut(
    path: ProfileFile, text: memoryview | bytes | bytearray, array_form: bool, gzip_cut: bool
) -> bytes:
    """A document cut short, ended after its last complete record (or top-level entry) and closed."""
    position, kind, depth = _structure(text)
    if len(depth) and depth[-1] == 0:  # balanced: not cut, malformed (e.g. a lone surrogate escape)
        raise ProfileError(path, "the file is not valid JSON (a string or number in it is malformed)")
    records_depth = 1 if array_form else 2
    complete = np.flatnonzero((kind > 2) & (depth >= 1) & (depth <= records_depth))
    if not len(complete):
        raise ProfileError(
            path, f"the file is cut short before its first complete event ({_cut_sentence(0, gzip_cut)})"
        )
    last = int(complete[-1])
    closers = []
    opens = np.flatnonzero(kind[:last] <= 2)
    for level in range(int(depth[last]), 0, -1):
        opener = opens[depth[opens] == level][-1]
        closers.append(b"}" if kind[opener] == 1 else b"]")
    return bytes(text[: int(position[last]) + 1]) + b"".join(closers)


def _replace_invalid_utf8(text: memoryview | bytes | bytearray) -> tuple[bytes, int]:
    """The text with each invalid UTF-8 sequence replaced by U+FFFD, and how many were."""
    raw = bytes(text)
    fixed = raw.decode("utf-8", errors="replace")
    replaced = fixed.count("\ufffd") - raw.count("\ufffd".encode())
    return fixed.encode("utf-8"), max(replaced, 1)


def _lower_first(text: str) -> str:
    """A message's first letter in lower case, unless it starts an acronym ("JSON is malformed")."""
    if not text or text[1:2].isupper():
        return text
    return text[:1].lower() + text[1:]


def read_json_bytes(path: ProfileFile, data: bytes) -> tuple[bytes, bool]:
    """The file's JSON bytes, gunzipped once more if the gunzipped bytes are gzip again (a file
    compressed twice), and whether that gzip stream ended early; errors are ProfileErrors."""
    if data[:2] != GZIP_MAGIC:
        return data, False
    return gunzip_salvaging(path, data, skip_leading_blanks=True)
