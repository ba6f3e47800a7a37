"""Per-step device busy vs idle time, for the per-step chart, and the profile's duty cycle.

A step's busy time is the time inside the step during which the device ran at least one op (the
union of op intervals from `device_ops`), averaged over the chosen devices; idle is the rest of the
step. Steps come from `steps.find_steps`, so a step boundary means the same here as in the diagnoses.
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.device_ops import (
    Device,
    busy_coverage,
    device_activity,
    find_devices,
    select_devices,
)
from tpuscope.analysis.steps import Steps, find_steps
from tpuscope.model.records import record
from tpuscope.model.trace import Trace


@record
class StepBreakdown:
    """Per-step arrays (parallel to `steps`) plus whole-profile duty cycles."""

    steps: Steps
    devices: list[Device]
    busy_per_device_ps: np.ndarray  # (n_devices, n_steps) int64
    duty_cycle_per_device: np.ndarray  # (n_devices,) busy / profile duration, whole profile
    profile_busy_ps: np.ndarray  # (n_devices,) busy time over the whole profile

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def number(self) -> np.ndarray:
        return self.steps.number

    @property
    def start_ps(self) -> np.ndarray:
        return self.steps.start_ps

    @property
    def end_ps(self) -> np.ndarray:
        return self.steps.end_ps

    @property
    def duration_ps(self) -> np.ndarray:
        return self.steps.end_ps - self.steps.start_ps

    @property
    def busy_ps(self) -> np.ndarray:
        """Mean busy time per step over the devices (all devices run the same step in SPMD)."""
        if len(self.devices) == 0:
            return np.zeros(len(self), dtype=np.float64)
        return self.busy_per_device_ps.mean(axis=0)

    @property
    def idle_ps(self) -> np.ndarray:
        return np.maximum(self.duration_ps - self.busy_ps, 0)

    @property
    def duty_cycle(self) -> float:
        """Mean fraction of the profile the devices spent running ops (0..1)."""
        return float(self.duty_cycle_per_device.mean()) if len(self.devices) else 0.0

    @property
    def step_duty_cycle(self) -> float:
        """Busy share of the time inside steps (0..1), NaN without steps."""
        total = float(self.duration_ps.sum())
        return float(self.busy_ps.sum()) / total if total > 0 else float("nan")

    def to_json(self) -> dict:
        return {
            "steps": self.steps.to_json(),
            "devices": [d.label for d in self.devices],
            "duty_cycle": self.duty_cycle,
            "step_duty_cycle": None if np.isnan(self.step_duty_cycle) else self.step_duty_cycle,
            "rows": [
                {
                    "step": int(n),
                    "start_us": float(s) / 1e6,
                    "duration_us": float(d) / 1e6,
                    "busy_us": float(b) / 1e6,
                    "idle_us": float(i) / 1e6,
                }
                for n, s, d, b, i in zip(
                    self.number, self.start_ps, self.duration_ps, self.busy_ps, self.idle_ps, strict=True
                )
            ],
        }


def step_breakdown(
    trace: Trace,
    devices: list[Device] | None = None,
    steps: Steps | None = None,
    device: str | int | None = "all",
) -> StepBreakdown:
    """Busy/idle per step for `devices` (default: those chosen by `device` among all devices)."""
    if devices is None:
        devices = select_devices(find_devices(trace), device)
    steps = find_steps(trace) if steps is None else steps
    busy = np.zeros((len(devices), len(steps)), dtype=np.int64)
    whole = np.zeros(len(devices), dtype=np.int64)
    duty = np.zeros(len(devices), dtype=np.float64)
    for row, dev in enumerate(devices):
        if len(steps):
            busy[row] = busy_coverage(dev)(steps.start_ps, steps.end_ps)
        activity = device_activity(dev)
        whole[row] = activity.busy_ps
        duty[row] = activity.duty_cycle
    return StepBreakdown(steps, devices, busy, duty, whole)
