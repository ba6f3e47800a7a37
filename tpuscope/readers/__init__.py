"""The file formats tpuscope reads, one `Reader` each, registered by name in `READERS`.

Adding a format is one module with its load function and one entry here (or `register` at run time):
opening (`tpuscope.app.opener.open_trace`), run discovery, the file dialog's filters, the CLI's help and
the cloud listing all read this table. Every reader builds the format-neutral `tpuscope.model` trace.
"""

from __future__ import annotations

from pathlib import PurePath

from tpuscope.readers.registry import MemoryFile, ProgressCallback, Reader
from tpuscope.readers.trace_event import CHROME_READER, KINETO_READER
from tpuscope.readers.xplane import XPLANE_READER

# Registration order is the order sniffs are tried in, and the first entry is the fallback reader of
# a file nothing claims (XPlane: its errors name what such a file is, "it is a PNG image, ...").
READERS: dict[str, Reader] = {r.name: r for r in (XPLANE_READER, KINETO_READER, CHROME_READER)}


def register(reader: Reader) -> None:
    """Adds (or replaces) a format: everything that reads the table sees it from now on."""
    READERS[reader.name] = reader


def listed_suffixes() -> tuple[str, ...]:
    """Every ending of a profile file in a run folder or bucket, longest first."""
    return tuple(sorted({s for r in READERS.values() for s in r.suffixes}, key=len, reverse=True))


def named_suffixes() -> tuple[str, ...]:
    """Every ending a profile file may have when named directly, longest first."""
    return tuple(sorted({s for r in READERS.values() for s in r.all_suffixes}, key=len, reverse=True))


def reader_by_name(name: str) -> Reader | None:
    """The reader whose suffix the file name ends with (the longest matching suffix wins)."""
    best: tuple[int, Reader] | None = None
    for reader in READERS.values():
        for suffix in reader.all_suffixes:
            if name.endswith(suffix) and (best is None or len(suffix) > best[0]):
                best = (len(suffix), reader)
    return best[1] if best else None


def reader_by_content(head: bytes) -> Reader | None:
    """The first reader (in registration order) whose sniff claims these first bytes."""
    for reader in READERS.values():
        if reader.sniff(head):
            return reader
    return None


def reader_for_bytes(data: bytes, name: str | None = None) -> tuple[Reader, str]:
    """The reader of a profile held in memory and the file name it is read under: by `name`'s suffix
    when given, else by its first bytes (gunzipped), as a file's reader is chosen (`files.choose_reader`);
    an unnamed profile is `profile` with the format's first suffix (`.gz` added for gzip bytes)."""
    from tpuscope.readers.files import GZIP_MAGIC, gunzip_head

    gzipped = bytes(data[:2]) == GZIP_MAGIC
    head = gunzip_head(data)
    if name:
        return reader_by_name(name) or reader_by_content(head) or fallback_reader(), name
    reader = _text_reader(head) or reader_by_content(head) or fallback_reader()
    suffix = reader.suffixes[0]
    return reader, "profile" + suffix + (".gz" if gzipped and not suffix.endswith(".gz") else "")


def _text_reader(head: bytes) -> Reader | None:
    """Without a file name, a sniff of one byte can claim text: a JSON document that starts with a
    newline starts with an XSpace's first byte too (0x0a). A head that decodes as UTF-8 is no
    protobuf, so the readers after the fallback (the binary one) are asked first."""
    try:
        head[:-4].decode("utf-8")  # the last bytes may cut a character in two
    except UnicodeDecodeError:
        return None
    return next((r for r in list(READERS.values())[1:] if r.sniff(head)), None)


def fallback_reader() -> Reader:
    return next(iter(READERS.values()))


def dialog_filters() -> str:
    """The file dialog's filter string: all profiles, then one filter per format, then all files."""

    def patterns(reader: Reader) -> str:
        return " ".join(f"*{s}" for s in reader.all_suffixes)

    every = " ".join(dict.fromkeys(p for r in READERS.values() for p in patterns(r).split()))
    parts = [f"Profiles ({every})"] + [f"{r.title} files ({patterns(r)})" for r in READERS.values()]
    return ";;".join(parts + ["All files (*)"])


def formats_help() -> str:
    """The formats for a command's help: "XPlane profiles (.xplane.pb, ...), ..."."""
    return ", ".join(f"{r.title} ({', '.join(r.suffixes)})" for r in READERS.values())


def path_help() -> str:
    """What a command's PATH may be, for its help."""
    return f"a profile file ({formats_help()}), a run folder, or a logdir (its newest run)"


def host_from_filename(path: PurePath | MemoryFile) -> str:
    """The host (or rank) a profile file is named for: its name without the format's suffix."""
    name = path.name
    for suffix in named_suffixes():
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


__all__ = [
    "READERS",
    "ProgressCallback",
    "Reader",
    "dialog_filters",
    "fallback_reader",
    "formats_help",
    "host_from_filename",
    "listed_suffixes",
    "path_help",
    "named_suffixes",
    "reader_by_content",
    "reader_by_name",
    "reader_for_bytes",
    "register",
]
