"""Types of the C extension built from _planeheader.c (see the comments above each function there)."""

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import Buffer as _Buffer

Buffer: TypeAlias = _Buffer | np.ndarray[Any, Any]

Stat: TypeAlias = tuple[int, int, Any]
"""(stat metadata id, kind as in decode.py's KIND_*, value: float, int, bytes or None)."""

EventMetadataEntry: TypeAlias = tuple[int, int, bytes, bytes, list[Stat], tuple[int, ...]]
"""(map key, id, name, display_name, stats, child ids)."""

def plane_header(
    plane: Buffer, /
) -> tuple[int, bytes, list[EventMetadataEntry], list[tuple[int, bytes]], list[Stat]]: ...
def space_strings(space: Buffer, /) -> tuple[list[bytes], list[bytes], list[bytes]]: ...
