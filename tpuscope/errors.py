"""The one error type users see when a profile cannot be opened.

Every failure to read a profile, whatever the layer, ends as a ProfileError
whose message is one sentence naming the file and the cause, so the CLI can
print it and exit 2 and the GUI can show it in a dialog, never a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

from tpuscope.urls import is_url


def display_path(path: str | Path | object) -> str:
    """A path as a message shows it: a name that is not UTF-8 (the OS hands Python its bytes as
    surrogate escapes) with its bytes written as \\xNN escapes, so printing it can never fail."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return os.fsencode(text).decode("utf-8", errors="backslashreplace")
        except UnicodeEncodeError:  # a surrogate no file name holds
            return text.encode("utf-8", errors="backslashreplace").decode("utf-8")
    return text


class ProfileError(Exception):
    """A profile path could not be opened; str(error) is a one-sentence message."""

    def __init__(self, path: str | Path | object | None, cause: str):
        # A URL stays as written: Path("gs://b/x") would fold it into "gs:/b/x". What is neither a str nor
        # a path (a profile held in memory, tpuscope.readers.registry.MemoryFile) is named by its str().
        where: str | Path | None
        if path is None or isinstance(path, str | Path):
            where = path
        else:
            where = os.fspath(path) if isinstance(path, os.PathLike) else str(path)
        self.path: str | Path | None = where if where is None or is_url(where) else Path(where)
        self.cause = cause
        named = display_path(self.path) if self.path is not None else "profile"
        super().__init__(f"Cannot open {named}: {cause}.")


class LoadCancelled(Exception):
    """Raised inside a load when the caller's progress callback asked to stop."""
