"""The facts of one trace that rules and figures share: framework, steps, device busy time, host events.

The diagnose rules, the overview, the pod summaries and the run comparison stay small because they
ask the context ("the device-idle intervals", "the outermost events named like X on host threads",
"which step is this time in") instead of re-deriving it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cached_property
from typing import Any, TypeVar

import numpy as np

from tpuscope.analysis import device_ops
from tpuscope.analysis.facts.intervals import (
    Coverage,
    Intervals,
    coverage,
    difference,
    empty,
    merge_intervals,
    union,
    window_total,
)
from tpuscope.analysis.framework import Framework
from tpuscope.analysis.host_names import HostNameIndex
from tpuscope.analysis.ops import OpTable, aggregate, collect_op_events
from tpuscope.analysis.results import Result, ResultSource
from tpuscope.analysis.steps import SOURCE_HOST_ANNOTATION, Steps, outermost, step_periods
from tpuscope.analysis.trace_results import DEVICES, FRAMEWORK, HOST_NAMES, STEPS, op_table_result
from tpuscope.model.trace import Trace, Track
from tpuscope.model.vocabulary import EventClass

T = TypeVar("T")


class Context:
    """The facts of one trace that rules and figures ask for: a view over the trace's analysis.

    What the analysis holds as results (steps, framework, devices, the host-name index, the op table,
    the pod table, and any other result through `get`) comes from it, computed once per trace for
    every rule, view and command; what only the rules and figures ask (device busy time, step
    periods, host events by name or class) is computed here on first use. One context per analysis
    (the result `CONTEXT`), reading the analysis only through the `ResultSource` protocol; whoever
    reads it holds the facts lock (`tpuscope.analysis.results`: a result with `reads_facts`, or
    `ResultSource.reading_facts`).
    """

    def __init__(self, results: ResultSource):
        self._results = results
        self.trace: Trace = results.trace
        self._host_events: dict[str | EventClass, list[tuple[Track, np.ndarray]]] = {}
        self._device_busy: Intervals | None = None
        self._facts: dict[str, Any] = {}

    def get(self, result: Result[T]) -> T:
        """A result of the trace's analysis (`tpuscope.analysis.results`, e.g. the memory report).

        A rule asks while its thread holds the facts lock, so a result asked for here must not read
        the context itself (the lock order of `tpuscope.analysis.results`), or be in hand before the
        rules run, as the pod table is (the report's `first`)."""
        return self._results.get(result)

    def fact(self, name: str, compute: Callable[[], T]) -> T:
        """A fact that several rules and figures derive alike (the input wait intervals, ...), computed
        by the first that asks and then shared: `compute()` runs once per context and `name`."""
        if name not in self._facts:
            self._facts[name] = compute()
        return self._facts[name]

    def facts_in_hand(self) -> list[str]:
        """The names of the facts computed so far (those of `fact`, the cached properties, the host
        event lookups and the device busy time): `diagnose --timings` names what each rule made first."""
        names = [k for k in vars(self) if not k.startswith("_") and k != "trace"]
        names += ["device_busy"] if self._device_busy is not None else []
        names += [f"host events {_lookup_name(key)}" for key in self._host_events]
        return names + list(self._facts)

    @property
    def framework(self) -> Framework:
        return self._results.get(FRAMEWORK)

    @property
    def steps(self) -> Steps:
        return self._results.get(STEPS)

    @property
    def devices(self) -> list[device_ops.Device]:
        return self._results.get(DEVICES)

    @property
    def device_busy(self) -> Intervals:
        """Union of the busy intervals of all devices: a device is only 'waiting' if none works."""
        if self._device_busy is None:
            self._device_busy = union([device_ops.busy_intervals(d) for d in self.devices])
        return self._device_busy

    @property
    def device_busy_coverage(self) -> Coverage:
        """The `coverage` of `device_busy` (the devices' busy ps in any windows), made once per context:
        of one device, that device's own (`device_ops.busy_coverage`), which its figures share."""
        return self.fact("device_busy_coverage", self._device_busy_coverage)

    def _device_busy_coverage(self) -> Coverage:
        busy, devices = self.device_busy, self.devices
        if len(devices) == 1 and device_ops.busy_intervals(devices[0])[0] is busy[0]:
            return device_ops.busy_coverage(devices[0])
        return coverage(busy)

    def device_busy_from(self, per_device: list[Intervals]) -> Intervals:
        """`device_busy`, from each device's `busy_intervals` (in `devices` order) when the caller
        has them already (the pod summary does): the union is still made once per context, and the
        devices' own intervals are not kept."""
        if self._device_busy is None:
            self._device_busy = union(per_device)
        return self._device_busy

    def device_idle(self, start_ps: int, end_ps: int) -> Intervals:
        """Intervals inside [start, end) where no device ran an op."""
        window = (np.array([start_ps], np.int64), np.array([end_ps], np.int64))
        return difference(window, self.device_busy)

    @cached_property
    def op_table(self) -> OpTable:
        """Every device op grouped by op (program and name), over all devices: the Ops view's table
        (an empty one when no device ran an op)."""
        table = self._results.get(op_table_result("op", "all"))
        return table if table is not None else aggregate(collect_op_events(self.trace, []), "op")

    def op_text(self, row: int) -> str:
        """The name of one of the op row's events: the full HLO instruction text where the profile
        has it (TPU op metadata is named `%copy-done = f32[...] copy-done(...)`), else the op name."""
        for track, indices in self.op_table.events_of_row(row):
            return track.event_name(int(indices[0]))
        return self.op_table.label(self.op_table.name[row])

    @cached_property
    def host_tracks(self) -> list[Track]:
        return [t for p in self.trace.host_planes() for t in p.tracks if len(t)]

    @property
    def host_names(self) -> HostNameIndex:
        """The host events indexed by name once, for the dozen patterns the rules look up."""
        return self._results.get(HOST_NAMES)

    def host_events(self, pattern: str) -> list[tuple[Track, np.ndarray]]:
        """Outermost host events whose whole name matches `pattern` (nested duplicates dropped).

        Several rules ask for the same pattern: each is looked up once per diagnosis.
        """
        found = self._host_events.get(pattern)
        if found is None:
            found = [(t, outermost(t, idx)) for t, idx in self.host_names.matching(pattern)]
            self._host_events[pattern] = found
        return list(found)

    def host_events_of(self, event_class: EventClass) -> list[tuple[Track, np.ndarray]]:
        """Outermost host events whose name the reader classed as `event_class` (looked up once)."""
        found = self._host_events.get(event_class)
        if found is None:
            found = [(t, outermost(t, idx)) for t, idx in self.host_names.matching_class(event_class)]
            self._host_events[event_class] = found
        return list(found)

    @cached_property
    def launches(self) -> list[tuple[Track, np.ndarray]]:
        """Host events that hand a program or a kernel to the device."""
        return self.host_events_of(EventClass.LAUNCH)

    @cached_property
    def compiles(self) -> list[tuple[Track, np.ndarray]]:
        return self.host_events_of(EventClass.COMPILE)

    @cached_property
    def syncs(self) -> list[tuple[Track, np.ndarray]]:
        """Host events that block on a device result (device-to-host reads, stream syncs)."""
        return self.host_events_of(EventClass.SYNC)

    @cached_property
    def periods(self) -> tuple[np.ndarray, np.ndarray]:
        """Each step's period: from its start to the next step's start (the last: to its end).

        Step time measured start-to-start includes the host work between annotated steps,
        which is where an unannotated data loader spends its time.
        """
        return step_periods(self.steps)

    @cached_property
    def compiling_steps(self) -> np.ndarray:
        """Per step: True where a compilation overlaps the step's period."""
        p0, p1 = self.periods
        return window_total(intervals_of(self.compiles), p0, p1) > 0

    @cached_property
    def warm_up(self) -> np.ndarray:
        """Per step: True for warm-up steps, which say nothing about the steady state.

        Those are the steps that compiled, and the first step: it fills caches, allocates and
        often compiles where the profile cannot see it. The user's own step numbers can say
        otherwise: an annotated first step numbered above 0 means the run was already going.
        """
        warm = self.compiling_steps.copy()
        steps = self.steps
        if len(steps):
            numbered_by_user = steps.source == SOURCE_HOST_ANNOTATION and int(steps.number[0]) > 0
            warm[0] = warm[0] or not numbered_by_user
        return warm

    def step_label(self, position: int) -> str:
        return f"step {int(self.steps.number[position])}"

    def step_labels(self, positions: np.ndarray) -> list[str]:
        """`step_label` of each position (hundreds of slow steps: one read of the step numbers)."""
        return [f"step {n}" for n in self.steps.number[positions].tolist()]

    def advice_for(self, advice: dict[str, list[str]]) -> list[str]:
        """The advice for the detected framework, else the generic advice (key "")."""
        return list(advice.get(self.framework.name) or advice.get("", []))


def _lookup_name(key: str | EventClass) -> str:
    """A host event lookup in words: the event class's name, or the pattern."""
    return key.name.lower() if isinstance(key, EventClass) and key.name else str(key)


def intervals_of(events: list[tuple[Track, np.ndarray]]) -> Intervals:
    """Union of the time intervals of events on several tracks."""
    if not events:
        return empty()
    starts = np.concatenate([t.start_ps[idx] for t, idx in events])
    ends = np.concatenate([event_ends(t, idx) for t, idx in events])
    return merge_intervals(starts, ends)


def event_ends(track: Track, idx: np.ndarray) -> np.ndarray:
    """The ends of the events `idx` of `track`: `track.end_ps[idx]`, without the end of every event
    of the track (a few launches of a 230k-event thread)."""
    return track.start_ps[idx] + track.duration_ps[idx]


def flat_events(
    events: list[tuple[Track, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(track number, index, start, end) of events on several tracks, sorted by start."""
    if not events:
        z = np.empty(0, np.int64)
        return z, z, z, z
    which = np.concatenate([np.full(len(idx), k, np.int64) for k, (_, idx) in enumerate(events)])
    index = np.concatenate([idx for _, idx in events]).astype(np.int64)
    starts = np.concatenate([t.start_ps[idx] for t, idx in events])
    ends = np.concatenate([event_ends(t, idx) for t, idx in events])
    order = np.argsort(starts, kind="stable")
    return which[order], index[order], starts[order], ends[order]


def name_matches(name: str, pattern: str) -> bool:
    return re.match(pattern, name) is not None


# The facts of a trace, made once per analysis (a view over its results: cheap until asked).
CONTEXT: Result[Context] = Result("context", Context)
