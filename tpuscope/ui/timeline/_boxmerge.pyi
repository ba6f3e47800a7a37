"""Types of the C extension built from _boxmerge.c (see its header comment)."""

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import Buffer as _Buffer

# numpy declares ndarray's buffer protocol (__buffer__) to type checkers only from Python 3.12 on.
Buffer: TypeAlias = _Buffer | np.ndarray[Any, Any]

def merge_small(
    start: Buffer,
    end: Buffer,
    rep: Buffer,
    count: Buffer,
    min_ps: float,
    out_start: Buffer,
    out_end: Buffer,
    out_rep: Buffer,
    out_count: Buffer,
    /,
) -> int:
    """Boxes written to the out_* columns (contiguous int64, as long as the inputs)."""
