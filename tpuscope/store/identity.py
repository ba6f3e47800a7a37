"""What a cached result was made from, as one key: every cache of the store names its entries with it.

A local file is its resolved path, its size and its modification time in nanoseconds: an edited,
replaced or truncated file gets a new key, so its old entries are never read again (they age out
under the cap). A cloud-storage object is its URL, size and generation (or etag): the bucket's own
version of it, known from the listing without downloading it.

The key is two independent 32-bit checksums of the identities (16 hex digits), not a cryptographic
hash: loading OpenSSL for hashlib cost 5 ms of every cold start (python -X importtime), and 64 bits
are plenty to tell apart the profiles of one user. The trace cache's entry names are this key of the
trace's files, with no salt, as they were before the caches shared it (old entries stay valid).

Size and mtime miss a file rewritten in place within the clock's resolution, or copied by a tool
that keeps times: `content_fingerprint` (its length and checksums of its first and last MiB, read
in about a millisecond) is what an entry also records and checks on open. And a cache opens its
own files with `open_regular`, which never waits on a FIFO nor follows a link out of its folder.
"""

from __future__ import annotations

import errno
import os
import stat
import zlib
from collections.abc import Iterable
from pathlib import Path

# The fingerprint reads this much at each end of a file: cheap on the first open of any size, and
# it covers a profile's header and its last records (where a rewrite of the same size differs
# first: new times, new names; a change only in the middle is not seen).
FINGERPRINT_SPAN_BYTES = 1 << 20


def file_identity(path: Path) -> str | None:
    """'resolved path|size|mtime_ns' of a local file; None when it cannot be read (no key, no entry)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"


def object_identity(url: str, size: int, generation: str) -> str:
    """'url|size|generation' of a cloud-storage object (its generation or etag, from the listing)."""
    return f"{url}|{size}|{generation}"


def key_of(identities: Iterable[str], salt: str = "") -> str:
    """16 hex digits for these identities; `salt` (a cache's kind and format version) sets apart the
    entries of different caches, or of different formats, made from the same files."""
    lines = [salt, *identities] if salt else list(identities)
    # A file name that is not UTF-8 reaches Python as surrogate escapes: they encode back to its bytes.
    data = "\n".join(lines).encode("utf-8", errors="surrogateescape")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def files_key(files: Iterable[Path], salt: str = "") -> str | None:
    """The key of these local files, or None when one of them cannot be read."""
    identities = []
    for file in files:
        identity = file_identity(file)
        if identity is None:
            return None
        identities.append(identity)
    return key_of(identities, salt)


def open_regular(path: Path, flags: int = os.O_RDONLY, mode: int = 0o644, follow: bool = False) -> int:
    """A descriptor of `path` when it is a regular file; OSError otherwise.

    Opened without blocking (a FIFO, a device or a socket in its place would wait forever for a
    writer) and, unless `follow`, without following a symbolic link (one out of the cache's folder
    is not an entry); the descriptor is closed again when fstat says it is not a regular file."""
    flags |= getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(path, flags, mode)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def content_fingerprint(path: Path) -> str | None:
    """'length:checksums' of a local file's first and last FINGERPRINT_SPAN_BYTES (the first two
    spans are all of it when it is shorter); None when it cannot be read as a regular file."""
    try:
        descriptor = open_regular(path, follow=True)
    except OSError:
        return None
    try:
        with os.fdopen(descriptor, "rb") as handle:
            size = os.fstat(descriptor).st_size
            head = handle.read(min(size, 2 * FINGERPRINT_SPAN_BYTES))
            tail = b""
            if size > 2 * FINGERPRINT_SPAN_BYTES:
                handle.seek(size - FINGERPRINT_SPAN_BYTES)
                tail = handle.read(FINGERPRINT_SPAN_BYTES)
    except OSError:
        return None
    # CRC-32 of each end (zlib's adler32 took 12 ms of 2 MiB here, its CRC-32 under 1 ms).
    return f"{size}:{zlib.crc32(head):08x}{zlib.crc32(tail):08x}"


def files_fingerprints(files: Iterable[Path]) -> list[str] | None:
    """Each file's `content_fingerprint`, or None when one of them cannot be read."""
    found = []
    for file in files:
        fingerprint = content_fingerprint(file)
        if fingerprint is None:
            return None
        found.append(fingerprint)
    return found
