"""What bounds an op, as the roofline judges it (`tpuscope.analysis.roofline.bound_by`): one int8 code
per op row, and the words `ops --json` prints for each.

Apart from the roofline's peaks and datasheet tables so that every op table names its rows'
verdicts without importing those: a profile without a device plane (XLA:CPU, a PyTorch CPU run) has
no peaks, its ops are all "unknown", and `overview` and `diagnose` of it skip the roofline (~1.2 ms).
"""

from __future__ import annotations

BOUND_UNKNOWN = 0
BOUND_COMPUTE = 1
BOUND_MEMORY = 2
BOUND_NAMES = ("unknown", "compute", "memory")
