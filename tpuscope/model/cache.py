"""A columnar cache of loaded traces, so re-opening an unchanged profile is instant.

Keyed by each source file's absolute path, size and modification time (and
the cache format version), stored in the per-user cache folder.

Format: one file per trace. The object graph (planes, tracks, string table)
is pickled with protocol 5 and its numpy columns go *out of band*: their raw
bytes follow the pickle, each 64-byte aligned. Re-opening maps the file
(copy-on-write) and hands pickle those mapped bytes, so every column is a
zero-copy view of the page cache: the cost is the small object graph, not the
size of the trace (1M events: ~5 ms; 10M: ~10 ms, where reading the columns
into memory took 143 ms). Columns stay writable; a write copies only the
touched page. A cache that cannot be read or written is ignored: it only ever
makes loading faster.

    [8 bytes magic][8 bytes pickle length][8 bytes buffer count]
    [pickle][buffer table: (offset, length) int64 pairs][padding][buffers...]
"""

from __future__ import annotations

import mmap
import os
import pickle
import struct
import threading
import zlib
from pathlib import Path

import numpy as np

from tpuscope.model.trace import Trace

FORMAT_VERSION = 11  # 3: Trace.load_warnings; 4: TrackKind per track, plane identity, trace dialect;
# 5: the dialect's op families (a pickled dialect keeps the fields it was written with); 7: the
# dialect's new event classes and compile, version and framework-op names, and the plane identity's
# `sparse_core`; 8: the dialect's program decoders (pickled by reference) and allocator names; 9: the
# dialect's input and DCN event classes and barrier names; 10: the dialect's program-code decoder;
# 11: PyTorch kernels' Python source and stack stats
_MAGIC = b"TPUSCOPE"
_HEADER = struct.Struct("<8sqq")
_ALIGNMENT = 64  # numpy's preferred alignment for SIMD loops over the mapped columns
_DISABLE_ENV = "TPUSCOPE_NO_CACHE"
_DIR_ENV = "TPUSCOPE_CACHE_DIR"


def cache_dir() -> Path:
    override = os.environ.get(_DIR_ENV)
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("tpuscope")) / "traces"


def _key(files: list[Path]) -> str | None:
    parts = [f"v{FORMAT_VERSION}"]
    for file in files:
        try:
            st = file.stat()
        except OSError:
            return None
        parts.append(f"{file.resolve()}|{st.st_size}|{st.st_mtime_ns}")
    # A file name that is not UTF-8 reaches Python as surrogate escapes: they encode back to its bytes.
    identity = "\n".join(parts).encode("utf-8", errors="surrogateescape")
    # Two independent 32-bit checksums of the identity: a 64-bit name for a handful of local files.
    # Why not hashlib: loading OpenSSL for it was 5 ms of every cold start (python -X importtime).
    return f"{zlib.crc32(identity):08x}{zlib.adler32(identity):08x}"


def _enabled() -> bool:
    return os.environ.get(_DISABLE_ENV, "") in ("", "0")


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGNMENT) * _ALIGNMENT


def load(files: list[Path]) -> Trace | None:
    if not _enabled():
        return None
    key = _key(files)
    if key is None:
        return None
    try:
        with open(cache_dir() / f"{key}.trace", "rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
        return _decode(mapped)
    except (OSError, ValueError, struct.error, pickle.UnpicklingError, EOFError, AttributeError,
            ImportError, TypeError, IndexError):  # fmt: skip
        return None


def _decode(mapped: mmap.mmap) -> Trace | None:
    view = memoryview(mapped)
    magic, pickle_length, n_buffers = _HEADER.unpack_from(view, 0)
    if magic != _MAGIC or pickle_length < 0 or n_buffers < 0:
        return None
    start = _HEADER.size
    table_start = start + pickle_length
    table = np.frombuffer(view[table_start : table_start + 16 * n_buffers], dtype="<i8").reshape(-1, 2)
    if len(table) != n_buffers or (table < 0).any() or (table.sum(axis=1) > len(view)).any():
        return None
    buffers = [view[offset : offset + length] for offset, length in table.tolist()]
    trace = pickle.loads(view[start:table_start], buffers=buffers)
    return trace if isinstance(trace, Trace) else None


def store(files: list[Path], trace: Trace) -> None:
    if not _enabled():
        return
    key = _key(files)
    if key is None:
        return
    folder = cache_dir()
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        buffers: list[pickle.PickleBuffer] = []
        graph = pickle.dumps(trace, protocol=5, buffer_callback=buffers.append)
        raws = [b.raw() for b in buffers]
        table_end = _HEADER.size + len(graph) + 16 * len(raws)
        offsets, position = [], _aligned(table_end)
        for raw in raws:
            offsets.append((position, raw.nbytes))
            position = _aligned(position + raw.nbytes)
        tmp = folder / f".{key}.{os.getpid()}.{threading.get_ident()}.partial"  # unique to this writer
        with open(tmp, "xb") as handle:
            handle.write(_HEADER.pack(_MAGIC, len(graph), len(raws)))
            handle.write(graph)
            handle.write(np.array(offsets, dtype="<i8").reshape(-1, 2).tobytes())
            written = table_end
            for (offset, _), raw in zip(offsets, raws, strict=True):
                handle.write(b"\0" * (offset - written))
                handle.write(raw)
                written = offset + raw.nbytes
        os.replace(tmp, folder / f"{key}.trace")
    except (OSError, pickle.PicklingError, ValueError):
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
