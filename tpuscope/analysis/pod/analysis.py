"""The pod's host x step table: the hosts' summaries with their steps aligned.

Steps are aligned by step number when every host numbers its steps and they share enough numbers
(JAX `StepTraceAnnotation(step_num=...)`, PyTorch/XLA `StepTrace`, a device `Steps` line); else by
order (each host's first step with the others' first step). Hosts without steps are listed but
have no row in the table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpuscope.analysis.pod.summary import PART_LABELS, PARTS, HostSummary
from tpuscope.model.records import record

ALIGN_BY_NUMBER = "step number"
ALIGN_BY_ORDER = "order"
# Steps are aligned by number only when the hosts share at least this share of the shortest host's
# steps (else their numbers do not mean the same step: our heuristic).
MIN_SHARED_STEP_FRACTION = 0.5


@record
class HostRow:
    """One host's line of the per-host table: means per aligned step (ps)."""

    host: str
    steps: int
    step_ps: float
    parts_ps: dict[str, float]
    busiest_op: str
    busiest_op_ps: float
    exposed_collective_ps: float = 0.0  # of `parts_ps["collective"]`, what no compute overlapped

    def to_json(self) -> dict[str, Any]:
        collective = self.parts_ps.get("collective", 0.0)
        return {
            "host": self.host,
            "steps": self.steps,
            "step_time_us": self.step_ps / 1e6,
            **{f"{p}_us": v / 1e6 for p, v in self.parts_ps.items()},
            "exposed_collective_us": self.exposed_collective_ps / 1e6,
            "overlapped_collective_us": (collective - self.exposed_collective_ps) / 1e6,
            "busiest_op": self.busiest_op or None,
            "busiest_op_us": self.busiest_op_ps / 1e6,
        }


@record
class PodAnalysis:
    """Hosts (with steps) x aligned steps; `positions[h, s]` is host h's own index of aligned step s."""

    summaries: list[HostSummary]  # every host, with or without steps
    hosts: list[str]  # hosts with steps, in table order
    alignment: str
    step_number: np.ndarray  # (steps,) the aligned steps' numbers (the first host's when by order)
    positions: np.ndarray  # (hosts, steps) int64

    @property
    def host_summaries(self) -> list[HostSummary]:
        by_host = {s.host: s for s in self.summaries}
        return [by_host[h] for h in self.hosts]

    @property
    def hosts_without_steps(self) -> list[str]:
        return [s.host for s in self.summaries if len(s) == 0]

    @property
    def step_count(self) -> int:
        return len(self.step_number)

    def matrix(self, part: str) -> np.ndarray:
        """(hosts, steps) ps of one part (PARTS) or of the whole step (`step`)."""
        rows = []
        for summary, pos in zip(self.host_summaries, self.positions, strict=True):
            values = summary.step_ps if part == "step" else summary.part(part)
            rows.append(values[pos])
        return np.array(rows, dtype=np.float64).reshape(len(self.hosts), self.step_count)

    def exposed_collective_matrix(self) -> np.ndarray:
        """(hosts, steps) ps of collective time no compute overlapped (HostSummary.exposed_collective_ps)."""
        rows = [s.exposed_collective_ps[p] for s, p in zip(self.host_summaries, self.positions, strict=True)]
        return np.array(rows, dtype=np.float64).reshape(len(self.hosts), self.step_count)

    def start_matrix(self) -> np.ndarray:
        rows = [s.start_ps[p] for s, p in zip(self.host_summaries, self.positions, strict=True)]
        return np.array(rows, dtype=np.int64).reshape(len(self.hosts), self.step_count)

    def rows(self) -> list[HostRow]:
        found = []
        exposed = self.exposed_collective_matrix()
        for k, summary in enumerate(self.host_summaries):
            means = {p: float(self.matrix(p)[k].mean()) if self.step_count else 0.0 for p in PARTS}
            step = float(self.matrix("step")[k].mean()) if self.step_count else 0.0
            exposed_mean = float(exposed[k].mean()) if self.step_count else 0.0
            found.append(
                HostRow(summary.host, self.step_count, step, means, summary.busiest_op, summary.busiest_op_ps,
                        exposed_mean)
            )  # fmt: skip
        return found

    def notes(self) -> list[str]:
        """One sentence per host the table treats apart from the others, naming it: a host without
        steps (listed, not in the table), with fewer steps than the others (the table holds only
        the steps every host has), or without a device plane (its steps are all host time)."""
        found = [f"{host} has no steps: it is listed but has no row in the host x step table." for host in
                 self.hosts_without_steps]  # fmt: skip
        counts = {s.host: len(s) for s in self.host_summaries}
        most = max(counts.values(), default=0)
        for host, count in counts.items():
            if count < most:
                found.append(
                    f"{host} has {count} steps where another host has {most}: the host x step table holds "
                    f"the {self.step_count} steps every host has (aligned by {self.alignment})."
                )
        found.extend(
            f"{s.host} has no device plane: its steps are all host time, and no device rule applies to it."
            for s in self.summaries
            if not s.devices
        )
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "hosts": list(self.hosts),
            "hosts_without_steps": self.hosts_without_steps,
            "alignment": self.alignment,
            "steps": [int(n) for n in self.step_number],
            "parts": {p: PART_LABELS[p] for p in PARTS},
            "per_host": [r.to_json() for r in self.rows()],
            "per_host_step_us": {
                **{part: (self.matrix(part) / 1e6).round(3).tolist() for part in ("step", *PARTS)},
                "exposed_collective": (self.exposed_collective_matrix() / 1e6).round(3).tolist(),
            },
        }


def analyze_pod(summaries: list[HostSummary]) -> PodAnalysis:
    """The host x step table of `summaries` (a pure function of the small summaries)."""
    stepped = [s for s in summaries if len(s)]
    hosts = [s.host for s in stepped]
    if not stepped:
        empty = np.empty(0, np.int64)
        return PodAnalysis(list(summaries), [], ALIGN_BY_ORDER, empty, np.zeros((0, 0), np.int64))
    shared = _shared_numbers(stepped)
    if shared is not None:
        positions = np.array([_positions_of(s.step_number, shared) for s in stepped], dtype=np.int64)
        return PodAnalysis(list(summaries), hosts, ALIGN_BY_NUMBER, shared, positions)
    count = min(len(s) for s in stepped)
    positions = np.tile(np.arange(count, dtype=np.int64), (len(stepped), 1))
    return PodAnalysis(list(summaries), hosts, ALIGN_BY_ORDER, stepped[0].step_number[:count], positions)


def _shared_numbers(stepped: list[HostSummary]) -> np.ndarray | None:
    """The step numbers all hosts have, when that is a fair alignment; else None."""
    numbers = [s.step_number for s in stepped]
    if any(_repeats(n) for n in numbers):
        return None
    shared = numbers[0]
    for n in numbers[1:]:  # each host's numbers are distinct (checked above), and so is what they share
        shared = np.intersect1d(shared, n, assume_unique=True)  # assumed: no np.unique, no numpy.ma
    if len(shared) == 0 or len(shared) < MIN_SHARED_STEP_FRACTION * min(len(n) for n in numbers):
        return None
    return np.sort(shared).astype(np.int64)


def _repeats(numbers: np.ndarray) -> bool:
    """Whether a step number occurs twice (a sort and one comparison: np.unique hashes every number)."""
    ordered = np.sort(numbers)
    return bool((ordered[1:] == ordered[:-1]).any())


def _positions_of(numbers: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    order = np.argsort(numbers, kind="stable")
    return order[np.searchsorted(numbers[order], wanted)]
