"""Robust outlier scoring shared by the step-time and straggler rules."""

from __future__ import annotations

import numpy as np

from tpuscope.model import order_statistics

# XProf straggler detection: modified z-score 0.6745 * (x - median) / max(MAD, 0.1) above 3.5
# (openxla/xprof xprof/convert/smart_suggestion/signal_provider.h GetHostStragglers).
MODIFIED_Z_SCALE = 0.6745
MODIFIED_Z_OUTLIER = 3.5
MAD_FLOOR = 0.1  # in the unit of the values (ms here, as XProf's step times)


def modified_z(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0:
        return values
    median = order_statistics.median(values)
    mad = order_statistics.median(np.abs(values - median))
    return MODIFIED_Z_SCALE * (values - median) / max(mad, MAD_FLOOR)
