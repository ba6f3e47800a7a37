"""Which devices are TPU TensorCores and which are SparseCores, from their plane names.

XLA names TensorCore planes `/device:TPU:N` and SparseCore planes `/device:TPU:N SparseCore M`
(openxla/xla xla/tsl/profiler/utils/xplane_schema.cc, the TPU and SparseCore plane regexes).
"""

from __future__ import annotations

from tpuscope.analysis.device_ops import Device

SPARSECORE_MARK = "SparseCore"


def is_sparsecore(device: Device) -> bool:
    return device.kind == "TPU" and SPARSECORE_MARK in device.plane.identity.suffix


def tensorcores(devices: list[Device]) -> list[Device]:
    return [d for d in devices if d.kind == "TPU" and not is_sparsecore(d)]


def sparsecores(devices: list[Device]) -> list[Device]:
    return [d for d in devices if is_sparsecore(d)]
