"""Types of the C extension built from _kernels.c (see the comments above each function there)."""

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import Buffer as _Buffer

# numpy declares ndarray's buffer protocol (__buffer__) to type checkers only from Python 3.12 on.
Buffer: TypeAlias = _Buffer | np.ndarray[Any, Any]

def sorted_depth(start: Buffer, duration: Buffer, out_depth: Buffer, /) -> bool: ...
def release_pages(buffer: Buffer, offset: int, length: int, /) -> bool: ...
def return_freed_memory_to_os() -> bool: ...
def gather_rows(table: Buffer, indices: Buffer, index_itemsize: int, out: Buffer, /) -> int:
    """out[i] = table[indices[i]] (int32), signed indices of that width; how many fell outside the table."""
