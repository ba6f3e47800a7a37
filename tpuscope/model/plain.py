"""Numpy values as plain Python values, for JSON output and saved reports.

Results carry numpy scalars and arrays (the model is columnar); `json` writes neither.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def plain(value: Any) -> Any:
    """numpy integers/floats as int/float and arrays as lists, recursing through lists, tuples and
    dicts (tuples become lists); any other value is returned as it is."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value
