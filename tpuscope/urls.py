"""Telling a storage URL (`gs://bucket/logdir`) from a local path, with no import beyond `re`.

The CLI's argument check, ProfileError's message and the loaders all ask this one question, and the
CLI asks it before any heavy module is imported.
"""

from __future__ import annotations

import re

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def is_url(path: object) -> bool:
    """True for `scheme://...` strings other than file:// (which is a local path)."""
    if not isinstance(path, str):
        return False
    match = _SCHEME.match(path)
    return match is not None and match.group(1).lower() != "file"
