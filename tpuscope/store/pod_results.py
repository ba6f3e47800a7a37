"""A small cache of per-host pod results, so re-opening a run of many hosts reads no host file again.

What the pod page needs of a host is its `HostResult` (`tpuscope.analysis.pod_run`): a summary of a
few hundred numbers and a few dozen evidence items, and after the full pass its diagnosis and op
rows; a few tens of KB pickled, where the host's trace is tens of MB of columns. So the pod path
caches these results, one file per host file and pass ("light": the summary alone, "full": with its
diagnosis), and never the host's trace (`tpuscope.store.traces` would keep every host's columns:
64 hosts of 100 MB, 6 GB of cache for one look at a pod).

Keyed as every cache of the store is (`tpuscope.store.identity`: the host file's resolved path, size
and modification time), salted with the pass and this format's version; kept in the store's `pods`
folder (`tpuscope.store.layout`) under its one switch and cap (TPUSCOPE_NO_CACHE, TPUSCOPE_CACHE_MAX:
0 keeps nothing; `tpuscope.store.bound`: a result counts against the cap like a trace entry). A cache
that cannot be read or written is ignored.
"""

from __future__ import annotations

import os
import pickle
import threading
from pathlib import Path

from tpuscope.analysis.pod_run import HostResult
from tpuscope.store import bound, cache_limit, identity, layout
from tpuscope.store.traces import FORMAT_VERSION as TRACE_FORMAT_VERSION

# 1: HostResult lists. The trace format's version is part of the key too: a result computed from
# a trace the readers now read differently is stale. 2: HostSummary.duty_cycle. 3: HostSummary.collectives
# (the collective op rows), exposed collective time that memory copies do not hide.
FORMAT_VERSION = 3
LIGHT = "light"  # the summary only (report and op rows empty)
FULL = "full"  # the summary, the host's own diagnosis and its op rows
KINDS = (LIGHT, FULL)


def folder() -> Path:
    return layout.folder(layout.PODS)


def _key(file: Path, kind: str) -> str | None:
    return identity.files_key([file], salt=f"{layout.PODS}|{kind}|v{FORMAT_VERSION}|t{TRACE_FORMAT_VERSION}")


def load(file: str | Path, kind: str) -> list[HostResult] | None:
    """The results of `file` stored for `kind`, or None (not stored, stale, unreadable, cache off)."""
    if not cache_limit.caching_on():
        return None
    key = _key(Path(file), kind)
    if key is None:
        return None
    path = folder() / f"{key}.{kind}"
    try:
        with os.fdopen(identity.open_regular(path), "rb") as handle:  # a FIFO in its place: no wait
            results = pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None
    if not isinstance(results, list) or not all(isinstance(r, HostResult) for r in results):
        return None
    bound.touch(path)
    return results


def load_best(file: str | Path) -> tuple[list[HostResult], str] | None:
    """The fullest results stored for `file` and their kind (a full result has the summary too)."""
    for kind in (FULL, LIGHT):
        found = load(file, kind)
        if found is not None:
            return found, kind
    return None


def store(file: str | Path, kind: str, results: list[HostResult]) -> None:
    """Keeps `results` for `file` and `kind`, room made under the store's cap; nothing when caching
    is off, the file cannot be read or the results do not fit."""
    if not cache_limit.caching_on():
        return
    key = _key(Path(file), kind)
    if key is None:
        return
    where = folder()
    target = where / f"{key}.{kind}"
    tmp = where / f".{key}.{os.getpid()}.{threading.get_ident()}.partial"
    try:
        data = pickle.dumps(results, protocol=pickle.HIGHEST_PROTOCOL)
        if not bound.make_room(len(data), keep=[target]):
            return
        where.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        try:
            os.unlink(tmp)
        except OSError:
            pass
