"""The one cap over the store: what every cache writes counts against `size_limit`, and the least
recently used entries of any kind make room for a new one.

Traces, pod results and run summaries share the cap (an entry of each is one file directly in its
kind's folder, named with its kind's suffix: `ENTRY_SUFFIXES`; a hit touches its modification time,
which orders them). Any other file there is not ours to remove. Downloads of bucket runs are
not entries of this bound: they are the run's own files, needed whole to open it, and a run folder
in use by another window cannot be removed under it; they count in `tpuscope cache` and leave with
`tpuscope cache clear`, and with caching off they last one session (`tpuscope.store.remote`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from tpuscope.model.records import record
from tpuscope.store import cache_limit, layout

# The default cap: a few entries of the largest profiles measured (a 60M-event file's trace entry is
# 2.1 GB) and never more than a share of the free disk (our heuristic, like a browser's cache).
DEFAULT_MAX_BYTES = 4 << 30
FREE_DISK_SHARE = 0.25
# An entry is never written when it would leave less than this free on the cache's disk (our
# heuristic: the user's own files need the disk more than a cache does).
MIN_FREE_BYTES = 1 << 30
# What each bounded cache names its entries (traces.ENTRY_SUFFIX; pod_results' `.light`/`.full`
# kinds; run_summaries' JSON); a partial file of any of them begins with a dot.
ENTRY_SUFFIXES = {
    layout.TRACES: (".trace",),
    layout.PODS: (".light", ".full"),
    layout.RUN_SUMMARIES: (".json",),
}
BOUNDED_KINDS = tuple(ENTRY_SUFFIXES)


@record(frozen=True)
class KeptFile:
    """One entry of a bounded cache: a whole file (partial files begin with a dot and are not)."""

    path: Path
    size: int
    last_used: float  # its mtime: touched by each hit


def kept_files(kinds: Iterable[str] = BOUNDED_KINDS) -> list[KeptFile]:
    """The entries directly in each kind's folder (an older layout's subfolders are not entries)."""
    return [KeptFile(Path(path), size, last_used) for path, size, last_used in _listed(kinds)]


def _listed(kinds: Iterable[str] = BOUNDED_KINDS) -> list[tuple[str, int, float]]:
    """(path, size, mtime) of each entry: plain tuples, as a pod pass asks once per host result
    (a Path per entry was most of the cost: 40-60 ms for 500 entries on a loaded 2-core machine)."""
    found = []
    for kind in kinds:
        suffixes = ENTRY_SUFFIXES[kind]
        try:
            listing = list(os.scandir(layout.folder(kind)))
        except OSError:
            continue
        for item in listing:
            name = item.name
            if name.startswith(".") or not name.endswith(suffixes):
                continue
            try:
                if not item.is_file(follow_symlinks=False):
                    continue
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            found.append((item.path, st.st_size, st.st_mtime))
    return found


def size_limit() -> int:
    """Bytes the store may hold: the explicit cap (`cache_limit`), or min(4 GiB, a quarter of the
    free disk plus what the store holds)."""
    return _limit(held=None)


def _limit(held: int | None) -> int:
    explicit, _, _ = cache_limit.configured_limit()
    if explicit is not None:
        return explicit
    try:
        free = shutil.disk_usage(_existing_parent(layout.root())).free
    except OSError:
        return DEFAULT_MAX_BYTES
    if held is None:
        held = sum(size for _, size, _ in _listed())
    return min(DEFAULT_MAX_BYTES, int(FREE_DISK_SHARE * (free + held)))


def _existing_parent(folder: Path) -> Path:
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return folder


def make_room(incoming: int, keep: Iterable[Path] = ()) -> bool:
    """Removes least-recently-used entries of every bounded kind until `incoming` more bytes fit the
    cap; False when they cannot fit (more than the cap, or the disk would be nearly full)."""
    listed = _listed()
    limit = _limit(held=sum(size for _, size, _ in listed))
    if incoming > limit:
        return False
    kept = {str(path) for path in keep}
    present = [entry for entry in listed if entry[0] not in kept]
    held = sum(size for _, size, _ in present)
    for path, size, _ in sorted(present, key=lambda entry: entry[2]):
        if held + incoming <= limit:
            break
        try:
            os.unlink(path)
        except OSError:
            continue
        held -= size
    try:
        free = shutil.disk_usage(_existing_parent(layout.root())).free
    except OSError:
        return True
    return free - incoming >= MIN_FREE_BYTES


def touch(path: Path) -> None:
    """Marks an entry used now (least recently used goes first when the store is full)."""
    try:
        os.utime(path)
    except OSError:
        pass
