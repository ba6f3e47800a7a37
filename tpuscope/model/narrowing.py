"""Integer columns stored in the smallest signed type that holds their range.

Why: per-event values such as metadata ids, queue ids or durations rarely need 64 bits, and the
model's memory budget is per event. The decoder narrows each line as it decodes it, so the
full-width copy never accumulates across lines; the loader narrows the merged stat columns again.
"""

from __future__ import annotations

import numpy as np


def narrow_integers(values: np.ndarray) -> np.ndarray:
    """An int64 column as int8/16/32 when its range fits; any other column unchanged."""
    if values.dtype != np.int64 or len(values) == 0:
        return values
    low, high = int(values.min()), int(values.max())
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return values.astype(dtype)
    return values
