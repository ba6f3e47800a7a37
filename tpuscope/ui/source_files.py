"""Finding the user's source files on this machine, and the device time of each of their lines.

A profile records each op's file as the program that was traced saw it: an absolute path on the
machine that ran it (`/workspace/train.py`), or a path relative to where it ran
(`experimental/users/me/model.py`). The Source tab shows the file when that path exists here, or
when the user maps a recorded prefix to a local folder (a source root, remembered per logdir).
Nothing here imports Qt: the benchmark and the tests read files the way the tab does.
"""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath

from tpuscope.analysis.ops import NO_SOURCE, OpTable
from tpuscope.model.records import record
from tpuscope.model.trace import Trace

# Larger files are not shown: a source file is kilobytes; tens of megabytes is data or generated code,
# and QPlainTextEdit lays out every line. Our limit.
MAX_SOURCE_BYTES = 20 << 20
BINARY_PROBE_BYTES = 8192  # a NUL byte in the first 8 KiB: not text (what git's binary check reads)


@record(frozen=True)
class SourceRoot:
    """Recorded paths starting with `prefix` are read from `folder` instead ("" maps every relative path)."""

    prefix: str
    folder: str


@record(frozen=True)
class SourceText:
    """A source file as the tab shows it: its text, or "" and one sentence saying why not."""

    path: Path | None
    text: str = ""
    note: str = ""


def logdir_of(trace: Trace) -> str:
    """The logdir a trace was opened from (the folder above `plugins/profile/<run>/`), for remembering
    a source root per logdir; the file's folder when it is not in a logdir; "" for none."""
    if not trace.sources:
        return ""
    first = str(trace.sources[0])
    parts = PurePosixPath(first).parts
    for k in range(len(parts) - 1):
        if parts[k] == "plugins" and parts[k + 1] == "profile":
            return str(PurePosixPath(*parts[:k])) if k else "."
    return str(PurePosixPath(first).parent)


def settings_key(logdir: str) -> str:
    """The QSettings key of a logdir's source root (a digest: paths hold the settings' separators)."""
    return "source_root/" + hashlib.sha1(logdir.encode("utf-8", "replace")).hexdigest()[:16]


def resolve(recorded: str, root: SourceRoot | None = None) -> Path | None:
    """The local file of a recorded path: the root's mapping first, then the path as recorded."""
    candidates = []
    if root is not None and root.folder:
        if root.prefix and recorded.startswith(root.prefix):
            candidates.append(Path(root.folder) / recorded[len(root.prefix) :].lstrip("/"))
        elif not root.prefix and not recorded.startswith("/"):
            candidates.append(Path(root.folder) / recorded)
    candidates.append(Path(recorded))
    for candidate in candidates:
        try:
            if candidate.is_file():
                return candidate
        except OSError:  # a name too long or not representable here: not this file
            continue
    return None


def read_source(recorded: str, root: SourceRoot | None = None) -> SourceText:
    """The text of a recorded file, or why it cannot be shown (moved, too large, binary, unreadable)."""
    path = resolve(recorded, root)
    if path is None:
        hint = " (set a source root to map its folder to a local one)" if recorded else ""
        return SourceText(None, "", f"{recorded or 'The file'} is not on this machine{hint}.")
    try:
        size = path.stat().st_size
        if size > MAX_SOURCE_BYTES:
            return SourceText(path, "", f"{path} is {size:,} bytes, too large to show as source.")
        data = path.read_bytes()
    except OSError as error:
        return SourceText(path, "", f"{path} cannot be read ({error.strerror or error}).")
    if b"\0" in data[:BINARY_PROBE_BYTES]:
        return SourceText(path, "", f"{path} is a binary file, not source text.")
    text = data.decode("utf-8", errors="replace")
    note = (
        "" if "\ufffd" not in text or b"\xef\xbf\xbd" in data else f"{path} is not all UTF-8: shown with ?s."
    )
    return SourceText(path, text, note)


def split_line(name: str) -> tuple[str, int] | None:
    """(file, line) of a by-source row name `file:line`; None for `(no source)` and other labels."""
    if name == NO_SOURCE:
        return None
    file, _, line = name.rpartition(":")
    return (file, int(line)) if file and line.isdigit() else None


def line_self_times(table: OpTable, recorded: str) -> dict[int, int]:
    """line -> self time (ps) on it, of one recorded file, from the op table by source."""
    found: dict[int, int] = {}
    for row, name in enumerate(table.names()):
        where = split_line(name)
        if where is not None and where[0] == recorded:
            found[where[1]] = found.get(where[1], 0) + int(table.self_ps[row])
    return found
