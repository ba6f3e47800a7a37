"""The trace-event JSON reader: how each file is read and mapped (Kineto or Chrome/TSL)."""

from __future__ import annotations

import mmap
from collections.abc import Sequence
from typing import Any

from tpuscope.errors import ProfileError
from tpuscope.model.trace import Trace
from tpuscope.readers.files import GZIP_MAGIC, map_file, read_profile_bytes
from tpuscope.readers.registry import MemoryFile, ProfileFile, ProgressCallback, report_progress
from tpuscope.readers.trace_event import native
from tpuscope.readers.trace_event.build import Mapping, load_json_files
from tpuscope.readers.trace_event.kineto import KinetoMapping, is_kineto
from tpuscope.readers.trace_event.parse import (
    TraceEventFile,
    _utf8_text,
    read_json_bytes,
    read_trace_events,
)
from tpuscope.readers.trace_event.tsl import ChromeMapping, is_tsl


def read_file(path: ProfileFile, use_c: bool = True) -> TraceEventFile:
    """One file's columns (or a profile held in memory's: the same code reads its bytes): through the C
    decoder (a `.json.gz` streamed into it), else, where it declines or `use_c` is off, through msgspec
    with every repair (parse.py)."""
    declined = None
    if use_c:
        magic = _magic(path)
        if magic == GZIP_MAGIC:
            result = native.read_gzip(path)
        elif magic:
            result = _read_plain(path)
        else:
            result = native.Declined("the file cannot be read")
        if isinstance(result, TraceEventFile):
            return result
        declined = result.reason
    # OS and gzip errors as ProfileErrors; gunzipped as a stream, its leading blanks skipped.
    data, gzip_cut = read_profile_bytes(path, skip_leading_blanks=True)
    data, inner_cut = read_json_bytes(path, data)
    file = read_trace_events(path, data, gzip_cut or inner_cut)
    if declined is not None:
        file.decoder = f"msgspec ({declined})"
    return file


def _magic(path: ProfileFile) -> bytes:
    """The first two bytes (b"" when unreadable: the whole-file read then says what is wrong)."""
    if isinstance(path, MemoryFile):
        return path.data[:2]
    try:
        with open(path, "rb") as handle:
            return handle.read(2)
    except OSError:
        return b""


def _read_plain(path: ProfileFile) -> TraceEventFile | native.Declined:
    """A plain file through the C decoder straight from the page cache (files.map_file: mapped, not
    copied, with its known limit), a profile held in memory from its own bytes; a mapping is closed
    before the columns are made, so the peak holds one of them."""
    if isinstance(path, MemoryFile):
        read = _feed_buffer(path, path.data)
    else:
        mapped = map_file(path)
        if mapped is None:  # empty or unmappable: the whole-file read says what it is
            return native.Declined("the file cannot be mapped")
        with mapped:
            if hasattr(mmap, "MADV_SEQUENTIAL"):
                mapped.madvise(mmap.MADV_SEQUENTIAL)
            read = _feed_buffer(path, mapped)
    return read if isinstance(read, native.Declined) else native.file_of(path, read)


def _feed_buffer(path: ProfileFile, buffer: mmap.mmap | bytes) -> Any:
    """The decoder after the text of `buffer`, every view of it released (so a mapping can close)."""
    with memoryview(buffer) as view:
        try:
            text = _utf8_text(path, view)
        except ProfileError:  # blank or undecodable: the whole-file read raises it
            return native.Declined("the text is not JSON in UTF-8, UTF-16 or UTF-32")
        try:
            return native.feed_text(text)
        finally:
            if isinstance(text, memoryview):
                text.release()


def _choose(file: TraceEventFile, kineto: KinetoMapping | None = None) -> Mapping:
    """The file's mapping; `kineto`: the one Kineto mapping of a load, so that the passes over the
    whole trace (each kernel's launching op and Python source, the notes) run once, not per rank."""
    if is_kineto(file):
        return kineto if kineto is not None else KinetoMapping()
    return ChromeMapping(tsl=is_tsl(file))


def load_trace_event_files(
    files: Sequence[ProfileFile], progress: ProgressCallback | None = None, strict: bool = False
) -> Trace:
    """Loads trace-event JSON files (one per host or rank) into one Trace. Records that fail their
    checks are dropped and a document cut short loads the records before the cut, each said in
    `Trace.load_warnings`; with `strict` any of these is a ProfileError instead."""
    kineto = KinetoMapping()
    return load_json_files(
        files,
        read_file,
        lambda file: _choose(file, kineto),
        lambda fraction, what: report_progress(progress, fraction, what),
        strict,
    )
