"""The communication report of a pod (or of one host): exposed vs overlapped collective time per step,
per host and per collective op, as `tpuscope comms` and the app's Communication view show it.

Every number is read from the pod table (`PodAnalysis`), never measured again: a host's communication
in a step is its `collective` part (the time its devices were inside a collective, mean over its
devices), its exposed time `exposed_collective_ps` (the part no compute of the same device
overlapped), overlapped the difference; the op rows are the hosts' `HostSummary.collectives` added up.
So `comms`, `overview`'s pod table and the `collective_bound` and `exposed_communication` findings
agree. The overlapped share of communication time (`overlap_percent`) is HTA's
communication/computation overlap (facebookresearch/HolisticTraceAnalysis,
docs/source/features/comm_comp_overlap.rst), taken over the aligned steps of every host.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from tpuscope.analysis.facts.intervals import difference
from tpuscope.analysis.pod.analysis import PodAnalysis
from tpuscope.analysis.pod.collective_kinds import ALL_DEVICES
from tpuscope.analysis.pod.collectives import CollectiveNames, split_device_ops, union_of
from tpuscope.analysis.pod.comms import CollectiveRow, merge_rows
from tpuscope.analysis.pod.results import POD
from tpuscope.analysis.results import Result
from tpuscope.analysis.trace_results import DEVICES
from tpuscope.model import order_statistics
from tpuscope.model.records import record
from tpuscope.model.trace import Trace

PS_PER_US = 1e6


def _us(ps: float) -> float:
    return round(float(ps) / PS_PER_US, 3)


def _percent(part: float, whole: float) -> float | None:
    return round(100.0 * part / whole, 2) if whole > 0 else None


@record
class CommsReport:
    """Communication of the pod's hosts over its aligned steps (ps arrays: hosts x steps)."""

    hosts: list[str]
    steps: np.ndarray  # the aligned steps' numbers
    communication_ps: np.ndarray
    exposed_ps: np.ndarray
    step_ps: np.ndarray
    rows: list[CollectiveRow]
    alignment: str
    step_start_ps: np.ndarray  # each aligned step's earliest start over the hosts (trace time)
    step_end_ps: np.ndarray  # and its latest end

    @classmethod
    def of(cls, pod: PodAnalysis) -> CommsReport:
        starts = pod.start_matrix()
        return cls(
            hosts=list(pod.hosts),
            steps=pod.step_number,
            communication_ps=pod.matrix("collective"),
            exposed_ps=pod.exposed_collective_matrix(),
            step_ps=pod.matrix("step"),
            rows=_with_all_devices(merge_rows([s.collectives for s in pod.summaries]), pod),
            alignment=pod.alignment,
            step_start_ps=starts.min(axis=0) if len(starts) else np.empty(0, np.int64),
            step_end_ps=(starts + pod.matrix("step").astype(np.int64)).max(axis=0)
            if len(starts)
            else np.empty(0, np.int64),
        )

    @property
    def overlapped_ps(self) -> np.ndarray:
        return self.communication_ps - self.exposed_ps

    @property
    def communication_total_ps(self) -> float:
        return float(self.communication_ps.sum())

    @property
    def exposed_total_ps(self) -> float:
        return float(self.exposed_ps.sum())

    @property
    def overlap_percent(self) -> float | None:
        """The overlapped share of communication time, percent (None without communication)."""
        return _percent(self.communication_total_ps - self.exposed_total_ps, self.communication_total_ps)

    @property
    def exposed_percent_of_step_time(self) -> float | None:
        """Exposed communication over step time, mean over the hosts (each host's own share)."""
        step = self.step_ps.sum(axis=1)
        if not len(step) or step.max() <= 0:
            return None
        shares = np.where(step > 0, 100.0 * self.exposed_ps.sum(axis=1) / np.maximum(step, 1), 0.0)
        return round(float(shares.mean()), 2)

    def waits_least(self) -> str | None:
        """The host with the least exposed communication (the others wait for it when it is late:
        `tpuscope.analysis.pod.late`), with 2 hosts or more that do not all wait alike."""
        if len(self.hosts) < 2 or not self.exposed_ps.size:
            return None
        waits = order_statistics.median(self.exposed_ps, axis=1)
        if waits.min() == waits.max():  # hosts alike: none waits least
            return None
        return self.hosts[int(np.argmin(waits))]

    def per_step(self) -> list[dict[str, Any]]:
        """Mean over the hosts, per aligned step."""
        if not self.hosts:
            return []
        communication = self.communication_ps.mean(axis=0)
        exposed = self.exposed_ps.mean(axis=0)
        step = self.step_ps.mean(axis=0)
        return [
            {
                "step": int(n),
                "step_time_us": _us(s),
                "communication_us": _us(c),
                "overlapped_us": _us(c - e),
                "exposed_us": _us(e),
            }
            for n, s, c, e in zip(self.steps, step, communication, exposed, strict=True)
        ]

    def per_host(self) -> list[dict[str, Any]]:
        """Totals over the aligned steps, per host."""
        found = []
        for k, host in enumerate(self.hosts):
            c, e, s = (float(m[k].sum()) for m in (self.communication_ps, self.exposed_ps, self.step_ps))
            found.append(
                {
                    "host": host,
                    "steps": len(self.steps),
                    "communication_us": _us(c),
                    "overlapped_us": _us(c - e),
                    "exposed_us": _us(e),
                    "overlap_percent": _percent(c - e, c),
                    "exposed_percent_of_step_time": _percent(e, s),
                }
            )
        return found

    def summary(self) -> dict[str, Any]:
        communication, exposed = self.communication_total_ps, self.exposed_total_ps
        return {
            "hosts": len(self.hosts),
            "steps": len(self.steps),
            "aligned_by": self.alignment,
            "communication_us": _us(communication),
            "overlapped_us": _us(communication - exposed),
            "exposed_us": _us(exposed),
            "overlap_percent": self.overlap_percent,
            "exposed_percent_of_step_time": self.exposed_percent_of_step_time,
            "waits_least": self.waits_least(),
            "measured": "per host: its devices' mean time inside collectives in the aligned steps; exposed: "
            "not overlapped by a non-collective, non-copy op of the same device",
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "collectives": [r.to_json() for r in self.rows],
            "per_host": self.per_host(),
            "per_step": self.per_step(),
        }


def _with_all_devices(rows: list[CollectiveRow], pod: PodAnalysis) -> list[CollectiveRow]:
    """Rows over every device of their program (`replica_groups={}`) with the profile's device count as
    their group size (the run's, when the profile holds every host; unknown with one device)."""
    devices = sum(len(s.devices) for s in pod.summaries)
    group = devices if devices > 1 else None
    return [replace(r, group=group) if r.group == ALL_DEVICES else r for r in rows]


# The report of a trace, made once from its pod table (the app's Communication view asks for it).
COMMS: Result[CommsReport] = Result("comms", lambda source: CommsReport.of(source.get(POD)))


def exposed_intervals(trace: Trace, devices: list) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Per device with collectives (its label, starts, ends): the time it was inside a collective
    while no other op of it but copies ran, as `summarize_host` measures exposed time, to draw."""
    names = CollectiveNames(trace.strings, trace.dialect)
    found = []
    for device in devices:
        events, ops = split_device_ops(device, names)
        inside = union_of(events)
        if len(inside[0]):
            starts, ends = difference(inside, union_of(names.without_copies(ops)))
            found.append((device.label, starts, ends))
    return found


# The exposed intervals of a trace's devices, for the timeline (the Communication view pins them).
EXPOSED_INTERVALS: Result[list[tuple[str, np.ndarray, np.ndarray]]] = Result(
    "exposed_intervals", lambda source: exposed_intervals(source.trace, source.get(DEVICES))
)
