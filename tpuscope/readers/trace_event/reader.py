"""The trace-event JSON reader: how each file is read and mapped (Kineto or Chrome/TSL)."""

from __future__ import annotations

from pathlib import Path

from tpuscope.model.trace import Trace
from tpuscope.readers.files import read_profile_bytes
from tpuscope.readers.registry import ProgressCallback, report_progress
from tpuscope.readers.trace_event.build import Mapping, load_json_files
from tpuscope.readers.trace_event.kineto import KinetoMapping, is_kineto
from tpuscope.readers.trace_event.parse import TraceEventFile, read_json_bytes, read_trace_events
from tpuscope.readers.trace_event.tsl import ChromeMapping, is_tsl


def _read(path: Path) -> TraceEventFile:
    # OS and gzip errors as ProfileErrors; gunzipped as a stream, its leading blanks skipped.
    data, gzip_cut = read_profile_bytes(path, skip_leading_blanks=True)
    data, inner_cut = read_json_bytes(path, data)
    return read_trace_events(path, data, gzip_cut or inner_cut)


def _choose(file: TraceEventFile) -> Mapping:
    if is_kineto(file):
        return KinetoMapping()
    return ChromeMapping(tsl=is_tsl(file))


def load_trace_event_files(
    files: list[Path], progress: ProgressCallback | None = None, strict: bool = False
) -> Trace:
    """Loads trace-event JSON files (one per host or rank) into one Trace. Records that fail their
    checks are dropped and a document cut short loads the records before the cut, each said in
    `Trace.load_warnings`; with `strict` any of these is a ProfileError instead."""
    return load_json_files(
        files, _read, _choose, lambda fraction, what: report_progress(progress, fraction, what), strict
    )
