"""The one error type users see when a profile cannot be opened.

Every failure to read a profile, whatever the layer, ends as a ProfileError
whose message is one sentence naming the file and the cause, so the CLI can
print it and exit 2 and the GUI can show it in a dialog, never a traceback.
"""

from __future__ import annotations

from pathlib import Path

from tpuscope.urls import is_url


class ProfileError(Exception):
    """A profile path could not be opened; str(error) is a one-sentence message."""

    def __init__(self, path: str | Path | None, cause: str):
        # A URL stays as written: Path("gs://b/x") would fold it into "gs:/b/x".
        self.path: str | Path | None = path if path is None or is_url(path) else Path(path)
        self.cause = cause
        where = f"{self.path}" if self.path is not None else "profile"
        super().__init__(f"Cannot open {where}: {cause}.")


class LoadCancelled(Exception):
    """Raised inside a load when the caller's progress callback asked to stop."""
