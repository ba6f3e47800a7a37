"""Who the others wait for, and how much of each step goes to collectives, over a `PodAnalysis`.

The host that arrives last at a collective waits the least in it: the others entered earlier and
wait there until it comes. So the late host is the one whose time waiting in collectives is
*short* while the others' is long, step after step; collective time alone says nothing (on a
slow interconnect every host spends much of its step there). A host's wait is its exposed
collective time (`HostSummary.exposed_collective_ps`: the part no compute of its devices
overlapped, which is all of it for blocking collectives); time a collective spends behind compute
keeps nobody waiting. Its lateness in one step is the median of the other hosts' wait minus its
own: how long the others waited for it.

A host is called late when (all three, so noise in one step or a balanced run never fires):
- its collective time is an outlier below the others' by XProf's modified z-score (|z| > 3.5 with
  at least 3 hosts: openxla/xprof, xprof/convert/smart_suggestion/signal_provider.h, and
  `tpuscope.analysis.facts.outliers`), scored on each host's median over the steps of its
  collective time minus that step's median over the hosts: the whole pod speeds up and slows
  down from step to step (which would blur a score over whole-profile averages), while a late
  host is below the others in every step;
- it has the shortest collective time of all hosts in at least MIN_LATE_STEP_FRACTION of the steps;
- the others wait for it at least WAIT_PERCENT_OF_STEP of the median step time per step.

With fewer than 3 hosts but at least 3 devices (one multi-chip host), the devices are compared
the same way, on their own collective and compute time.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

import numpy as np

from tpuscope.analysis.facts.outliers import MODIFIED_Z_OUTLIER, modified_z
from tpuscope.model import order_statistics
from tpuscope.model.records import record

if TYPE_CHECKING:
    from tpuscope.analysis.pod.analysis import PodAnalysis

MIN_UNITS = 3  # XProf's host straggler score needs at least 3 hosts (signal_provider.h)
# The late host has the shortest collective time in at least this share of the steps: our heuristic
# for "step after step".
MIN_LATE_STEP_FRACTION = 0.75
# The others' wait must be at least this share of the step: XProf flags multi-host barrier waits from
# 10 % of step time (openxla/xprof, xprof/convert/smart_suggestion/barrier_cores_rule.h,
# kSpecialOpBoundThresholdInPercent).
WAIT_PERCENT_OF_STEP = 10.0
# XProf's CollectiveBoundRule: collectives >= 30 % of step time (openxla/xprof,
# xprof/convert/smart_suggestion/constants.h, kCollectiveBoundThresholdInPercent).
COLLECTIVE_BOUND_PERCENT = 30.0
# What a late host may do instead of arriving on time, in the order they are checked.
CAUSES = ("input", "host", "compile", "compute")
CAUSE_WORDS = {
    "input": "loading data (its devices waited for input)",
    "host": "host work outside the data loader (Python, logging, other processes)",
    "compile": "compiling",
    "compute": "computing: its device took longer for the same step",
}
PS_PER_MS = 1e9


@record
class Units:
    """What is compared: hosts (per host means over its devices) or the devices of one host."""

    kind: str  # "host" or "device"
    names: list[str]
    hosts: list[str]  # the host of each unit
    collective: np.ndarray  # (units, steps) ps
    parts: dict[str, np.ndarray]  # CAUSES -> (units, steps) ps
    step_ps: np.ndarray  # (units, steps)


@record
class LateUnit:
    """A host (or device) the others wait for at the collectives."""

    kind: str
    name: str
    host: str
    row: int  # its row in the units
    z_score: float
    late_steps: int
    steps: int
    wait_per_step_ps: float  # median over steps: how long the others waited for it
    wait_total_ps: float  # summed over the steps, per waiting unit
    wait_all_units_ps: float  # summed over the steps and over every waiting unit
    lateness_ps: np.ndarray  # per aligned step
    extra_per_step_ps: dict[str, float]  # CAUSES -> median extra time per step over the others
    cause: str  # the largest positive extra, or "" when none explains it
    worst_step: int  # aligned step position where it was latest
    collective_per_step_ps: dict[str, float] = field(default_factory=dict)  # unit -> median

    @property
    def cause_extra_ps(self) -> float:
        return self.extra_per_step_ps.get(self.cause, 0.0)


@record
class LateVerdict:
    units: Units | None
    late: list[LateUnit]
    checked: str


def compared_units(pod: PodAnalysis) -> Units | None:
    """Hosts when there are at least MIN_UNITS with steps; else the devices of the hosts."""
    if pod.step_count == 0:
        return None
    if len(pod.hosts) >= MIN_UNITS:
        parts = {p: pod.matrix(p) for p in CAUSES}
        waits = pod.exposed_collective_matrix()  # the time each host waited in collectives (docstring)
        return Units("host", list(pod.hosts), list(pod.hosts), waits, parts, pod.matrix("step"))
    names, hosts, collective, compute, step = [], [], [], [], []
    others: dict[str, list[np.ndarray]] = {p: [] for p in CAUSES if p != "compute"}
    for summary, pos in zip(pod.host_summaries, pod.positions, strict=True):
        for d, label in enumerate(summary.devices):
            names.append(label)
            hosts.append(summary.host)
            collective.append(summary.device_collective_ps[d][pos])
            compute.append(summary.device_compute_ps[d][pos])
            step.append(summary.step_ps[pos])
            for p in others:
                others[p].append(summary.part(p)[pos])
    if len(names) < MIN_UNITS:
        return None
    parts = {p: np.array(v, np.float64) for p, v in others.items()}
    parts["compute"] = np.array(compute, np.float64)
    return Units("device", names, hosts, np.array(collective, np.float64), parts, np.array(step, np.float64))


def find_late(pod: PodAnalysis) -> LateVerdict:
    """The late hosts (or devices), worst first, with what was checked in one line."""
    units = compared_units(pod)
    if units is None:
        reason = "fewer than 3 hosts or devices with steps" if pod.step_count else "no steps on any host"
        return LateVerdict(None, [], f"{reason}: nothing to compare")
    per_unit = order_statistics.median(units.collective, axis=1)
    if per_unit.max() <= 0:
        return LateVerdict(units, [], f"{len(units.names)} {units.kind}s: no time in collectives")
    z = modified_z(step_residuals(units.collective) / PS_PER_MS)
    median_step = float(order_statistics.median(units.step_ps))
    late = [
        found
        for row in np.argsort(z, kind="stable")
        if -z[row] > MODIFIED_Z_OUTLIER
        for found in [_late_unit(units, int(row), float(z[row]))]
        if found.late_steps >= MIN_LATE_STEP_FRACTION * found.steps
        and found.wait_per_step_ps >= WAIT_PERCENT_OF_STEP / 100.0 * median_step
    ]
    lowest = int(np.argmin(z))
    checked = (
        f"{len(units.names)} {units.kind}s over {pod.step_count} steps aligned by {pod.alignment}: "
        f"collective time per step {_ms(per_unit.min())}-{_ms(per_unit.max())} ms, lowest modified z-score "
        f"(against each step's median) {z[lowest]:.1f} ({units.names[lowest]}; a late {units.kind} needs "
        f"below -{MODIFIED_Z_OUTLIER:g}, "
        f"shortest in >= {MIN_LATE_STEP_FRACTION:.0%} of steps and others waiting >= "
        f"{WAIT_PERCENT_OF_STEP:g}% of the step)"
    )
    return LateVerdict(units, late, checked)


def step_residuals(values: np.ndarray) -> np.ndarray:
    """Per unit: the median over steps of its value minus that step's median over the units."""
    return order_statistics.median(values - order_statistics.median(values, axis=0), axis=1)


def _late_unit(units: Units, row: int, z: float) -> LateUnit:
    others = np.delete(np.arange(len(units.names)), row)
    others_collective = order_statistics.median(units.collective[others], axis=0)
    lateness = np.maximum(others_collective - units.collective[row], 0.0)
    shortest = np.argmin(units.collective, axis=0) == row
    extra = {
        p: float(
            order_statistics.median(
                units.parts[p][row] - order_statistics.median(units.parts[p][others], axis=0)
            )
        )
        for p in CAUSES
    }
    positive = {p: v for p, v in extra.items() if v > 0}
    cause = max(positive, key=positive.__getitem__) if positive else ""
    return LateUnit(
        kind=units.kind,
        name=units.names[row],
        host=units.hosts[row],
        row=row,
        z_score=z,
        late_steps=int(shortest.sum()),
        steps=len(lateness),
        wait_per_step_ps=float(order_statistics.median(lateness)),
        wait_total_ps=float(lateness.sum()),
        wait_all_units_ps=float(np.maximum(units.collective[others] - units.collective[row], 0).sum()),
        lateness_ps=lateness,
        extra_per_step_ps=extra,
        cause=cause,
        worst_step=int(np.argmax(lateness)),
        collective_per_step_ps={
            n: float(v)
            for n, v in zip(units.names, order_statistics.median(units.collective, axis=1), strict=True)
        },
    )


@record
class CollectiveShare:
    """Each host's share of step time spent in collectives (percent, over the aligned steps)."""

    hosts: list[str]
    percent: np.ndarray

    @property
    def lowest(self) -> float:
        return float(self.percent.min()) if len(self.percent) else 0.0

    @property
    def every_host_bound(self) -> bool:
        return len(self.percent) > 0 and self.lowest >= COLLECTIVE_BOUND_PERCENT


def collective_share(pod: PodAnalysis) -> CollectiveShare:
    if pod.step_count == 0:
        return CollectiveShare([], np.empty(0))
    step = pod.matrix("step").sum(axis=1)
    inside = pod.matrix("collective").sum(axis=1)
    share = np.where(step > 0, 100.0 * inside / np.maximum(step, 1), 0.0)
    return CollectiveShare(list(pod.hosts), share)


def _ms(ps: float) -> str:
    return f"{ps / PS_PER_MS:.3g}"
