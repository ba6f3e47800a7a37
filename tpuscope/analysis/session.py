"""One trace's analyses, each computed once and shared by every view and every command.

A `TraceAnalysis` holds the results of one loaded trace: steps, framework, devices, the diagnose
context and report, op events and op tables, step breakdowns, the pod table, the overview; an
analysis package may define more (`tpuscope.analysis.results`: the memory report, the run a
comparison reads). Each result is a
`Result` (a name and how to compute it from the other results); `analysis.get(result)` computes it
on first use, in dependency order (a result asks for the results it needs), and hands every later
caller the same object. The desktop app computes results in worker threads
(`tpuscope.ui.analysis_hub`), the commands call `get` directly: both see the same numbers because
they run the same code once.

This is the split KDAB Hotspot makes between its parser and its pages (https://github.com/KDAB/hotspot:
`src/parsers/perf/perfparser.cpp` emits typed result structs, `summaryDataAvailable`,
`bottomUpDataAvailable`, ..., that the `src/results*page.cpp` pages only display).

Thread safety: `get` may be called from several threads. Each result has its own lock, taken
before its dependencies' locks (the dependencies form a graph without cycles, so no two threads
wait on each other); two threads asking for the same result compute it once. The diagnose
`Context` (a view over the analysis: its facts are the results) caches the facts only the rules
and figures ask in plain attributes, so everything that reads it holds `context_lock`, taken only
after every result it needs that reads the context too is in hand: the report and the overview get
the pod table first. A rule may ask the context for a result that does not read it (`ctx.get`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar, cast

from tpuscope.analysis.device_ops import Device, find_devices, select_devices
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.framework import Framework, detect_framework
from tpuscope.analysis.host_analyses import HOST_ANALYSES
from tpuscope.analysis.host_names import HostNameIndex
from tpuscope.analysis.ops import CODE_GROUPINGS, OpEvents, OpTable, aggregate, collect_op_events
from tpuscope.analysis.overview import Overview, overview_figures, with_report
from tpuscope.analysis.pod import PodAnalysis, analyze_pod, summarize_host
from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.analysis.results import Result
from tpuscope.analysis.step_breakdown import StepBreakdown, step_breakdown
from tpuscope.analysis.steps import Steps, find_steps
from tpuscope.model.trace import Trace

if TYPE_CHECKING:
    from tpuscope.analysis.diagnose import Report

T = TypeVar("T")
DeviceChoice = str | int  # "all", a position in the device list, or a kind ("TPU", "GPU", "CPU")


class TraceAnalysis:
    """The results of one trace, each computed at most once (see the module docstring)."""

    def __init__(self, trace: Trace, known: Mapping[Result[Any], Any] | None = None):
        """`known`: results already in hand, used as if computed here (the pod table a run analysed
        host by host combines from its hosts' summaries, steps relabelled by a test)."""
        self.trace: Trace = trace
        self.context_lock = threading.RLock()
        self._values: dict[str, Any] = {result.name: value for result, value in (known or {}).items()}
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self.computed: list[str] = []  # result names in the order they were computed (tests, benchmarks)

    def get(self, result: Result[T]) -> T:
        """The result, computed now if nobody has yet (an error is raised and nothing kept)."""
        try:
            return cast(T, self._values[result.name])
        except KeyError:
            pass
        with self._lock_of(result.name):
            if result.name not in self._values:
                value = result.compute(self)
                self._values[result.name] = value
                self.computed.append(result.name)
            return cast(T, self._values[result.name])

    def has(self, result: Result[Any]) -> bool:
        """Whether `result` is computed already (asking for it then costs nothing)."""
        return result.name in self._values

    def _lock_of(self, name: str) -> threading.Lock:
        with self._locks_guard:
            lock = self._locks.get(name)
            if lock is None:
                lock = self._locks[name] = threading.Lock()
            return lock

    # -- the results, typed ------------------------------------------------------------------------
    @property
    def steps(self) -> Steps:
        return self.get(STEPS)

    @property
    def framework(self) -> Framework:
        return self.get(FRAMEWORK)

    @property
    def devices(self) -> list[Device]:
        return self.get(DEVICES)

    @property
    def host_names(self) -> HostNameIndex:
        return self.get(HOST_NAMES)

    @property
    def context(self) -> Context:
        return self.get(CONTEXT)

    @property
    def pod(self) -> PodAnalysis:
        return self.get(POD)

    @property
    def report(self) -> Report:
        return self.get(REPORT)

    @property
    def overview(self) -> Overview:
        return self.get(OVERVIEW)

    def chosen_devices(self, device: DeviceChoice = "all") -> list[Device]:
        return select_devices(self.devices, device)

    def op_events(self, device: DeviceChoice = "all") -> OpEvents | None:
        """Every op event of the chosen devices as columns; None when they ran no ops."""
        return self.get(op_events_result(device))

    def op_table(self, by: str = "op", device: DeviceChoice = "all") -> OpTable | None:
        """The op table of the chosen devices grouped `by`; None when they ran no ops."""
        return self.get(op_table_result(by, device))

    def step_breakdown(self, device: DeviceChoice = "all") -> StepBreakdown | None:
        """Busy and idle time per step of the chosen devices; None when there are none."""
        return self.get(step_breakdown_result(device))


def _pod(analysis: TraceAnalysis) -> PodAnalysis:
    """Every host summarized from its own planes, then aligned: a one-host trace from the analysis'
    own context, each host of several from an analysis of its planes alone."""
    hosts = list(analysis.trace.hosts) or [""]
    if len(hosts) == 1:
        ctx = analysis.context
        with analysis.context_lock:
            return analyze_pod([summarize_host(ctx, hosts[0])])
    summaries = []
    for host, one in analysis.get(HOST_ANALYSES).items():  # shared with the per-host rules
        with one.context_lock:
            summaries.append(summarize_host(one.context, host))
    return analyze_pod(summaries)


def _report(analysis: TraceAnalysis) -> Report:
    from tpuscope.analysis.diagnose import diagnose  # the rules load here, in the worker that runs them

    analysis.get(POD)  # the pod rules read it, and it reads the context: in hand before the lock
    ctx = analysis.context
    with analysis.context_lock:
        return diagnose(ctx)


def _overview_figures(analysis: TraceAnalysis) -> Overview:
    ops, ctx = analysis.op_table("op", "all"), analysis.context
    analysis.get(POD)  # read by the figures, and it reads the context: in hand before the lock
    with analysis.context_lock:
        return overview_figures(ctx, ops)


def _overview(analysis: TraceAnalysis) -> Overview:
    return with_report(analysis.get(OVERVIEW_FIGURES), analysis.report)


HOST_NAMES: Result[HostNameIndex] = Result("host_names", lambda a: HostNameIndex(a.trace))
STEPS: Result[Steps] = Result("steps", lambda a: find_steps(a.trace))
FRAMEWORK: Result[Framework] = Result("framework", lambda a: detect_framework(a.trace, a.get(HOST_NAMES)))
DEVICES: Result[list[Device]] = Result("devices", lambda a: find_devices(a.trace))
CONTEXT: Result[Context] = Result("context", Context)
POD: Result[PodAnalysis] = Result("pod", _pod)
REPORT: Result[Report] = Result("report", _report)
# The overview's figures come before the report (whose rules take longer than all of them), so that
# the desktop app paints them first; OVERVIEW is the same figures with the report.
OVERVIEW_FIGURES: Result[Overview] = Result("overview_figures", _overview_figures)
OVERVIEW: Result[Overview] = Result("overview", _overview)


def _device_key(device: DeviceChoice) -> str:
    return str(device).lower() if isinstance(device, str) else str(int(device))


@cache
def op_events_result(device: DeviceChoice = "all") -> Result[OpEvents | None]:
    def compute(a: TraceAnalysis) -> OpEvents | None:
        chosen = a.chosen_devices(device)
        return collect_op_events(a.trace, chosen) if chosen else None

    return Result(f"op_events[{_device_key(device)}]", compute)


@cache
def op_table_result(by: str = "op", device: DeviceChoice = "all") -> Result[OpTable | None]:
    def compute(a: TraceAnalysis) -> OpTable | None:
        events = a.op_events(device)
        if events is None:
            return None
        # By source or framework op, ops without their own take them from their program's code.
        code = a.get(PROGRAM_CODE) if by in CODE_GROUPINGS else None
        return aggregate(events, by, code)

    return Result(f"op_table[{by},{_device_key(device)}]", compute)


@cache
def step_breakdown_result(device: DeviceChoice = "all") -> Result[StepBreakdown | None]:
    def compute(a: TraceAnalysis) -> StepBreakdown | None:
        chosen = a.chosen_devices(device)
        return step_breakdown(a.trace, devices=chosen, steps=a.steps) if chosen else None

    return Result(f"step_breakdown[{_device_key(device)}]", compute)
