"""Finding profile files on disk and reading their bytes, for every reader, with one clear error per failure.

Layouts accepted: a profile file of any registered format (`tpuscope.readers.READERS`); a run
folder holding one file per host (`<logdir>/plugins/profile/<run>/`); a logdir whose runs are
listed and whose newest run opens by default. A run folder with files of two formats (JAX writes
an XPlane and a JSON file for every host) loads the preferred format's files only (`one_format`).
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
import zlib
from pathlib import Path

from tpuscope.errors import ProfileError, display_path
from tpuscope.model.hosts import natural_key
from tpuscope.model.records import record
from tpuscope.readers import (
    fallback_reader,
    formats_help,
    host_from_filename,
    listed_suffixes,
    reader_by_content,
    reader_by_name,
)
from tpuscope.readers.registry import MemoryFile, ProfileFile, Reader

_MAX_SEARCH_DEPTH = 6  # logdir/<sub>/plugins/profile/<run>/<host>.xplane.pb and a little more
# How much of a file's (gunzipped) start a reader's sniff sees.
_HEAD_BYTES = 4096


def read_head(path: Path) -> bytes:
    """A file's first bytes, gunzipped when it is gzip, for a reader's sniff (b"" if unreadable)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 20)
    except OSError:
        return b""
    return gunzip_head(head)


def gunzip_head(data: bytes) -> bytes:
    """The first bytes of a profile (gunzipped when it is gzip) that a reader's sniff sees (b"" when
    its gzip is broken)."""
    head = bytes(data[: 1 << 20])
    if head[:2] == GZIP_MAGIC:
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, _HEAD_BYTES)
        except zlib.error:
            return b""
    return head[:_HEAD_BYTES]


def choose_reader(files: list[Path]) -> Reader:
    """The reader of a run's files: by each file's name, else its first bytes; a run whose files
    would go to different pipelines (or that nothing claims) goes to the fallback reader, whose
    errors say what each file is."""
    chosen = [reader_by_name(f.name) or reader_by_content(read_head(f)) or fallback_reader() for f in files]
    first = chosen[0] if chosen else fallback_reader()
    if all(reader.load == first.load for reader in chosen):
        return first
    return fallback_reader()


def one_format(files: list[Path]) -> tuple[list[Path], list[str]]:
    """The files to load when a run mixes formats: those of the most preferred reader, with a
    sentence per file left out.

    JAX writes `<host>.trace.json.gz` beside every `<host>.xplane.pb` with the same events and
    fewer stats (xla/python/profiler.cc, also_export_trace_json), so each host loads once.
    """
    readers = [reader_by_name(f.name) for f in files]
    preferences = {r.preference if r else -1 for r in readers}
    if len(preferences) < 2:
        return list(files), []
    best = max(preferences)
    kept = [f for f, r in zip(files, readers, strict=True) if r is not None and r.preference == best]
    title = next(r.title for r in readers if r is not None and r.preference == best)
    hosts = {host_from_filename(f): f for f in kept}
    notes = []
    for other, reader in zip(files, readers, strict=True):
        if reader is not None and reader.preference == best:
            continue
        twin = hosts.get(host_from_filename(other))
        if twin is not None:
            notes.append(
                f"{other.name} was not loaded: {twin.name} holds this host's events, with more stats."
            )
        else:
            notes.append(
                f"{other.name} was not loaded: the run's {title} files were (formats are not mixed)."
            )
    return kept, notes


@record(frozen=True)
class Run:
    """One profiling session: a folder with one profile file per host."""

    name: str
    folder: Path
    files: tuple[Path, ...]

    @property
    def hosts(self) -> list[str]:
        return [host_from_filename(f) for f in self.files]


def _by_host_name(path: Path) -> tuple:
    """A run's files in host order: host2 before host10 (`natural_key`), whatever the name's case."""
    return natural_key(path.name), path.name


def _profile_files_in(folder: Path) -> list[Path]:
    suffixes = listed_suffixes()
    try:
        found = (p for p in folder.iterdir() if p.is_file() and p.name.endswith(suffixes))
        return sorted(found, key=_by_host_name)
    except PermissionError:
        raise ProfileError(folder, "permission denied while listing the folder") from None
    except OSError as exc:
        raise ProfileError(folder, f"the folder cannot be listed ({exc.strerror or exc})") from None


def list_runs(path: str | Path) -> list[Run]:
    """All runs under `path`, oldest first (run folders are named by capture time).

    `path` may itself be a run folder. Raises ProfileError when it is missing
    or holds no profile at all.
    """
    root = Path(path)
    kind = _path_kind(root)
    if kind is not None:
        raise ProfileError(root, kind)
    if root.is_file():
        return [Run(host_from_filename(root), root.parent, (root,))]
    runs: dict[Path, list[Path]] = {}
    direct = _profile_files_in(root)
    if direct:
        runs[root] = direct
    else:
        suffixes = listed_suffixes()
        for folder, subfolders, files in os.walk(root):
            depth = len(Path(folder).relative_to(root).parts)
            if depth >= _MAX_SEARCH_DEPTH:
                subfolders[:] = []
            found = sorted((Path(folder) / f for f in files if f.endswith(suffixes)), key=_by_host_name)
            if found:
                runs[Path(folder)] = found
    if not runs:
        raise ProfileError(
            root,
            f"no profiles were found in this folder (looked for: {formats_help()})",
        )

    def age(item: tuple[Path, list[Path]]) -> tuple[float, str]:
        folder, files = item
        return (max(_mtime(f) for f in files), folder.name)

    ordered = sorted(runs.items(), key=lambda item: (item[0].name, age(item)))
    return [Run(_run_name(root, folder), folder, tuple(files)) for folder, files in ordered]


# What a path that is neither a file nor a folder is, by its stat mode (stat(2)).
_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "it is a named pipe (FIFO), not a profile file"),
    (stat.S_ISCHR, "it is a character device, not a profile file"),
    (stat.S_ISBLK, "it is a block device, not a profile file"),
    (stat.S_ISSOCK, "it is a socket, not a profile file"),
)


def _path_kind(root: Path) -> str | None:
    """Why `root` cannot be opened as a profile file or folder, named by what it is; None if it can."""
    try:
        mode = os.stat(root).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "it is a symbolic link loop (following its links never reaches a file)"
        if os.path.islink(root):
            return f"it is a symbolic link to {display_path(os.readlink(root))}, which does not exist"
        if isinstance(exc, FileNotFoundError):
            return "the path does not exist"
        if isinstance(exc, PermissionError):
            return "permission denied (a folder on the path is not readable)"
        return f"the path cannot be read ({exc.strerror or exc})"
    for is_kind, sentence in _SPECIAL_KINDS:
        if is_kind(mode):
            return sentence
    return None


def _run_name(root: Path, folder: Path) -> str:
    return folder.name if folder != root else root.name


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def resolve_profile_files(path: str | Path, run: str | None = None) -> list[Path]:
    """The files to load for `path`: the file itself, a run's files, or the newest run's."""
    runs = list_runs(path)
    if run is None:
        return list(runs[-1].files)
    for candidate in runs:
        if candidate.name == run:
            return list(candidate.files)
    names = ", ".join(r.name for r in runs)
    raise ProfileError(path, f"there is no run named {run!r} (runs: {names})")


def read_profile_bytes(
    path: ProfileFile, skip_leading_blanks: bool = False, max_leading_blanks: int | None = None
) -> tuple[bytes, bool]:
    """A profile file's bytes, gunzipped for `.gz`, and whether a gzip stream ended early; for a
    profile held in memory (a MemoryFile) its own bytes, not copied, gunzipped the same way.

    Every OS or gzip failure becomes ProfileError. A gzip stream cut short
    (a partial copy, a full disk) yields what decompresses before the cut.
    `skip_leading_blanks` (text formats): a gzip stream's leading whitespace is dropped as it
    decompresses, so a document after gigabytes of blanks costs the document's memory only, and
    past `max_leading_blanks` (default MAX_LEADING_BLANK_BYTES) the file is refused in one sentence.
    """
    if isinstance(path, MemoryFile):
        data = path.data
    else:
        data = _read_whole(path)
    if not data:
        raise ProfileError(path, "the file is empty")
    if data[:2] != GZIP_MAGIC:
        return data, False
    data, ends_early = gunzip_salvaging(path, data, skip_leading_blanks, max_leading_blanks)
    if not data:
        if ends_early:
            raise ProfileError(path, "the gzip data is cut short before any of it decompresses")
        if skip_leading_blanks:
            raise ProfileError(path, "the file holds no JSON (it is empty or blank)")
        raise ProfileError(path, "the compressed file holds no data")
    return data, ends_early


def profile_size(path: ProfileFile) -> int:
    """A profile's size in bytes as stored (0 when it cannot be read): what load progress is shared by."""
    if isinstance(path, MemoryFile):
        return len(path.data)
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_whole(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise ProfileError(path, "the file does not exist") from None
    except PermissionError:
        raise ProfileError(path, "permission denied (the file is not readable)") from None
    except IsADirectoryError:
        raise ProfileError(path, "it is a folder, not a file") from None
    except OSError as exc:
        raise ProfileError(path, f"the file cannot be read ({exc.strerror or exc})") from None


GZIP_MAGIC = b"\x1f\x8b"
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # zlib's window bits for a gzip header and trailer
# Decompressed per step: the bound below is checked between steps, so no step overshoots it by more.
_GZIP_STEP_BYTES = 16 << 20
_GZIP_INPUT_BYTES = 1 << 20  # compressed bytes fed per piece
# What a profile may expand to, relative to its compressed size: deflate's own ceiling is 1032:1
# (zlib's technical details, zlib.net/zlib_tech.html); real profiles compress 3-20:1 (the Kineto
# traces of tests/ 9-18:1), so a stream past this (blanks excepted) is not a profile.
MAX_GZIP_EXPANSION = 256
# ...and relative to the memory free now: the decoded file needs several times its bytes again.
GZIP_MEMORY_SHARE = 0.5
# Leading whitespace a gzip text profile may inflate to before its document starts (our heuristic:
# no writer pads a trace; a stream of blanks compresses ~1000:1, so 3 GiB of them hide in 3 MB and
# cost ~11 s of inflating for nothing). Past it the file is refused in one sentence.
MAX_LEADING_BLANK_BYTES = 1 << 30
_UTF8_BOM = b"\xef\xbb\xbf"
_BLANKS = b" \t\n\r"


def available_memory() -> int | None:
    """Bytes of memory free for a new allocation now (Linux: MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo", "rb") as handle:
            for line in handle:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def gunzip_salvaging(
    path: ProfileFile, data: bytes, skip_leading_blanks: bool = False, max_leading_blanks: int | None = None
) -> tuple[bytes, bool]:
    """All gzip members of `data` decompressed, and whether the last one ends before its trailer.

    Why not gzip.decompress: it raises on a cut stream and throws away all it
    decompressed, which for a profile cut short is everything there is. Why in steps: the output is
    bounded (MAX_GZIP_EXPANSION times the input, GZIP_MEMORY_SHARE of free memory) before it is
    held, and leading blanks (with `skip_leading_blanks`) are never held at all, nor inflated past
    `max_leading_blanks` (default MAX_LEADING_BLANK_BYTES).
    """
    limit = len(data) * MAX_GZIP_EXPANSION
    free = available_memory()
    if free is not None:
        limit = min(limit, int(free * GZIP_MEMORY_SHARE))
    parts: list[bytes] = []
    held = 0
    skipping = skip_leading_blanks
    skipped = 0
    blank_limit = MAX_LEADING_BLANK_BYTES if max_leading_blanks is None else max_leading_blanks

    def keep(chunk: bytes) -> None:
        nonlocal held, skipping, skipped
        if skipping and chunk:
            if not parts and not skipped and chunk.startswith(_UTF8_BOM):
                chunk = chunk[len(_UTF8_BOM) :]
            stripped = chunk.lstrip(_BLANKS)
            skipped += len(chunk) - len(stripped)
            if skipped > blank_limit:
                raise ProfileError(
                    path,
                    f"its gzip data starts with more than {_size(blank_limit)} of blank space before any "
                    "content, which no profile does (it may be damaged or a decompression bomb)",
                )
            chunk = stripped
            skipping = not chunk
        if chunk:
            held += len(chunk)
            if held > limit:
                raise ProfileError(path, _too_big(len(data), free, limit))
            parts.append(chunk)

    view = memoryview(data)
    offset = 0
    try:
        while offset < len(data):
            stream = zlib.decompressobj(_GZIP_WBITS)
            while not stream.eof and offset < len(data):
                # Input in pieces, output in steps: neither the compressed rest nor a step's output is
                # copied again per step, and the bound is checked after each step.
                piece: bytes | memoryview = view[offset : offset + _GZIP_INPUT_BYTES]
                offset += len(piece)
                while piece and not stream.eof:
                    keep(stream.decompress(piece, _GZIP_STEP_BYTES))
                    piece = stream.unconsumed_tail
            while not stream.eof:  # the input is all in: drain what zlib still holds
                chunk = stream.decompress(b"", _GZIP_STEP_BYTES)
                if not chunk:
                    break
                keep(chunk)
            if not stream.eof:
                keep(stream.flush())
                return _joined(parts), True
            offset -= len(stream.unused_data)
            while offset < len(data) and data[offset] == 0:  # gzip allows zero padding between members
                offset += 1
            if offset < len(data) and data[offset : offset + 2] != GZIP_MAGIC:
                raise ProfileError(path, "the gzip data is corrupted (unexpected bytes after a gzip member)")
    except zlib.error as exc:
        raise ProfileError(path, f"the gzip data is corrupted ({exc})") from None
    return _joined(parts), False


def _too_big(compressed: int, free: int | None, limit: int) -> str:
    if free is not None and limit < compressed * MAX_GZIP_EXPANSION:
        return (
            f"its gzip data expands past {_size(limit)}, more than a load may take of the "
            f"{_size(free)} of free memory"
        )
    return (
        f"its gzip data expands more than {MAX_GZIP_EXPANSION} times its compressed size "
        f"({compressed:,} bytes), which no profile does (it may be a decompression bomb)"
    )


def _size(count: int) -> str:
    return f"{count / (1 << 30):.1f} GiB" if count >= 1 << 30 else f"{count / (1 << 20):.0f} MiB"


def _joined(parts: list[bytes]) -> bytes:
    """One bytes object; a single part is returned as is (no copy of a big file)."""
    parts = [p for p in parts if p]
    return parts[0] if len(parts) == 1 else b"".join(parts)


def map_file(path: Path) -> mmap.mmap | None:
    """The file mapped read-only into memory, or None where it cannot be (empty, a pipe, no mmap).

    Why map instead of read: reading copies every byte into fresh private
    memory (8 s of a 2.1 GB, 60M-event load was `readinto`, issue 12); a
    map shares the page cache, costs nothing up front, and its pages can be
    dropped from this process as soon as they are decoded (release_mapped).
    The caller closes it. Known limit: another process shrinking the file
    while it is mapped makes the lost pages fault (SIGBUS); profilers write
    each capture to a new, timestamped run folder rather than rewrite one.
    """
    try:
        with open(path, "rb", buffering=0) as handle:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError, OverflowError):
        return None


def release_mapped(mapped: mmap.mmap, offset: int, length: int) -> None:
    """Drops the whole pages of mapped[offset:offset + length] from this process (they stay in the
    page cache and would read back the same): a decoded plane no longer counts in our memory."""
    if not hasattr(mapped, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
        return
    start = -(-offset // mmap.PAGESIZE) * mmap.PAGESIZE
    end = (offset + length) // mmap.PAGESIZE * mmap.PAGESIZE
    if end > start:
        try:
            mapped.madvise(mmap.MADV_DONTNEED, start, end - start)
        except (OSError, ValueError):
            pass
