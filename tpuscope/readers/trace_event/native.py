"""Trace-event JSON to columns through the C decoder (`_jsontok.c`): no Python object per record.

The C decoder reads the bytes once into columns (phase, name and category ids, thread ids, ts, dur,
flow keys, kept args as (attribute, row, kind, value) rows) and string tables; this module turns them
into the `EventColumns`/`FlowColumns` the msgspec path (parse.py) makes, with the same numpy checks
(times the model can hold) and the same id order (first appearance among the kept records, as the
msgspec path's interners number them). The few Python objects left are per distinct string, per
metadata record and per top-level field, decoded with parse.py's own msgspec types.

Where the C decoder declines (any input it would not read exactly as the typed msgspec decode does:
see `_jsontok.c`), the caller reads the file through parse.py, which repairs what can be repaired;
`Declined` says why: invalid UTF-8 or a lone surrogate escape in any string, nesting past
MAX_NESTING, a document cut short, a record that is not an object or a field of another type than the
typed decode's (`ph`/`name`/`cat`/`bp` not a string, `pid`/`tid`/`id` not an int64 or a string, `ts`/
`dur` not a number, `args` not an object), a number beyond float64 where it is kept, two
`traceEvents`, bytes after the document, a top-level field of the wrong type; for a `.json.gz` also a
cut or corrupted stream, gzip inside gzip, UTF-16/32 text and an expansion past the reader's bounds.
Real files are never declined (tests/readers/trace_event/test_c_decoder.py).

A `.json.gz` is streamed: gunzipped in pieces straight into the decoder, so the decompressed text is
never held whole.
"""

from __future__ import annotations

import io
import zlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import msgspec
import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.records import record
from tpuscope.readers import files
from tpuscope.readers.files import GZIP_MAGIC, MAX_GZIP_EXPANSION
from tpuscope.readers.registry import MemoryFile, ProfileFile
from tpuscope.readers.trace_event import _jsontok
from tpuscope.readers.trace_event.parse import (
    _DOCUMENT,
    _UTF8_BOM,
    ARG_COLUMNS,
    MAX_NESTING,
    EventColumns,
    FlowColumns,
    TraceEventFile,
    _Args,
    _bad_threads,
    _Decoded,
    _Event,
    _from_typed,
    _middle,
    _times_in_range,
    _wide_encoding,
    finish_file,
)

# Arg value kinds written by _jsontok.c.
ARG_ABSENT, ARG_INT, ARG_FLOAT, ARG_STR, ARG_JSON = range(5)
# Decompressed bytes per piece fed to the decoder, and compressed bytes read per step.
_GZIP_PIECE_BYTES = 16 << 20
_GZIP_READ_BYTES = 1 << 20
_EVENT = msgspec.json.Decoder(_Event)
_ANY = msgspec.json.Decoder(Any)


def _arg_keys() -> tuple[bytes, ...]:
    encoded = {f.name: f.encode_name for f in msgspec.structs.fields(_Args)}
    return tuple(encoded[attribute].encode() for attribute, _ in ARG_COLUMNS)


_ARG_KEYS = _arg_keys()


@record(frozen=True)
class Declined:
    """The C decoder did not take the file: why (a sentence fragment, e.g. "a string is not valid UTF-8")."""

    reason: str


@record
class ArgValues:
    """One kept arg's values on the events that carry it, as the C decoder wrote them: per row a kind
    (ARG_INT, ARG_FLOAT, ARG_STR, ARG_JSON) and an int64 (the integer, the double's bits, an id into
    `strings`, or an index into `json_texts`)."""

    kind: np.ndarray  # uint8
    value: np.ndarray  # int64
    strings: list[str]
    json_texts: list[bytes]

    def __len__(self) -> int:
        return len(self.kind)

    def all_of(self, *kinds: int) -> bool:
        if len(kinds) == 1:
            return bool((self.kind == kinds[0]).all())
        return bool(order_statistics.isin(self.kind, kinds).all())

    def numbers(self) -> np.ndarray:
        """As float64, for rows of kinds ARG_INT and ARG_FLOAT (what np.array(values, float64) gives)."""
        out = self.value.astype(np.float64)
        is_float = self.kind == ARG_FLOAT
        out[is_float] = self.value[is_float].view(np.float64)
        return out

    def tolist(self) -> list:
        """The values as the msgspec path holds them (int, float, str, or what the JSON text decodes to)."""
        out: list = self.value.tolist()
        floats = self.value.view(np.float64)
        strings, texts = self.strings, self.json_texts
        for row in np.flatnonzero(self.kind != ARG_INT).tolist():
            kind = int(self.kind[row])
            if kind == ARG_FLOAT:
                out[row] = float(floats[row])
            elif kind == ARG_STR:
                out[row] = strings[out[row]]
            else:
                out[row] = _ANY.decode(texts[out[row]])
        return out


def _column(raw: bytes, dtype: type) -> np.ndarray:
    return np.frombuffer(raw, dtype)


def _pieces(arena: bytes, offsets: bytes) -> list[bytes]:
    bounds = np.frombuffer(offsets, np.int64).tolist()
    return [arena[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def renumber_ids(ids: np.ndarray, table: int) -> tuple[np.ndarray, np.ndarray]:
    """Ids renumbered by first appearance, and the old id of each new one."""
    new, old = _jsontok.renumber(np.ascontiguousarray(ids), table, ids.dtype.itemsize)
    return np.frombuffer(new, np.int64), np.frombuffer(old, np.int64)


def new_decoder() -> Any:
    return _jsontok.Decoder(_ARG_KEYS, len(_ARG_KEYS), MAX_NESTING)


def decode_text(path: ProfileFile, text: memoryview | bytes) -> TraceEventFile | Declined:
    """A whole document (UTF-8, from its first non-blank byte) through the C decoder."""
    read = feed_text(text)
    return read if isinstance(read, Declined) else file_of(path, read)


def feed_text(text: memoryview | bytes) -> Any:
    """The decoder after reading a whole document, or why it declined; the text is not needed after
    this (the caller may free it before `file_of`)."""
    decoder = new_decoder()
    reason = decoder.feed(text, True)
    return decoder if reason is None else Declined(reason)


def file_of(path: ProfileFile, decoder: Any) -> TraceEventFile | Declined:
    """The file from a decoder that read a whole document."""
    return _file_from(path, decoder.finish())


class _Decline(Exception):
    """The gzip stream is one the streaming read leaves to the whole-file read (which reports it)."""


def read_gzip(path: ProfileFile) -> TraceEventFile | Declined:
    """A `.json.gz` gunzipped in pieces into the C decoder (every gzip member, zero padding between
    them), from the file or from a profile held in memory; anything unusual (a cut or corrupted
    stream, a wide encoding, gzip inside gzip, an expansion past MAX_GZIP_EXPANSION) is declined,
    for the whole-file read that reports it."""
    decoder = new_decoder()
    try:
        # A profile held in memory streams from its own bytes (BytesIO shares them, no copy), under the
        # same bounds as a file: MAX_GZIP_EXPANSION times its compressed size, and _memory_bound().
        with io.BytesIO(path.data) if isinstance(path, MemoryFile) else open(path, "rb") as handle:
            limit = files.profile_size(path) * MAX_GZIP_EXPANSION
            reason = _feed(decoder, _gunzipped(handle, limit), _memory_bound())
    except OSError as exc:
        return Declined(f"the file cannot be read ({exc.strerror or exc})")
    except zlib.error:
        return Declined("the gzip data is corrupted")
    except _Decline as exc:
        return Declined(str(exc))
    if reason is not None:
        return Declined(reason)
    return _file_from(path, decoder.finish())


def _gunzipped(handle: Any, limit: int) -> Iterator[bytes]:
    """The decompressed bytes of every gzip member, in pieces of at most _GZIP_PIECE_BYTES."""
    stream = zlib.decompressobj(16 + zlib.MAX_WBITS)
    fed = False  # whether the current member has been given any bytes
    total = 0
    while data := handle.read(_GZIP_READ_BYTES):
        while data:
            if not fed:
                data = data.lstrip(b"\0")  # gzip allows zero padding between members
                if not data:
                    break
            out = stream.decompress(data, _GZIP_PIECE_BYTES)
            fed = True
            total += len(out)
            if total > limit:
                raise _Decline("the gzip data expands past the reader's bound")
            if out:
                yield out
            data = stream.unconsumed_tail
            if stream.eof:
                data = stream.unused_data
                stream, fed = zlib.decompressobj(16 + zlib.MAX_WBITS), False
    while fed and not stream.eof:  # the input is all in: what zlib still holds
        out = stream.decompress(b"", _GZIP_PIECE_BYTES)
        if not out:
            break
        yield out
    if fed and not stream.eof:
        raise _Decline("the gzip data is cut short")


def _memory_bound() -> int | None:
    """What a streamed load may hold: the share of free memory the whole-file read may take
    (tpuscope.readers.files.GZIP_MEMORY_SHARE), applied to what is held instead of to the text."""
    free = files.available_memory()
    return None if free is None else int(free * files.GZIP_MEMORY_SHARE)


def _feed(decoder: Any, pieces: Iterator[bytes], bound: int | None = None) -> str | None:
    """Feeds the text to the decoder, its first bytes checked as parse.py's `_utf8_text` does;
    declined when the decoder comes to hold more than `bound` bytes."""
    head: bytes | None = b""  # the first bytes, held until the encoding is known
    for piece in pieces:
        if head is not None:
            head += piece
            if len(head) < 4:
                continue
            piece, head = _checked_head(head), None
        reason = _feed_one(decoder, piece, False, bound)
        if reason is not None:
            return reason
    if head is not None:
        reason = _feed_one(decoder, _checked_head(head), False, bound)
        if reason is not None:
            return reason
    return _feed_one(decoder, b"", True, bound)


def _feed_one(decoder: Any, piece: bytes, final: bool, bound: int | None) -> str | None:
    reason = decoder.feed(piece, final)
    if reason is None and bound is not None and decoder.held() > bound:
        return "the load would hold more than its share of free memory"
    return reason


def _checked_head(head: bytes) -> bytes:
    if head[:2] == GZIP_MAGIC:
        raise _Decline("the file is gzip inside gzip")
    if head.startswith(_UTF8_BOM):
        return head[len(_UTF8_BOM) :]
    if _wide_encoding(head[:4]) is not None:
        raise _Decline("the file is UTF-16 or UTF-32 text")
    return head


def _file_from(path: ProfileFile, out: dict) -> TraceEventFile | Declined:
    decoded = _Decoded(records=[])
    if not out["array_form"]:
        members = _pieces(out["top_arena"], out["top_offsets"])
        try:
            decoded = _from_typed(_DOCUMENT.decode(b"{" + b",".join(members) + b"}"))
        except (msgspec.ValidationError, msgspec.DecodeError):
            return Declined("a top-level field has another type than the format's")
    try:
        meta = [_EVENT.decode(text) for text in _pieces(out["meta_arena"], out["meta_offsets"])]
    except (msgspec.ValidationError, msgspec.DecodeError):
        return Declined("a metadata record does not decode")
    names, threads = out["names"], out["threads"]
    drops: Counter[str] = Counter()
    losses: list[tuple[str, str]] = []
    ts_us, dur_us = _column(out["ev_ts"], np.float64), _column(out["ev_dur"], np.float64)
    flow_ts_us = _column(out["fl_ts"], np.float64)
    raw_event_thread = _column(out["ev_thread"], np.int32)
    raw_flow_thread = _column(out["fl_thread"], np.int32)
    # Threads are numbered by first appearance among all events, then all flows (the msgspec path's order).
    thread, thread_order = renumber_ids(np.concatenate([raw_event_thread, raw_flow_thread]), len(threads))
    thread_list = [threads[i] for i in thread_order.tolist()]
    event_thread, flow_thread = thread[: len(ts_us)], thread[len(ts_us) :]
    bad_thread = _bad_threads(thread_list)
    event_keep = _times_in_range(ts_us, dur_us, bad_thread[event_thread], drops, _middle(ts_us))
    flow_keep = _times_in_range(flow_ts_us, None, bad_thread[flow_thread], drops, _middle(ts_us[event_keep]))
    event_phase = _column(out["ev_phase"], np.uint8)
    event_name, event_cat = _column(out["ev_name"], np.int32), _column(out["ev_cat"], np.int32)
    flow_phase, flow_cat = _column(out["fl_phase"], np.uint8), _column(out["fl_cat"], np.int32)
    flow_key, flow_bp = _column(out["fl_key"], np.int32), _column(out["fl_bp"], np.uint8)
    if not event_keep.all():
        event_phase, event_name, event_cat, event_thread, ts_us, dur_us = (
            column[event_keep] for column in (event_phase, event_name, event_cat, event_thread, ts_us, dur_us)
        )
    if not flow_keep.all():
        flow_phase, flow_cat, flow_thread, flow_ts_us, flow_key, flow_bp = (
            column[flow_keep] for column in (flow_phase, flow_cat, flow_thread, flow_ts_us, flow_key, flow_bp)
        )
    name, name_order = renumber_ids(event_name, len(names))
    category, category_order = renumber_ids(np.concatenate([event_cat, flow_cat]), len(names))
    flow_id, _ = renumber_ids(flow_key, out["flow_keys"])
    events = EventColumns(
        phase=event_phase,
        name=name,
        category=category[: len(event_cat)],
        thread=event_thread,
        ts_us=ts_us,
        dur_us=dur_us,
        names=[names[i] for i in name_order.tolist()],
        categories=[names[i] for i in category_order.tolist()],
        threads=thread_list,
        args=_args(out, event_keep),
    )
    flows = FlowColumns(
        phase=flow_phase,
        flow_id=flow_id,
        category=category[len(event_cat) :],
        thread=flow_thread,
        ts_us=flow_ts_us,
        binds_enclosing=flow_bp.astype(bool),
    )
    file = finish_file(path, events, flows, meta, decoded, drops, out["counters"], losses)
    file.decoder = "c"
    return file


def _args(out: dict, event_keep: np.ndarray) -> dict[str, tuple[np.ndarray, Any]]:
    """Per kept arg (in ARG_COLUMNS order), the rows that carry it and their values; rows of dropped
    events left out and the rest renumbered."""
    strings = out["arg_strings"]
    texts = _pieces(out["json_arena"], out["json_offsets"])
    new_row = None if event_keep.all() else np.cumsum(event_keep) - 1
    result: dict[str, tuple[np.ndarray, Any]] = {}
    for (attribute, _), (rows, kinds, values) in zip(ARG_COLUMNS, out["args"], strict=True):
        if not rows:
            continue
        row, kind, value = _column(rows, np.int64), _column(kinds, np.uint8), _column(values, np.int64)
        if new_row is not None:
            kept = event_keep[row]
            row, kind, value = new_row[row[kept]], kind[kept], value[kept]
            if not len(row):
                continue
        result[attribute] = (row, ArgValues(kind, value, strings, texts))
    return result
