"""A history's run summaries, kept so that the history of 50 runs after one new run reads 49
summaries and analyses one run (`tpuscope history`, the History view).

A summary (`analysis.compare.history.RunSummary`) is a few kilobytes of JSON, keyed by what opens the
run and the identity of its files (`tpuscope.store.identity`: local files' path, size and time; a
bucket's objects, their generation), salted with the summary's version. Kept in the store's
`run_summaries` folder under its one switch and cap (`tpuscope.store.cache_limit`, `.bound`): with
TPUSCOPE_NO_CACHE or a cap of 0 nothing is read or written. Written whole or not at all (a temporary
file renamed); a summary that cannot be read or written costs only an analysis.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from tpuscope.analysis.compare.history import SUMMARY_VERSION, RunSummary
from tpuscope.store import bound, cache_limit, identity, layout

_SALT = f"{layout.RUN_SUMMARIES}|v{SUMMARY_VERSION}"


def folder() -> Path:
    return layout.folder(layout.RUN_SUMMARIES)


def local_stamp(files: Iterable[Path]) -> str:
    """The run's local files as they are now; a file that cannot be read is named as missing (its
    run fails to open, and nothing is kept for it)."""
    return "\n".join(identity.file_identity(f) or f"{f.resolve()}|missing" for f in files)


def remote_stamp(objects: Iterable[tuple[str, int, str]]) -> str:
    """The run's bucket objects (url, size, generation) as the listing shows them now."""
    return "\n".join(identity.object_identity(url, size, generation) for url, size, generation in objects)


def _path(where: str, stamp: str) -> Path:
    return folder() / f"{identity.key_of([where, stamp], salt=_SALT)}.json"


def load(where: str, stamp: str) -> RunSummary | None:
    """The summary kept for the run opened by `where` whose files are `stamp`, or None."""
    if not cache_limit.caching_on():
        return None
    path = _path(where, stamp)
    try:
        with os.fdopen(identity.open_regular(path), "rb") as handle:  # a FIFO in its place: no wait
            data = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    summary = RunSummary.from_json(data) if isinstance(data, dict) else None
    if summary is not None:
        bound.touch(path)
    return summary


def store(where: str, stamp: str, summary: RunSummary) -> None:
    if not cache_limit.caching_on():
        return
    target = _path(where, stamp)
    data = json.dumps(summary.to_json(), separators=(",", ":")).encode()
    temporary = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        if not bound.make_room(len(data), keep=[target]):
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(data)
        temporary.replace(target)
    except OSError:
        try:
            temporary.unlink(missing_ok=True)
        except OSError:
            pass
