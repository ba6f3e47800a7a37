"""Interned strings: every event and stat name is stored once and referenced by an int32 id."""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np


class StringTable:
    """An append-only id <-> string table shared by the whole trace.

    Id 0 is always the empty string, so a zero-filled id column reads as "no name".
    """

    def __init__(self) -> None:
        self._strings: list[str] = [""]
        self._ids: dict[str, int] = {"": 0}

    def __len__(self) -> int:
        return len(self._strings)

    def __getitem__(self, string_id: int) -> str:
        return self._strings[int(string_id)]

    def intern(self, text: str) -> int:
        found = self._ids.get(text)
        if found is None:
            found = len(self._strings)
            self._strings.append(text)
            self._ids[text] = found
        return found

    def intern_many(self, texts: Iterable[str]) -> np.ndarray:
        """Interns a handful of distinct strings (callers dedupe first) and returns their ids."""
        return np.fromiter((self.intern(t) for t in texts), dtype=np.int32)

    def id_of(self, text: str) -> int | None:
        return self._ids.get(text)

    def ids_matching(self, pattern: str, regex: bool = False, ignore_case: bool = True) -> np.ndarray:
        """Ids of all strings containing `pattern` (or matching it as a regex).

        Scans the table of distinct names, not the events, so it stays fast on
        any trace size; callers then test event name ids with np.isin.
        """
        flags = re.IGNORECASE if ignore_case else 0
        matcher = re.compile(pattern if regex else re.escape(pattern), flags)
        return np.fromiter(
            (i for i, s in enumerate(self._strings) if i and matcher.search(s)), dtype=np.int32
        )

    def as_list(self) -> list[str]:
        return list(self._strings)
