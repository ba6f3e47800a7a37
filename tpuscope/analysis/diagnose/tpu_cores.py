"""Which devices are TPU TensorCores and which are SparseCores, from their planes' identities.

The reader tells them apart (`PlaneIdentity.sparse_core`): XPlane names TensorCore planes
`/device:TPU:N` and SparseCore planes `/device:TPU:N SparseCore M`.
"""

from __future__ import annotations

from tpuscope.analysis.device_ops import Device


def is_sparsecore(device: Device) -> bool:
    return device.kind == "TPU" and device.plane.identity.sparse_core


def tensorcores(devices: list[Device]) -> list[Device]:
    return [d for d in devices if d.kind == "TPU" and not is_sparsecore(d)]


def sparsecores(devices: list[Device]) -> list[Device]:
    return [d for d in devices if is_sparsecore(d)]
