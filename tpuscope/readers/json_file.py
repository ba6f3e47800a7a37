"""The trace-event JSON reader: which files it opens and how each is mapped (Kineto or Chrome/TSL)."""

from __future__ import annotations

from pathlib import Path

from tpuscope.model.trace import Trace
from tpuscope.readers.chrome import ChromeMapping, is_tsl
from tpuscope.readers.json_trace import Mapping, Progress, load_json_files
from tpuscope.readers.kineto import KinetoMapping, is_kineto
from tpuscope.readers.trace_events import TraceEventFile, read_json_bytes
from tpuscope.xplane.files import read_profile_bytes

# What a run folder's trace-event files are called: PyTorch's profiler writes `*.pt.trace.json(.gz)`
# (torch.profiler.tensorboard_trace_handler) or any `*.json.gz`; JAX `<host>.trace.json.gz`.
SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz", ".trace.json", ".trace.json.gz", ".json.gz")


def is_json_file(path: Path) -> bool:
    return path.name.endswith(SUFFIXES) or path.name.endswith(".json")


def looks_like_json(head: bytes) -> bool:
    """The first bytes of a (decompressed) file open a JSON object or array."""
    return head.lstrip()[:1] in (b"{", b"[")


def _read(path: Path) -> bytes:
    data, _ = read_profile_bytes(path)  # OS and gzip errors as ProfileErrors, gunzipped
    return read_json_bytes(path, data)


def _choose(file: TraceEventFile) -> Mapping:
    if is_kineto(file):
        return KinetoMapping()
    return ChromeMapping(tsl=is_tsl(file))


def load_json(files: list[Path], progress: Progress | None = None) -> Trace:
    """Loads trace-event JSON files (one per host or rank) into one Trace."""
    return load_json_files(files, _read, _choose, progress)
