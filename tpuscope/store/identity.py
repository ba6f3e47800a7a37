"""What a cached result was made from, as one key: every cache of the store names its entries with it.

A local file is its resolved path, its size and its modification time in nanoseconds: an edited,
replaced or truncated file gets a new key, so its old entries are never read again (they age out
under the cap). A cloud-storage object is its URL, size and generation (or etag): the bucket's own
version of it, known from the listing without downloading it.

The key is two independent 32-bit checksums of the identities (16 hex digits), not a cryptographic
hash: loading OpenSSL for hashlib cost 5 ms of every cold start (python -X importtime), and 64 bits
are plenty to tell apart the profiles of one user. The trace cache's entry names are this key of the
trace's files, with no salt, as they were before the caches shared it (old entries stay valid).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from pathlib import Path


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
