"""Types of the C extension built from _linedecode.c (see the comments above each function there).

Buffers are anything exposing the buffer protocol (bytes, memoryview, numpy arrays); the writable
ones (`w*` in the C argument parsing) must be writable numpy columns of the item sizes fill()
documents.
"""

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import Buffer as _Buffer

# numpy declares ndarray's buffer protocol (__buffer__) to type checkers only from Python 3.12 on.
Buffer: TypeAlias = _Buffer | np.ndarray[Any, Any]

LineHeader: TypeAlias = tuple[int, int, int, int, bytes, bytes, int, int, int]
"""(id, display_id, timestamp_ns, duration_ps, name, display_name, n_events, n_stats, n_strings)."""

def scan(line: Buffer, control: Buffer = ..., slot: int = ..., /) -> LineHeader: ...
def fill(
    line: Buffer,
    n_events: int,
    n_stats: int,
    str_capacity: int,
    ev_meta: Buffer,
    ev_offset: Buffer,
    ev_duration: Buffer,
    st_meta: Buffer,
    st_kind: Buffer,
    st_value: Buffer,
    st_event: Buffer,
    str_offset: Buffer,
    str_length: Buffer,
    str_hash: Buffer,
    control: Buffer = ...,
    slot: int = ...,
    /,
) -> int: ...
def split_message(buffer: Buffer, field_number: int, /) -> tuple[bytes, list[tuple[int, int]]]: ...
def message_fields(buffer: Buffer, start: int, stop: int, wanted: Buffer, /) -> list[int]: ...
def intact_prefix(buffer: Buffer, /) -> tuple[int, int, int, int, int]: ...
def every_event_has_each(st_meta: Buffer, st_event: Buffer, k: int, /) -> bool: ...
def group_by_id(
    st_meta: Buffer,
    st_kind: Buffer,
    st_value: Buffer,
    st_event: Buffer,
    out_kind: Buffer,
    out_value: Buffer,
    out_event: Buffer,
    /,
) -> list[tuple[int, int, int, int]] | None:
    """[(meta_id, start, stop, kinds_present)], or None for ids outside the counting table."""

def intern_keys(keys: Buffer, out_inverse: Buffer, /) -> list[int]: ...
def fill_regular(
    line: Buffer,
    n_events: int,
    k: int,
    ev_meta: Buffer,
    ev_offset: Buffer,
    ev_duration: Buffer,
    values: Buffer,
    control: Buffer = ...,
    slot: int = ...,
    /,
) -> tuple[list[int], list[int]] | None:
    """([stat ids], [kinds present, as bits]) of a line whose events all carry the same numeric stats."""

def scan_events(line: Buffer, control: Buffer = ..., /) -> tuple[LineHeader, int]:
    """(header with n_stats -1, the first event's stats): the events counted without reading inside them."""
