"""A small cache of per-host pod results, so re-opening a run of many hosts reads no host file again.

What the pod page needs of a host is its `HostResult` (`tpuscope.analysis.pod_run`): a summary of a
few hundred numbers and a few dozen evidence items, and after the full pass its diagnosis and op
rows; a few tens of KB pickled, where the host's trace is tens of MB of columns. So the pod path
caches these results, one file per host file and pass ("light": the summary alone, "full": with its
diagnosis), and never the host's trace (`tpuscope.store.traces` would keep every host's columns:
64 hosts of 100 MB, 6 GB of cache for one look at a pod).

Keyed as `tpuscope.store.traces` keys traces: the host file's absolute path, size and modification
time, and this format's version; same folder (a `pods` folder inside it), same switches
(TPUSCOPE_NO_CACHE, TPUSCOPE_CACHE_DIR). A cache that cannot be read or written is ignored.
"""

from __future__ import annotations

import os
import pickle
import threading
import zlib
from pathlib import Path

from tpuscope.analysis.pod_run import HostResult
from tpuscope.store import traces

# 1: HostResult lists. The trace format's version is part of the key too: a result computed from
# a trace the readers now read differently is stale.
FORMAT_VERSION = 1
LIGHT = "light"  # the summary only (report and op rows empty)
FULL = "full"  # the summary, the host's own diagnosis and its op rows
KINDS = (LIGHT, FULL)


def folder() -> Path:
    return traces.cache_dir() / "pods"


def _key(file: Path, kind: str) -> str | None:
    try:
        st = file.stat()
        resolved = file.resolve()
    except OSError:
        return None
    identity = f"{kind}|v{FORMAT_VERSION}|t{traces.FORMAT_VERSION}|{resolved}|{st.st_size}|{st.st_mtime_ns}"
    data = identity.encode("utf-8", errors="surrogateescape")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def _enabled() -> bool:
    return os.environ.get("TPUSCOPE_NO_CACHE", "") in ("", "0")


def load(file: str | Path, kind: str) -> list[HostResult] | None:
    """The results of `file` stored for `kind`, or None (not stored, stale, unreadable, cache off)."""
    if not _enabled():
        return None
    key = _key(Path(file), kind)
    if key is None:
        return None
    try:
        with open(folder() / f"{key}.{kind}", "rb") as handle:
            results = pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None
    if not isinstance(results, list) or not all(isinstance(r, HostResult) for r in results):
        return None
    return results


def load_best(file: str | Path) -> tuple[list[HostResult], str] | None:
    """The fullest results stored for `file` and their kind (a full result has the summary too)."""
    for kind in (FULL, LIGHT):
        found = load(file, kind)
        if found is not None:
            return found, kind
    return None


def store(file: str | Path, kind: str, results: list[HostResult]) -> None:
    if not _enabled():
        return
    key = _key(Path(file), kind)
    if key is None:
        return
    where = folder()
    tmp = where / f".{key}.{os.getpid()}.{threading.get_ident()}.partial"
    try:
        where.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as handle:
            pickle.dump(results, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, where / f"{key}.{kind}")
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        try:
            os.unlink(tmp)
        except OSError:
            pass
