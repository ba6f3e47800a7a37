"""A pod's per-step split as the Overview's step chart draws it: one host's aligned steps, or the pod's
(the mean over its hosts, step by step).

The numbers are the pod table's (`PodAnalysis.matrix`), the ones the pod's headline metrics
(`tpuscope.analysis.metrics.pod`) are taken from: a host's bars are its row, the pod's the mean of
the rows per aligned step. Its parts are the pod table's (`summary.PARTS`: compute, collective,
input, compile, host), not the one-trace split of `tpuscope.analysis.overview` (busy, input,
compile, idle), since a host's split is only defined over its own devices.
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.pod.analysis import PodAnalysis
from tpuscope.analysis.pod.summary import PARTS
from tpuscope.model.records import record


@record(frozen=True)
class PodStepSplit:
    """Per aligned step (parallel arrays): its number, where it lies on the trace and its parts (ps)."""

    host: str | None  # None: the pod, the mean over `hosts`
    hosts: tuple[str, ...]  # the hosts it is taken over (one, for a host)
    number: np.ndarray  # int64: the aligned steps' numbers (`PodAnalysis.step_number`)
    start_ps: np.ndarray  # float64: the step's start; the pod's: its earliest host's start
    end_ps: np.ndarray  # float64: the step's end; the pod's: its latest host's end
    step_ps: np.ndarray  # float64: the step's time (the pod's: the mean over hosts)
    parts_ps: dict[str, np.ndarray]  # per part of PARTS, float64, adding up to `step_ps`

    def __len__(self) -> int:
        return len(self.number)

    @property
    def label(self) -> str:
        """What the split shows, in words: "worker2", or "mean of 4 hosts"."""
        if self.host is not None:
            return self.host
        return f"mean of {len(self.hosts)} host{'s' if len(self.hosts) != 1 else ''}"

    def part(self, name: str) -> np.ndarray:
        return self.parts_ps[name]

    def parts_present(self) -> tuple[str, ...]:
        """The parts with any time in these steps, in PARTS order (what a legend lists)."""
        return tuple(p for p in PARTS if np.any(self.parts_ps[p] > 0))


def pod_step_split(pod: PodAnalysis, host: str | None = None) -> PodStepSplit:
    """The split of `host`'s aligned steps (its row of the pod table), or the pod's when None (the
    mean over the hosts with steps, per aligned step). Raises ValueError for a host without steps."""
    rows = np.arange(len(pod.hosts)) if host is None else np.array([pod.hosts.index(host)])
    start = pod.start_matrix()[rows].astype(np.float64)
    step = pod.matrix("step")[rows]
    end = start + step
    return PodStepSplit(
        host=host,
        hosts=tuple(pod.hosts[k] for k in rows),
        number=np.asarray(pod.step_number, dtype=np.int64),
        start_ps=start.min(axis=0) if len(rows) else np.empty(0),
        end_ps=end.max(axis=0) if len(rows) else np.empty(0),
        step_ps=step.mean(axis=0) if len(rows) else np.empty(0),
        parts_ps={p: pod.matrix(p)[rows].mean(axis=0) if len(rows) else np.empty(0) for p in PARTS},
    )
