"""Finding profile files on disk and reading their bytes, with one clear error per failure.

Layouts accepted: a profile file (XPlane `.xplane.pb(.gz)`, or trace-event JSON: PyTorch's
`*.pt.trace.json(.gz)` / `*.json.gz`, TSL's `<host>.trace.json.gz`); a run folder holding one
file per host (`<logdir>/plugins/profile/<run>/`); a logdir whose runs are listed and whose
newest run opens by default. A run folder with both an XPlane and a JSON file (JAX writes both
for every host) loads the XPlane files only (`prefer_xplane`).
"""

from __future__ import annotations

import mmap
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from tpuscope.errors import ProfileError

PROFILE_SUFFIXES = (".xplane.pb", ".xplane.pb.gz")
# Trace-event JSON as run folders hold it: torch.profiler.tensorboard_trace_handler writes
# `<worker>.<time>.pt.trace.json(.gz)`, HTA's traces are `*.json.gz`, JAX writes `<host>.trace.json.gz`.
JSON_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz", ".trace.json", ".trace.json.gz", ".json.gz")
ALL_SUFFIXES = PROFILE_SUFFIXES + JSON_SUFFIXES
_MAX_SEARCH_DEPTH = 6  # logdir/<sub>/plugins/profile/<run>/<host>.xplane.pb and a little more


def is_profile_file(path: Path) -> bool:
    return path.name.endswith(ALL_SUFFIXES)


def is_xplane_file(path: Path) -> bool:
    return path.name.endswith(PROFILE_SUFFIXES)


def host_from_filename(path: Path) -> str:
    name = path.name
    for suffix in sorted(ALL_SUFFIXES + (".json",), key=len, reverse=True):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def prefer_xplane(files: list[Path]) -> tuple[list[Path], list[str]]:
    """The files to load when a run mixes formats: the XPlane ones, with a sentence per JSON file left out.

    JAX writes `<host>.trace.json.gz` beside every `<host>.xplane.pb` with the same events and
    fewer stats (xla/python/profiler.cc, also_export_trace_json), so each host loads once.
    """
    xplane = [f for f in files if is_xplane_file(f)]
    others = [f for f in files if not is_xplane_file(f)]
    if not xplane or not others:
        return list(files), []
    hosts = {host_from_filename(f): f for f in xplane}
    notes = []
    for other in others:
        twin = hosts.get(host_from_filename(other))
        if twin is not None:
            notes.append(
                f"{other.name} was not loaded: {twin.name} holds this host's events, with more stats."
            )
        else:
            notes.append(f"{other.name} was not loaded: the run's XPlane files were (formats are not mixed).")
    return xplane, notes


@dataclass(frozen=True)
class Run:
    """One profiling session: a folder with one XPlane file per host."""

    name: str
    folder: Path
    files: tuple[Path, ...]

    @property
    def hosts(self) -> list[str]:
        return [host_from_filename(f) for f in self.files]


def _profile_files_in(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_file() and is_profile_file(p))
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
    if not root.exists():
        raise ProfileError(root, "the path does not exist")
    if root.is_file():
        return [Run(host_from_filename(root), root.parent, (root,))]
    runs: dict[Path, list[Path]] = {}
    direct = _profile_files_in(root)
    if direct:
        runs[root] = direct
    else:
        for folder, subfolders, files in os.walk(root):
            depth = len(Path(folder).relative_to(root).parts)
            if depth >= _MAX_SEARCH_DEPTH:
                subfolders[:] = []
            found = sorted(Path(folder) / f for f in files if f.endswith(ALL_SUFFIXES))
            if found:
                runs[Path(folder)] = found
    if not runs:
        raise ProfileError(
            root,
            "no XPlane profiles (*.xplane.pb) or trace JSON files (*.json.gz) were found in this folder",
        )

    def age(item: tuple[Path, list[Path]]) -> tuple[float, str]:
        folder, files = item
        return (max(_mtime(f) for f in files), folder.name)

    ordered = sorted(runs.items(), key=lambda item: (item[0].name, age(item)))
    return [Run(_run_name(root, folder), folder, tuple(files)) for folder, files in ordered]


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


def read_profile_bytes(path: Path) -> tuple[bytes, bool]:
    """A profile file's bytes, gunzipped for `.gz`, and whether a gzip stream ended early.

    Every OS or gzip failure becomes ProfileError. A gzip stream cut short
    (a partial copy, a full disk) yields what decompresses before the cut.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise ProfileError(path, "the file does not exist") from None
    except PermissionError:
        raise ProfileError(path, "permission denied (the file is not readable)") from None
    except IsADirectoryError:
        raise ProfileError(path, "it is a folder, not a file") from None
    except OSError as exc:
        raise ProfileError(path, f"the file cannot be read ({exc.strerror or exc})") from None
    if not data:
        raise ProfileError(path, "the file is empty")
    if data[:2] != GZIP_MAGIC:
        return data, False
    data, ends_early = gunzip_salvaging(path, data)
    if not data:
        if ends_early:
            raise ProfileError(path, "the gzip data is cut short before any of it decompresses")
        raise ProfileError(path, "the compressed file holds no data")
    return data, ends_early


GZIP_MAGIC = b"\x1f\x8b"
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # zlib's window bits for a gzip header and trailer


def gunzip_salvaging(path: Path, data: bytes) -> tuple[bytes, bool]:
    """All gzip members of `data` decompressed, and whether the last one ends before its trailer.

    Why not gzip.decompress: it raises on a cut stream and throws away all it
    decompressed, which for a profile cut short is everything there is.
    """
    parts: list[bytes] = []
    rest = data
    try:
        while rest:
            stream = zlib.decompressobj(_GZIP_WBITS)
            parts.append(stream.decompress(rest))
            if not stream.eof:
                parts.append(stream.flush())
                return _joined(parts), True
            rest = stream.unused_data.lstrip(b"\0")  # gzip allows zero padding between members
            if rest and rest[:2] != GZIP_MAGIC:
                raise ProfileError(path, "the gzip data is corrupted (unexpected bytes after a gzip member)")
    except zlib.error as exc:
        raise ProfileError(path, f"the gzip data is corrupted ({exc})") from None
    return _joined(parts), False


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


def describe_foreign_format(data: bytes) -> str | None:
    """Names the format of bytes that are clearly not an XSpace, for the error message."""
    head = data[:16]
    stripped = data[:256].lstrip()
    if head.startswith(b"\x89PNG"):
        return "it is a PNG image, not an XPlane profile"
    if head[:3] == b"\xff\xd8\xff":
        return "it is a JPEG image, not an XPlane profile"
    if head.startswith(b"PK\x03\x04"):
        return "it is a ZIP archive, not an XPlane profile"
    if head.startswith(b"%PDF"):
        return "it is a PDF document, not an XPlane profile"
    if stripped[:1] in (b"{", b"["):
        if b"traceEvents" in data[:4096]:
            return "it is a Chrome trace-event JSON file, not an XPlane profile (.xplane.pb)"
        return "it is a JSON file, not an XPlane profile (.xplane.pb)"
    if stripped[:1] == b"<":
        return "it is an HTML or XML document, not an XPlane profile"
    if looks_utf8_reencoded(data):
        return (
            "it looks like a binary profile that a text tool re-encoded as UTF-8; "
            "copy or download the original file in binary mode"
        )
    return None


def looks_utf8_reencoded(data: bytes) -> bool:
    """True for binary data that went through a text decode/encode round trip.

    Such files decode as valid UTF-8 and carry many U+FFFD replacement
    characters (EF BF BD), or many C2/C3 lead bytes where raw bytes >= 0x80
    were re-encoded as Latin-1.
    """
    sample = data[: 1 << 20]
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A cut in the middle of a multi-byte character at the sample's end is fine.
        if exc.start < len(sample) - 4:
            return False
    replacements = sample.count(b"\xef\xbf\xbd")
    latin = sample.count(b"\xc2") + sample.count(b"\xc3")
    high = sum(1 for b in sample[:65536] if b >= 0x80)
    return replacements * 3 >= max(16, high // 4) or (latin >= 16 and latin * 2 >= high // 2)
