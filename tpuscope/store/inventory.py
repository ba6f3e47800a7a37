"""What the store holds, kind by kind, and emptying it: `tpuscope cache` and `tpuscope cache clear`.

Counts and removes whole folders (`tpuscope.store.layout`), so it needs none of the caches' formats
and opens no file (a FIFO or a link in a folder is counted by lstat and removed by unlink):
every file of a kind's folder is the cache's (entries, partial files, an older layout's subfolders),
and what an older tpuscope left are counted and removed too: its folders (`layout.LEGACY_FOLDERS`)
and the trace entries it wrote straight into TPUSCOPE_CACHE_DIR (`LEGACY_ROOT_ENTRY`; any other file
of the root is not ours).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tpuscope.model.records import record
from tpuscope.store import layout

LEGACY = "older layout"  # the name the legacy folders are listed under
# A trace entry, or its partial file, of the layout where TPUSCOPE_CACHE_DIR was the trace folder
# (16 or 32 hex digits, the format's version since format 12: `tpuscope.store.traces`).
LEGACY_ROOT_ENTRY = re.compile(
    r"^\.?(?:[0-9a-f]{16}|[0-9a-f]{32})(?:-v\d+)?\.trace(?:\.partial)?$|^\.[0-9a-f]{16}\.\d+\.\d+\.partial$"
)


@record(frozen=True)
class KindUsage:
    """One kind of cache: its folder, and the files and bytes in it (its subfolders included)."""

    kind: str
    folder: Path
    files: int
    bytes: int


def usage() -> list[KindUsage]:
    """Every kind, in `layout.KINDS` order, then the older layout's folders when any is left."""
    found = []
    for kind in layout.KINDS:
        folder = layout.folder(kind)
        files, size = folder_usage(folder, skip=_legacy_inside(folder))
        found.append(KindUsage(kind, folder, files, size))
    legacy = [layout.root() / name for name in layout.LEGACY_FOLDERS]
    counted = [folder_usage(folder) for folder in legacy if folder.is_dir()]
    loose = [(1, size) for _, size in _legacy_root_entries()]
    if counted or loose:
        both = counted + loose
        found.append(KindUsage(LEGACY, layout.root(), sum(c[0] for c in both), sum(c[1] for c in both)))
    return found


def _legacy_root_entries() -> list[tuple[Path, int]]:
    """The older layout's trace entries directly in the root, with their sizes."""
    found = []
    try:
        listing = list(os.scandir(layout.root()))
    except OSError:
        return []
    for item in listing:
        if LEGACY_ROOT_ENTRY.match(item.name):
            try:
                if item.is_file(follow_symlinks=False):
                    found.append((Path(item.path), item.stat(follow_symlinks=False).st_size))
            except OSError:
                continue
    return found


def clear() -> list[KindUsage]:
    """Empties every kind's folder and removes the older layout's; what was removed, kind by kind."""
    removed = []
    for name in layout.LEGACY_FOLDERS:  # first: some are inside a kind's folder
        files, size = empty_folder(layout.root() / name, remove_top=True)
        if files:
            removed.append(KindUsage(LEGACY, layout.root() / name, files, size))
    files = size = 0
    for path, length in _legacy_root_entries():
        try:
            path.unlink()
        except OSError:
            continue
        files, size = files + 1, size + length
    if files:
        removed.append(KindUsage(LEGACY, layout.root(), files, size))
    for kind in layout.KINDS:
        folder = layout.folder(kind)
        files, size = empty_folder(folder)
        removed.append(KindUsage(kind, folder, files, size))
    return removed


def _legacy_inside(folder: Path) -> set[Path]:
    return {layout.root() / name for name in layout.LEGACY_FOLDERS if (layout.root() / name).parent == folder}


def folder_usage(folder: Path, skip: set[Path] | None = None) -> tuple[int, int]:
    """(files, bytes) in `folder` and its subfolders, but those in `skip`."""
    files = total = 0
    for root, subfolders, names in os.walk(folder):
        if skip:
            subfolders[:] = [name for name in subfolders if Path(root) / name not in skip]
        for file_name in names + _links_among(root, subfolders):
            try:
                total += (Path(root) / file_name).lstat().st_size
            except OSError:
                continue
            files += 1
    return files, total


def _links_among(root: str, subfolders: list[str]) -> list[str]:
    """The links to folders that os.walk lists as subfolders (it never follows them): each is one
    file of the store, counted and removed as a link, never what it names (which may be anywhere)."""
    return [name for name in subfolders if os.path.islink(os.path.join(root, name))]


def empty_folder(folder: Path, remove_top: bool = False) -> tuple[int, int]:
    """Removes every file under `folder` and its emptied subfolders (`folder` too with `remove_top`);
    returns (files, bytes) removed. A file that cannot be removed is left, and not counted."""
    removed = freed = 0
    for root, subfolders, names in os.walk(folder, topdown=False):
        for file_name in names + _links_among(root, subfolders):
            path = Path(root) / file_name
            try:
                size = path.lstat().st_size
                path.unlink()
            except OSError:
                continue
            removed += 1
            freed += size
        if remove_top or Path(root) != folder:
            try:
                os.rmdir(root)
            except OSError:
                pass
    return removed, freed
