"""Units: what a metric's value is measured in. A value's unit never changes with its size: a step
time is always `us` in JSON, whatever the text output rounds it to.

Their own module, beside the registry (`tpuscope.analysis.metrics.registry`, which names them too),
so that the formatter, which every diagnose rule reads, does not import the registry's records
(~1.7 ms of `overview` and `diagnose` of one trace, which make none).
"""

from __future__ import annotations

US = "us"  # microseconds
FRACTION = "fraction"  # 0..1 (duty cycles, as `overview --json` has always written them)
PERCENT = "percent"  # 0..100 (shares of step or device time)
BYTES = "bytes"
UNITS = (US, FRACTION, PERCENT, BYTES)
