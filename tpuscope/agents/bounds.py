"""Keeping a tool's result inside a byte budget, and saying what was left out.

A model reads a tool's result whole, in its context window, so a result must be bounded however
large the profile: a payload over `max_bytes` (its compact JSON) has its longest lists cut to the
same length, the largest that fits (a binary search), then, if still over, its long strings; every
cut is listed with the list's or string's total, so the caller knows what it did not see and can ask
again with a larger budget, a smaller `top` or a page (`offset`). Pure JSON in, pure JSON out.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tpuscope.model.plain import plain

# Results larger than this never leave the server (our heuristic: 5 MB is past what any client puts
# in a model's context; a caller that needs more runs the CLI with --json).
MAX_BYTES_CEILING = 5_000_000
# The default budget of one result (our heuristic: ~25k tokens at ~4 bytes a token, a fraction of
# a model's context window).
DEFAULT_MAX_BYTES = 100_000
# Strings are cut no shorter than this (our heuristic: a line of HLO text or a stack frame).
MIN_STRING_CHARS = 80


def to_plain_json(payload: Any) -> Any:
    """The payload as `json` would write and read it back: numpy values as Python, bytes as text, so
    it equals what the command prints with `--json`."""
    return json.loads(json.dumps(payload, default=_default))


def _default(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    converted = plain(value)
    if converted is value:
        raise TypeError(f"not JSON serializable: {type(value).__name__}")
    return converted


def size_of(payload: Any) -> int:
    return len(json.dumps(payload, separators=(",", ":")).encode())


def bound(payload: Any, max_bytes: int) -> tuple[Any, list[dict[str, Any]]]:
    """(the payload within `max_bytes`, the cuts made: {"path", "total", "returned"} each, where
    `total` counts a list's items or a string's characters). ValueError when even every list cut to
    one item and every string to MIN_STRING_CHARS is over the budget. Cuts at one place of every row
    are one entry with their `count` and the largest `total`."""
    if size_of(payload) <= max_bytes:
        return payload, []
    longest = _longest(payload, list)
    low, high = 1, max(longest, 1)  # the largest list cap that fits, by bisection
    if size_of(_cut(payload, 1, None, "", [])) <= max_bytes:
        while low < high:
            middle = (low + high + 1) // 2
            if size_of(_cut(payload, middle, None, "", [])) <= max_bytes:
                low = middle
            else:
                high = middle - 1
        cuts: list[dict[str, Any]] = []
        return _cut(payload, low, None, "", cuts), _grouped(cuts)
    chars_low, chars_high = MIN_STRING_CHARS, max(_longest(payload, str), MIN_STRING_CHARS)
    if size_of(_cut(payload, 1, chars_low, "", [])) > max_bytes:
        raise ValueError(
            f"the result does not fit in {max_bytes:,} bytes even cut to one item per list; "
            "ask for less (a smaller top, a filter) or a larger max_bytes"
        )
    while chars_low < chars_high:
        middle = (chars_low + chars_high + 1) // 2
        if size_of(_cut(payload, 1, middle, "", [])) <= max_bytes:
            chars_low = middle
        else:
            chars_high = middle - 1
    cuts = []
    return _cut(payload, 1, chars_low, "", cuts), _grouped(cuts)


def _grouped(cuts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cuts of the lists or strings at one place in every row (`rows[*].stack`) as one entry:
    how many were cut and the largest total, so the list of cuts stays short."""
    groups: dict[str, dict[str, Any]] = {}
    for cut in cuts:
        key = re.sub(r"\[\d+\]", "[*]", cut["path"])
        group = groups.get(key)
        if group is None:
            groups[key] = {**cut, "path": key, "count": 1}
        else:
            group["count"] += 1
            group["total"] = max(group["total"], cut["total"])
    return list(groups.values())


def _longest(value: Any, kind: type) -> int:
    if isinstance(value, dict):
        return max((_longest(v, kind) for v in value.values()), default=0)
    if isinstance(value, list):
        own = len(value) if kind is list else 0
        return max([own] + [_longest(v, kind) for v in value])
    if isinstance(value, str) and kind is str:
        return len(value)
    return 0


def _cut(value: Any, items: int, chars: int | None, path: str, cuts: list[dict[str, Any]]) -> Any:
    if isinstance(value, dict):
        return {k: _cut(v, items, chars, f"{path}.{k}" if path else str(k), cuts) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) > items:
            cuts.append({"path": path or "(result)", "total": len(value), "returned": items})
        return [_cut(v, items, chars, f"{path}[{i}]", cuts) for i, v in enumerate(value[:items])]
    if isinstance(value, str) and chars is not None and len(value) > chars:
        cuts.append({"path": path or "(result)", "total": len(value), "returned": chars})
        return value[: chars - 1] + "…"
    return value
