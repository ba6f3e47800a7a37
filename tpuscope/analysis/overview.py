"""The overview of a profile: the first numbers a user wants, gathered from the other analyses.

Nothing here is measured anew where another module already measures it: devices and duty cycle
come from `device_ops`/`step_breakdown`, steps from `steps.find_steps`, the framework and the
findings from the diagnose engine, the top ops from `ops`. What is added is the per-step split
of step time into four parts that add up to the step. A trace's overview is
`TraceAnalysis.overview` (`tpuscope.analysis.session`), made from the results it shares:

- busy: a device ran an op (mean over the devices, as `step_breakdown` counts it);
- input: no device ran an op while the host was still preparing the step: the same intervals
  the `input_bound` rule measures (`facts.waits`), so the chart and the finding agree;
- compile: no device ran an op while the host was compiling (and not already counted as input);
- idle: the rest of the step.

A step lasts from its start to the next step's start (the last one: to its end), as the diagnose
rules measure it (`Context.periods`): the host work between two annotated steps belongs to a step.
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from tpuscope.analysis.device_ops import Device
from tpuscope.analysis.diagnose import Finding
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.facts.intervals import Intervals, empty, window_total
from tpuscope.analysis.facts.waits import compile_wait_intervals, input_wait_intervals
from tpuscope.analysis.framework import Framework
from tpuscope.analysis.ops import OpTable
from tpuscope.analysis.pod.analysis import PodAnalysis
from tpuscope.analysis.pod.results import POD
from tpuscope.analysis.step_breakdown import step_breakdown
from tpuscope.analysis.steps import (
    SOURCE_DEVICE_PROGRAM,
    SOURCE_DEVICE_STEPS,
    SOURCE_HOST_ANNOTATION,
    SOURCE_HOST_PROGRAM,
    SOURCE_STEP_MARKER,
    SOURCE_TF_MARKER,
    Steps,
)
from tpuscope.model import order_statistics
from tpuscope.model.completeness import Completeness
from tpuscope.model.records import record
from tpuscope.model.trace import Trace
from tpuscope.model.vocabulary import Stat

if TYPE_CHECKING:
    from tpuscope.analysis.diagnose import Report
    from tpuscope.analysis.metrics.registry import MetricValue

# The tail statistic shown beside mean and median (XProf's step-time graph reports min/avg/max;
# a high percentile says "how slow are the slow steps" without being one outlier).
STEP_TIME_PERCENTILE = 95.0
# Rows of the top-ops list and of the findings list in the text and JSON summaries.
TOP_OPS = 10
TOP_FINDINGS = 5
# Without steps, the chart shows the same split over this many equal slices of the profile:
# enough to see phases (warm-up, bursts, idle tails), few enough that each bar stays visible.
SLICES_WITHOUT_STEPS = 100
PARTS = ("busy", "input", "compile", "idle")
# The keys of a row of `StepSeries.rows_json` (`per_step` of `overview --json`): the step, its start and
# duration, and each part (written out there, in this order).
ROW_KEYS = ("step", "start_us", "duration_us", *(f"{p}_us" for p in PARTS))
# What each part means in words; without devices nothing is "busy" and the rest is host time.
PART_LABELS = {
    "busy": "device busy",
    "input": "waiting for input",
    "compile": "waiting for compilation",
    "idle": "other idle",
}
# Where steps came from, in a few words (the full sentence is `Steps.description`).
STEP_SOURCE_LABELS = {
    SOURCE_DEVICE_STEPS: "device Steps line",
    SOURCE_HOST_ANNOTATION: "host step annotations",
    SOURCE_STEP_MARKER: "host step markers",
    SOURCE_TF_MARKER: "TensorFlow step markers",
    SOURCE_DEVICE_PROGRAM: "repeated device program",
    SOURCE_HOST_PROGRAM: "repeated jitted function",
}
NO_STEPS_TEXT = "no step annotations, step markers or repeated programs found"


def part_label(name: str, has_devices: bool = True) -> str:
    """The words for a part of step time (`PARTS`) in charts and text."""
    if name == "idle" and not has_devices:
        return "other host time"
    return PART_LABELS[name]


@record(frozen=True)
class DeviceSummary:
    """What ran the programs: `count` devices of `type`, of which `active` ran ops."""

    kind: str  # "TPU", "GPU", "CPU" or "" (no device activity at all)
    type: str  # "TPU v6 Lite", "AMD GPU", "XLA:CPU", ...
    count: int
    active: int

    @property
    def label(self) -> str:
        if not self.kind:
            return "none recorded"
        return f"{self.count} × {self.type}" if self.count > 1 else self.type

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind or None,
            "type": self.type or None,
            "count": self.count,
            "active": self.active,
        }


@record(frozen=True)
class StepTimeStats:
    """Step time (start to next start) over all steps, in ps."""

    mean_ps: float
    median_ps: float
    p95_ps: float
    min_ps: float
    max_ps: float

    def to_json(self) -> dict[str, float]:
        return {
            "mean_us": self.mean_ps / 1e6,
            "median_us": self.median_ps / 1e6,
            "p95_us": self.p95_ps / 1e6,
            "min_us": self.min_ps / 1e6,
            "max_us": self.max_ps / 1e6,
        }


@record
class StepSeries:
    """Per step (parallel arrays, ps as float64): the period and its busy/input/compile/idle split."""

    number: np.ndarray
    start_ps: np.ndarray
    end_ps: np.ndarray
    busy_ps: np.ndarray
    input_ps: np.ndarray
    compile_ps: np.ndarray
    idle_ps: np.ndarray

    def __len__(self) -> int:
        return len(self.start_ps)

    @property
    def duration_ps(self) -> np.ndarray:
        return (self.end_ps - self.start_ps).astype(np.float64)

    def part(self, name: str) -> np.ndarray:
        return getattr(self, f"{name}_ps")

    def split_percent(self) -> dict[str, float] | None:
        """Each part's share of all step time (percent; they add up to 100), None without steps."""
        total = float(self.duration_ps.sum())
        if total <= 0:
            return None
        return {name: 100.0 * float(self.part(name).sum()) / total for name in PARTS}

    def rows_json(self) -> list[dict[str, float | int]]:
        """One row per step, in us (`ROW_KEYS`). Each column is converted as a whole (thousands of steps):
        an int64 or float64 cast to float64 and divided by 1e6 is the same double as Python's
        float(v) / 1e6, and int64 truncates a float step number toward zero as int() does. Each row is
        a dict display with the keys written out: Python builds it from its constant keys in one step,
        where dict(zip(keys, row)) ran an iterator per row (7.7k rows: 5.6 -> 2.6 ms)."""
        values = [self.start_ps, self.duration_ps] + [self.part(p) for p in PARTS]
        columns = [(np.asarray(v).astype(np.float64) / 1e6).tolist() for v in values]
        steps = np.asarray(self.number).astype(np.int64).tolist()
        return [
            {
                "step": step,
                "start_us": start,
                "duration_us": duration,
                "busy_us": busy,
                "input_us": input_,
                "compile_us": compile_,
                "idle_us": idle,
            }
            for step, start, duration, busy, input_, compile_, idle in zip(steps, *columns, strict=True)
        ]


@record
class Overview:
    """Everything the overview page and `tpuscope overview` show, computed once."""

    sources: list[str]
    devices: DeviceSummary
    hosts: list[str]
    framework: Framework
    span_ps: int
    steps: Steps
    series: StepSeries
    slices: StepSeries | None  # the split over equal slices of the profile, when there are no steps
    step_time: StepTimeStats | None
    duty_cycle: float | None  # mean over the devices, whole profile (None: no devices)
    ops: OpTable | None  # by op over all devices, largest self time first (None: no device ops)
    # The diagnose report; None in the figures the desktop app paints before the rules have run
    # (`overview_figures`): the rules take longer than every figure together.
    report: Report | None
    pod: PodAnalysis | None = None  # the host x step table (one row per host with steps)
    extra: dict[str, Any] = field(default_factory=dict)
    # Whether the profile was read whole: on a salvaged load every figure is of the part read.
    completeness: Completeness = field(default_factory=Completeness)
    # Several hosts: the pod's headline metrics (the mean over hosts) and each host's
    # (`tpuscope.analysis.metrics.pod`), which `to_json`'s headline keys and `tpuscope metrics` read.
    pod_metrics: list[MetricValue] | None = None

    @property
    def findings(self) -> list[Finding]:
        return self.report.findings if self.report is not None else []

    @property
    def step_duty_cycle(self) -> float | None:
        """Busy share of the time inside steps, None without steps or devices."""
        total = float(self.series.duration_ps.sum())
        if total <= 0 or self.duty_cycle is None:
            return None
        # The ratio `StepBreakdown.step_duty_cycle` takes (`ops --json`), of the same busy time.
        return float(self.series.busy_ps.sum()) / total

    def to_json(self, top_ops: int = TOP_OPS, top_findings: int | None = None) -> dict[str, Any]:
        findings = self.findings if top_findings is None else self.findings[:top_findings]
        data = self._to_json(top_ops, findings)
        if self.pod is not None and self.pod_metrics is not None:  # the pod's headline, each host's beside it
            data.update(pod_headline_json(self.pod, self.pod_metrics))
        return data

    def _to_json(self, top_ops: int, findings: list[Finding]) -> dict[str, Any]:
        return {
            "profile": self.sources,
            "devices": self.devices.to_json(),
            "hosts": self.hosts,
            "framework": {"name": self.framework.name, "evidence": self.framework.evidence},
            "span_us": self.span_ps / 1e6,
            "steps": self.steps.to_json(),
            "step_time": None if self.step_time is None else self.step_time.to_json(),
            "duty_cycle": self.duty_cycle,
            "step_duty_cycle": self.step_duty_cycle,
            "step_time_split_percent": self.series.split_percent(),
            "per_step": self.series.rows_json(),
            "per_slice_without_steps": None if self.slices is None else self.slices.rows_json(),
            "top_ops": [] if self.ops is None else [_op_json(r) for r in self.ops.rows_json(top_ops)],
            "findings": [{"id": f.id, "severity": f.severity.label, "title": f.title} for f in findings],
            "rule_errors": dict(self.report.rule_errors) if self.report is not None else {},
            "pod": None if self.pod is None else self.pod.to_json(),
            **self.completeness.to_json(),
        }


def pod_headline_json(pod: PodAnalysis, rows: list[MetricValue]) -> dict[str, Any]:
    """A pod's headline under `overview --json`'s keys (step time, duty cycles, the split), from its
    metrics (`tpuscope.analysis.metrics.pod`: the mean over hosts), and `headline`: what they are the
    mean of and each host's own; a pod read as one trace and one analysed host by host print these."""
    from tpuscope.analysis.metrics.pod import headline_json  # a pod's only (its records: ~2 ms of import)

    headline = headline_json(rows)
    data: dict[str, Any] = {
        key: headline.pop(key)
        for key in ("step_time", "duty_cycle", "step_duty_cycle", "step_time_split_percent")
    }
    if data["step_time"] is not None:
        steps_us = pod.matrix("step") / 1e6  # the extremes over every host's aligned steps
        data["step_time"].update(min_us=float(steps_us.min()), max_us=float(steps_us.max()))
    data["headline"] = headline
    return data


def overview_figures(ctx: Context, ops: OpTable | None) -> Overview:
    """Every figure of the overview, without the diagnose report (see `Overview.report`)."""
    trace = ctx.trace
    devices = ctx.devices
    series, duty_cycle = _step_series(ctx)
    pod = ctx.get(POD)
    headline = None
    if len(pod.summaries) > 1:  # a pod's headline metrics (their records: ~2 ms of import, a pod's only)
        from tpuscope.analysis.metrics.pod import pod_metrics

        headline = pod_metrics(pod)
    return Overview(
        sources=[str(s) for s in trace.sources],
        devices=summarize_devices(trace, devices),
        hosts=list(trace.hosts),
        framework=ctx.framework,
        span_ps=int(trace.duration_ps),
        steps=ctx.steps,
        series=series,
        slices=_time_slices(ctx) if len(series) == 0 else None,
        step_time=step_time_stats(series.duration_ps),
        duty_cycle=duty_cycle,
        ops=ops if ops is not None and len(ops) else None,
        report=None,
        completeness=trace.completeness,
        pod=pod,
        pod_metrics=headline,
    )


def with_report(figures: Overview, report: Report) -> Overview:
    """The whole overview: `figures` and the report diagnosed with the same context."""
    return replace(figures, report=report)


def summarize_devices(trace: Trace, devices: list[Device]) -> DeviceSummary:
    """The kind and type of the devices that ran ops, and how many planes of that kind exist."""
    if not devices:
        return DeviceSummary("", "", 0, 0)
    kind = devices[0].kind
    active = [d for d in devices if d.kind == kind]
    if kind == "CPU":  # XLA:CPU: each host that ran thunks is one device
        return DeviceSummary(kind, "XLA:CPU", len(active), len(active))
    planes = trace.device_planes(kind)
    return DeviceSummary(kind, _device_type(active[0]), max(len(planes), len(active)), len(active))


def _device_type(device: Device) -> str:
    plane = device.plane
    if plane.device_type:
        return plane.device_type
    vendor = plane.stats.get(Stat.DEVICE_VENDOR)
    return f"{vendor} {device.kind}" if isinstance(vendor, str) and vendor else device.kind


def step_time_stats(durations_ps: np.ndarray) -> StepTimeStats | None:
    """Mean, median, p95, min and max of the step times; None without steps."""
    values = np.asarray(durations_ps, dtype=np.float64)
    if len(values) == 0:
        return None
    return StepTimeStats(
        float(values.mean()),
        float(order_statistics.median(values)),
        float(order_statistics.percentile(values, STEP_TIME_PERCENTILE)),
        float(values.min()),
        float(values.max()),
    )


def _step_series(ctx: Context) -> tuple[StepSeries, float | None]:
    """The per-step split, and the whole-profile duty cycle (from `step_breakdown`)."""
    p0, p1 = ctx.periods
    waiting = input_wait_intervals(ctx)
    return _split(ctx, ctx.steps.number, p0, p1, waiting)


def _time_slices(ctx: Context, count: int = SLICES_WITHOUT_STEPS) -> StepSeries:
    """The same split over `count` equal slices of the profile, for profiles without steps.

    Input waits are defined per step, so slices have none; busy, compilation and idle still apply.
    """
    span = max(int(ctx.trace.duration_ps), 1)
    edges = np.linspace(0, span, min(count, span) + 1).astype(np.int64)
    number = np.arange(len(edges) - 1, dtype=np.int64)
    series, _ = _split(ctx, number, edges[:-1], edges[1:], empty())
    return series


def _split(
    ctx: Context, number: np.ndarray, p0: np.ndarray, p1: np.ndarray, waiting: Intervals
) -> tuple[StepSeries, float | None]:
    """busy/input/compile/idle inside each window [p0, p1), and the whole-profile duty cycle."""
    windows = Steps(number, p0, p1, ctx.steps.source, ctx.steps.description)
    breakdown = step_breakdown(ctx.trace, devices=ctx.devices, steps=windows)
    busy = breakdown.busy_ps.astype(np.float64)
    input_ps = window_total(waiting, p0, p1).astype(np.float64)
    compile_ps = window_total(compile_wait_intervals(ctx, waiting), p0, p1).astype(np.float64)
    idle = np.maximum((p1 - p0) - busy - input_ps - compile_ps, 0.0)
    series = StepSeries(number, p0, p1, busy, input_ps, compile_ps, idle)
    return series, (breakdown.duty_cycle if ctx.devices else None)


def _op_json(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("name", "category", "program", "occurrences", "self_time_us", "percent", "bound_by")
    return {k: row[k] for k in keys}
