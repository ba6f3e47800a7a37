"""Trace-event JSON (the Chrome trace event format) -> plain numpy columns.

PyTorch's profiler (Kineto), TSL (the `<host>.trace.json.gz` JAX writes beside each XPlane
file) and Perfetto's JSON export all write this format: a `traceEvents` list of records with a
phase `ph` (`X` complete, `i`/`I` instant, `M` metadata, `s`/`t`/`f` flow, `C` counter...),
`name`, `cat`, `pid`, `tid`, `ts` and `dur` in microseconds, and `args`. Format reference:
"Trace Event Format" (Google, docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU)
and Kineto's writer (pytorch/kineto, libkineto/src/output_json.cpp).

Parsing uses msgspec with typed structs (benchmarks/bench_json_parsers.py measured it against
orjson, simdjson and the standard library): only the fields below are decoded, unknown keys are
skipped in C, and each column is then pulled out with C-level iteration (`map`/`attrgetter`,
`np.fromiter`). The decoded records are temporaries of this module; only columns leave it.
"""

from __future__ import annotations

import gzip
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter, is_not
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from tpuscope.errors import ProfileError
from tpuscope.readers.files import GZIP_MAGIC


class _Args(msgspec.Struct, gc=False, rename={
    "external_id": "External id", "registers_per_thread": "registers per thread",
    "shared_memory": "shared memory", "occupancy": "est. achieved occupancy %",
    "bandwidth": "memory bandwidth (GB/s)", "collective_name": "Collective name",
    "in_msg_nelems": "In msg nelems", "out_msg_nelems": "Out msg nelems",
    "group_size": "Group size", "process_group_name": "Process Group Name",
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


@dataclass
class Interner:
    """Distinct strings -> dense ids, filled at C speed (`defaultdict.__missing__` calls `len`)."""

    ids: defaultdict = field(default_factory=defaultdict)

    def __post_init__(self) -> None:
        self.ids.default_factory = self.ids.__len__

    def many(self, values, n: int) -> np.ndarray:
        return np.fromiter(map(self.ids.__getitem__, values), np.int64, n)

    def strings(self) -> list:
        return list(self.ids)


@dataclass
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


@dataclass
class FlowColumns:
    """Flow records (`s`, `t`, `f`): where each flow id starts and ends."""

    phase: np.ndarray  # uint8
    flow_id: np.ndarray  # int64 ids into `ids`
    category: np.ndarray  # int64 ids into the events' categories
    thread: np.ndarray  # int64 ids into the events' threads
    ts_us: np.ndarray
    binds_enclosing: np.ndarray  # bool: "bp": "e" (bind to the enclosing slice)


@dataclass
class TraceEventFile:
    """One decoded trace-event JSON file."""

    path: Path
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


def read_trace_events(path: Path, data: bytes) -> TraceEventFile:
    """Decodes a trace-event JSON document; every malformation is a one-sentence ProfileError."""
    document = _decode_document(path, data)
    records = document.traceEvents
    get = attrgetter
    codes = np.fromiter(map(_PHASE_CODES.__getitem__, map(get("ph"), records)), np.uint8, len(records))
    is_event = (codes == PHASE_X) | (codes == PHASE_INSTANT)
    is_flow = (codes >= PHASE_FLOW_START) & (codes <= PHASE_FLOW_END)
    events = list(map(records.__getitem__, np.flatnonzero(is_event).tolist()))
    flows = list(map(records.__getitem__, np.flatnonzero(is_flow).tolist()))
    meta = list(map(records.__getitem__, np.flatnonzero(codes == PHASE_META).tolist()))
    counters = int((codes == PHASE_COUNTER).sum())
    del records
    names, categories, threads = Interner(), Interner(), Interner()
    n = len(events)
    event_columns = EventColumns(
        phase=codes[is_event],
        name=names.many(map(get("name"), events), n),
        category=categories.many(map(get("cat"), events), n),
        thread=threads.many(zip(map(get("pid"), events), map(get("tid"), events), strict=True), n),
        ts_us=np.fromiter(map(get("ts"), events), np.float64, n),
        dur_us=np.fromiter(map(get("dur"), events), np.float64, n),
        names=[],
        categories=[],
        threads=[],
        args=_arg_columns(events),
    )
    m = len(flows)
    flow_ids = Interner()
    flow_columns = FlowColumns(
        phase=codes[is_flow],
        flow_id=flow_ids.many(zip(map(get("cat"), flows), map(get("id"), flows), strict=True), m),
        category=categories.many(map(get("cat"), flows), m),
        thread=threads.many(zip(map(get("pid"), flows), map(get("tid"), flows), strict=True), m),
        ts_us=np.fromiter(map(get("ts"), flows), np.float64, m),
        binds_enclosing=np.fromiter(map(_BINDS_ENCLOSING.__getitem__, map(get("bp"), flows)), bool, m),
    )
    event_columns.names = names.strings()
    event_columns.categories = categories.strings()
    event_columns.threads = threads.strings()
    process_names: dict[int | str, str] = {}
    process_labels: dict[int | str, str] = {}
    thread_names: dict[tuple[int | str, int | str], str] = {}
    for record in meta:
        value = record.args.name if record.args is not None else None
        if record.name == "process_name" and value is not None:
            process_names[record.pid] = value
        elif record.name == "thread_name" and value is not None:
            thread_names[(record.pid, record.tid)] = value
        elif record.name == "process_labels" and record.args is not None and record.args.labels:
            process_labels[record.pid] = record.args.labels
    return TraceEventFile(
        path=path,
        events=event_columns,
        flows=flow_columns,
        process_names=process_names,
        process_labels=process_labels,
        thread_names=thread_names,
        schema_version=document.schemaVersion,
        device_properties=list(document.deviceProperties or []),
        distributed_info=dict(document.distributedInfo or {}),
        display_time_unit=document.displayTimeUnit,
        base_time_ns=document.baseTimeNanoseconds,
        counters_skipped=counters,
    )


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


def _decode_document(path: Path, data: bytes) -> _Document:
    stripped = data[:64].lstrip()
    if not stripped:
        raise ProfileError(path, "the file holds no JSON (it is empty or blank)")
    try:
        if stripped[:1] == b"[":  # the format's array form: the records alone
            return _Document(traceEvents=_EVENT_LIST.decode(data))
        return _DOCUMENT.decode(data)
    except msgspec.ValidationError as exc:
        raise ProfileError(path, f"it is not a trace-event JSON file ({_lower_first(str(exc))})") from None
    except msgspec.DecodeError as exc:
        text = str(exc)
        if "truncated" in text.lower():
            raise ProfileError(path, "the JSON is cut short (the file was truncated)") from None
        raise ProfileError(path, f"the file is not valid JSON ({_lower_first(text)})") from None


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text else text


def read_json_bytes(path: Path, data: bytes) -> bytes:
    """The file's JSON bytes, gunzipped if need be (gzip errors are ProfileErrors)."""
    if data[:2] != GZIP_MAGIC:
        return data
    try:
        return gzip.decompress(data)
    except EOFError:
        raise ProfileError(path, "the gzip data is cut short (the file was truncated)") from None
    except (OSError, zlib.error) as exc:
        raise ProfileError(path, f"the gzip data is corrupted ({exc})") from None
