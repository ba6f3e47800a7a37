"""Roofline peaks per device and the compute- vs memory-bound verdict per op.

Peaks come from the device plane's own stats (`peak_teraflops_per_second`,
`peak_hbm_bw_gigabytes_per_second`, written by libtpu) when present, since they are what the chip
reported; otherwise from the datasheet table below, found by the plane's `device_type_string`;
otherwise they are unknown and so is every "bound by".
"""

from __future__ import annotations

import re

import numpy as np

from tpuscope.analysis.bound_codes import BOUND_COMPUTE, BOUND_MEMORY, BOUND_UNKNOWN
from tpuscope.analysis.bound_codes import BOUND_NAMES as BOUND_NAMES  # the codes' words, named here too
from tpuscope.model.records import record
from tpuscope.model.trace import Plane
from tpuscope.model.vocabulary import Stat


@record(frozen=True)
class ChipPeaks:
    """Datasheet peaks of one TPU chip (all of its TensorCores together)."""

    chip: str
    bf16_teraflops_per_second: float
    hbm_gigabytes_per_second: float
    tensor_cores: int


# Peak bf16 TFLOP/s and HBM GB/s per chip: Cloud TPU docs per generation (docs.cloud.google.com/tpu/docs/
# {v4,v5e,v5p,v6e,tpu7x}), cross-checked with JAX `jax/_src/pallas/mosaic/tpu_info.py`. TPU7x HBM is not
# in the Cloud doc; 7370 GB/s is Google's Ironwood announcement (~7.37 TB/s), a secondary source.
CHIP_PEAKS: dict[str, ChipPeaks] = {
    "v4": ChipPeaks("v4", 275.0, 1200.0, tensor_cores=2),
    "v5e": ChipPeaks("v5e", 197.0, 819.0, tensor_cores=1),
    "v5p": ChipPeaks("v5p", 459.0, 2765.0, tensor_cores=2),
    "v6e": ChipPeaks("v6e", 918.0, 1638.0, tensor_cores=1),
    "TPU7x": ChipPeaks("TPU7x", 2307.0, 7370.0, tensor_cores=2),
}

# `device_type_string` spellings: "TPU v4", "TPU v5 lite" / "TPU v5e", "TPU v5p" / "TPU v5", "TPU v6 Lite"
# (seen in the v6e profile), "TPU v7x" (openxla/xprof utilization viewer). The chips' product names, as
# the TPU runtime reports them whatever the file format, so they stay beside the datasheet table.
_DEVICE_TYPE_PATTERNS = (
    (re.compile(r"v7|7x|ironwood", re.IGNORECASE), "TPU7x"),
    (re.compile(r"v6|trillium", re.IGNORECASE), "v6e"),
    (re.compile(r"v5\s*(lite|e)\b|v5litepod", re.IGNORECASE), "v5e"),
    (re.compile(r"v5", re.IGNORECASE), "v5p"),
    (re.compile(r"v4", re.IGNORECASE), "v4"),
)


def chip_of(device_type: str | None) -> str | None:
    """Chip generation key of CHIP_PEAKS for a `device_type_string`, or None when not a known TPU."""
    if not device_type or "tpu" not in device_type.lower():
        return None
    for pattern, chip in _DEVICE_TYPE_PATTERNS:
        if pattern.search(device_type):
            return chip
    return None


@record(frozen=True)
class Peaks:
    """Peak compute and HBM bandwidth of one device, and where they came from."""

    teraflops_per_second: float
    hbm_gigabytes_per_second: float
    source: str  # "plane stats" or "chip table (v6e)"

    @property
    def ridge_flops_per_byte(self) -> float:
        """Operational intensity above which an op is compute bound (peak FLOP/s / peak B/s)."""
        return self.teraflops_per_second * 1e12 / (self.hbm_gigabytes_per_second * 1e9)


def device_peaks(plane: Plane) -> Peaks | None:
    """Peaks of a device plane: its own stats, else the chip table, else None (unknown)."""
    tflops, bandwidth = plane.peak_teraflops_per_second, plane.peak_hbm_bw_gigabytes_per_second
    if tflops and bandwidth and tflops > 0 and bandwidth > 0:
        return Peaks(tflops, bandwidth, "plane stats")
    chip = chip_of(plane.device_type)
    if chip is None:
        return None
    peaks = CHIP_PEAKS[chip]
    # A plane is one TensorCore unless the chip runs its cores as one megacore device (v4/v5p
    # `has_megacore`); JAX `tpu_info.py` TpuInfo is per TensorCore for v4/v5p/7x.
    cores = 1 if plane.stats.get(Stat.MEGACORE) == 1 else peaks.tensor_cores
    return Peaks(
        peaks.bf16_teraflops_per_second / cores,
        peaks.hbm_gigabytes_per_second / cores,
        f"chip table ({chip})",
    )


def bound_by(flops: np.ndarray, bytes_accessed: np.ndarray, peaks: Peaks | None) -> np.ndarray:
    """BOUND_* code per op: compute bound when its FLOPs per byte reach the ridge point.

    Ops with neither FLOPs nor bytes known (NaN), or with no known peaks, are unknown; ops that
    move bytes but do no FLOPs (copies, broadcasts) are memory bound.
    """
    flops = np.asarray(flops, dtype=np.float64)
    bytes_accessed = np.asarray(bytes_accessed, dtype=np.float64)
    out = np.full(len(flops), BOUND_UNKNOWN, dtype=np.int8)
    if peaks is None:
        return out
    known_bytes = np.isfinite(bytes_accessed) & (bytes_accessed > 0)
    flops0 = np.where(np.isfinite(flops), flops, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        intensity = np.where(known_bytes, flops0 / np.where(known_bytes, bytes_accessed, 1.0), np.nan)
    out[known_bytes & (intensity >= peaks.ridge_flops_per_byte)] = BOUND_COMPUTE
    out[known_bytes & (intensity < peaks.ridge_flops_per_byte)] = BOUND_MEMORY
    compute_only = ~known_bytes & np.isfinite(flops) & (flops > 0)
    out[compute_only] = BOUND_COMPUTE
    return out
