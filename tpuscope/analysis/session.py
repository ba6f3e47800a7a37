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

How results are stored, and thread safety, are `tpuscope.analysis.results`' (`ResultStore`); the
basic results are `tpuscope.analysis.trace_results`', the facts `Context` `tpuscope.analysis.facts`',
the pod table `tpuscope.analysis.pod.results`'. This module adds the report and the overview, and
names them all on `TraceAnalysis` with their types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpuscope.analysis.device_ops import Device
from tpuscope.analysis.diagnose.rule_results import READ_BY_RULES_WITH_FACTS
from tpuscope.analysis.facts.context import CONTEXT, Context
from tpuscope.analysis.framework import Framework
from tpuscope.analysis.host_names import HostNameIndex
from tpuscope.analysis.ops import OpEvents, OpTable
from tpuscope.analysis.pod import PodAnalysis
from tpuscope.analysis.pod.results import POD
from tpuscope.analysis.results import Result, ResultSource, ResultStore
from tpuscope.analysis.steps import Steps
from tpuscope.analysis.trace_results import (
    DEVICES,
    FRAMEWORK,
    HOST_NAMES,
    STEPS,
    DeviceChoice,
    chosen_devices,
    op_events_result,
    op_table_result,
    step_breakdown_result,
)

if TYPE_CHECKING:  # the overview's and a step breakdown's modules load where one is made (not in `diagnose`)
    from tpuscope.analysis.diagnose import Report
    from tpuscope.analysis.overview import Overview
    from tpuscope.analysis.step_breakdown import StepBreakdown


class TraceAnalysis(ResultStore):
    """The results of one trace, each computed at most once, with typed shortcuts to the common ones."""

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
        return chosen_devices(self, device)

    def op_events(self, device: DeviceChoice = "all") -> OpEvents | None:
        """Every op event of the chosen devices as columns; None when they ran no ops."""
        return self.get(op_events_result(device))

    def op_table(self, by: str = "op", device: DeviceChoice = "all") -> OpTable | None:
        """The op table of the chosen devices grouped `by`; None when they ran no ops."""
        return self.get(op_table_result(by, device))

    def step_breakdown(self, device: DeviceChoice = "all") -> StepBreakdown | None:
        """Busy and idle time per step of the chosen devices; None when there are none."""
        return self.get(step_breakdown_result(device))


def _report(source: ResultSource) -> Report:
    from tpuscope.analysis.diagnose import diagnose  # the rules load here, in the worker that runs them

    return diagnose(source.get(CONTEXT))


def _overview_figures(source: ResultSource) -> Overview:
    from tpuscope.analysis.overview import overview_figures

    return overview_figures(source.get(CONTEXT), source.get(op_table_result("op", "all")))


def _overview(source: ResultSource) -> Overview:
    from tpuscope.analysis.overview import with_report

    return with_report(source.get(OVERVIEW_FIGURES), source.get(REPORT))


# The pod rules and the overview's figures read the pod table, which reads the facts too, as do the
# results some rules share with the metrics: in hand before the facts lock is taken.
REPORT: Result[Report] = Result("report", _report, reads_facts=True, first=(POD, *READ_BY_RULES_WITH_FACTS))
# The overview's figures come before the report (whose rules take longer than all of them), so that
# the desktop app paints them first; OVERVIEW is the same figures with the report.
OVERVIEW_FIGURES: Result[Overview] = Result(
    "overview_figures", _overview_figures, reads_facts=True, first=(op_table_result("op", "all"), POD)
)
OVERVIEW: Result[Overview] = Result("overview", _overview)

__all__ = [
    "CONTEXT",
    "DEVICES",
    "FRAMEWORK",
    "HOST_NAMES",
    "OVERVIEW",
    "OVERVIEW_FIGURES",
    "POD",
    "REPORT",
    "STEPS",
    "DeviceChoice",
    "TraceAnalysis",
    "op_events_result",
    "op_table_result",
    "step_breakdown_result",
]
