"""A columnar cache of loaded traces, so re-opening an unchanged profile is instant.

Keyed by each source file's absolute path, size and modification time (and
the cache format version), stored in the per-user cache folder. The trace's
numpy columns are pickled with protocol 5, which writes array buffers as raw
bytes, so reading back is a few large memory copies. A cache that cannot be
read or written is ignored: it only ever makes loading faster.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from tpuscope.model.trace import Trace

FORMAT_VERSION = 1
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
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def _enabled() -> bool:
    return os.environ.get(_DISABLE_ENV, "") in ("", "0")


def load(files: list[Path]) -> Trace | None:
    if not _enabled():
        return None
    key = _key(files)
    if key is None:
        return None
    path = cache_dir() / f"{key}.trace"
    try:
        with open(path, "rb") as handle:
            trace = pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None
    return trace if isinstance(trace, Trace) else None


def store(files: list[Path], trace: Trace) -> None:
    if not _enabled():
        return
    key = _key(files)
    if key is None:
        return
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".partial")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(trace, handle, protocol=5)
        os.replace(tmp, folder / f"{key}.trace")
    except OSError:
        try:
            os.unlink(tmp)  # type: ignore[possibly-undefined]
        except (OSError, NameError):
            pass
