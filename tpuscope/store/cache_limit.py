"""How many bytes the store's caches may hold, and whether they may hold anything at all.

The cap: TPUSCOPE_CACHE_MAX, else the desktop app's setting, else the default
(`tpuscope.store.bound.size_limit`). The switch, `caching_on`: off with TPUSCOPE_NO_CACHE or a cap of
0, for every kind of cache alike (traces, pod results, run summaries; downloads of bucket runs then
last one session: `tpuscope.store.remote`). Apart from the caches so that the app can apply its
setting at start without importing numpy (the window paints before numpy is loaded)."""

from __future__ import annotations

import os
import re

MAX_ENV = "TPUSCOPE_CACHE_MAX"
DISABLE_ENV = "TPUSCOPE_NO_CACHE"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}

_app_limit: int | None = None  # the desktop app's setting (set_size_limit)


def parse_size(text: str) -> int:
    """'2G', '500M', '1.5GiB', '0' or plain bytes -> bytes (powers of 1024). Raises ValueError."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size (like 2G, 500M or a number of bytes)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def set_size_limit(limit_bytes: int | None) -> None:
    """The desktop app's setting (None: the default). TPUSCOPE_CACHE_MAX, when set, wins."""
    global _app_limit
    _app_limit = limit_bytes


def configured_limit() -> tuple[int | None, str, str | None]:
    """The explicit cap, where it comes from ('default' when none), and why TPUSCOPE_CACHE_MAX was
    ignored (None when it was not)."""
    text = os.environ.get(MAX_ENV, "").strip()
    problem = None
    if text:
        try:
            return parse_size(text), MAX_ENV, None
        except ValueError as error:
            problem = f"{MAX_ENV}: {error}; it is ignored."
    if _app_limit is not None:
        return _app_limit, "the app's setting", problem
    return None, "default", problem


def caching_on() -> bool:
    """False when TPUSCOPE_NO_CACHE is set (to anything but 0) or the cap is 0: the one switch that
    every cache of the store asks before it reads or writes an entry."""
    if os.environ.get(DISABLE_ENV, "") not in ("", "0"):
        return False
    limit, _, _ = configured_limit()
    return limit != 0
