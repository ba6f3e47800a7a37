"""The trace-event JSON readers: PyTorch's profiler (Kineto) and Chrome trace JSON (TSL's
`<host>.trace.json.gz` beside each JAX XPlane file, Perfetto's JSON export). One pipeline for both:
`native` (bytes to columns in C, `_jsontok.c`) or, for files it declines, `parse` (msgspec records
to the same columns), `build` (columns to the model), a mapping per dialect (`kineto`,
`tsl`), and `reader` choosing the mapping of each file from what it holds."""

from __future__ import annotations

from tpuscope.readers.registry import Reader

_LOAD = "tpuscope.readers.trace_event.reader:load_trace_event_files"
# Kineto's own top-level keys (libkineto/src/output_json.cpp writes them before `traceEvents`).
_KINETO_KEYS = (b'"schemaVersion"', b'"deviceProperties"', b'"distributedInfo"')


def looks_like_json(head: bytes) -> bool:
    """The first bytes of a (decompressed) file open a JSON object or array (after a UTF-8
    byte-order mark and blanks, which the reader skips too)."""
    return head.removeprefix(b"\xef\xbb\xbf").lstrip()[:1] in (b"{", b"[")


def looks_like_kineto(head: bytes) -> bool:
    return looks_like_json(head) and any(key in head for key in _KINETO_KEYS)


# Run folders' names for them: torch.profiler.tensorboard_trace_handler writes
# `<worker>.<time>.pt.trace.json(.gz)`, HTA's traces are `*.json.gz`, JAX writes `<host>.trace.json.gz`.
KINETO_READER = Reader(
    name="kineto",
    title="PyTorch profiler (Kineto)",
    suffixes=(".pt.trace.json", ".pt.trace.json.gz"),
    sniff=looks_like_kineto,
    load=_LOAD,
)
CHROME_READER = Reader(
    name="chrome",
    title="Chrome trace-event JSON",
    suffixes=(".trace.json", ".trace.json.gz", ".json.gz"),
    named_suffixes=(".json",),
    sniff=looks_like_json,
    load=_LOAD,
)
