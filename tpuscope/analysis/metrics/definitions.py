"""The headline metrics, each registered once, and the result that measures them all (`METRICS`).

Each `Metric` reads a result another module defines and computes once (the overview's figures, the
async-wait and steady-state duty results the rules read, the memory report, the op table): nothing
is measured anew here, so `overview --json`, `ops --json`, the findings and this table print the
same number for the same quantity. A metric that does not apply is None with the reason.

A trace that holds several hosts (a pod loaded as one trace) gets the pod's rows (`scope` "pod",
the mean over the hosts) and each host's (`scope` "host") beside the trace's own, from the pod
table (`tpuscope.analysis.metrics.pod`).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from tpuscope.analysis.metrics.registry import (
    DEVICE,
    POD,
    PROFILE,
    STEPS,
    Measured,
    Metric,
    Metrics,
    MetricValue,
    measured,
)
from tpuscope.analysis.metrics.units import BYTES, FRACTION, PERCENT, US
from tpuscope.analysis.overview import Overview
from tpuscope.analysis.results import Result, ResultSource

NO_STEPS = "the profile has no steps"
NO_DEVICES = "no device activity recorded"


class Inputs:
    """What the metrics read: the trace's results, each asked for once, when a metric needs it."""

    def __init__(self, source: ResultSource):
        self.source = source

    @cached_property
    def overview(self) -> Overview:
        from tpuscope.analysis.session import OVERVIEW_FIGURES

        return self.source.get(OVERVIEW_FIGURES)

    @cached_property
    def overview_json(self) -> dict[str, Any]:
        """The overview's own JSON numbers: what `overview --json` prints, read rather than redone."""
        o = self.overview
        return {
            "step_time": None if o.step_time is None else o.step_time.to_json(),
            "duty_cycle": o.duty_cycle,
            "step_duty_cycle": o.step_duty_cycle,
            "step_time_split_percent": o.series.split_percent(),
        }

    def get(self, result: Result[Any]) -> Any:
        return self.source.get(result)


def _step_time(key: str):
    def measure(inputs: Inputs) -> Measured:
        stats = inputs.overview_json["step_time"]
        return measured(None if stats is None else stats[key], NO_STEPS)

    return measure


def _split(part: str):
    def measure(inputs: Inputs) -> Measured:
        split = inputs.overview_json["step_time_split_percent"]
        return measured(None if split is None else split[part], NO_STEPS)

    return measure


def _duty_cycle(inputs: Inputs) -> Measured:
    return measured(inputs.overview_json["duty_cycle"], NO_DEVICES)


def _step_duty_cycle(inputs: Inputs) -> Measured:
    o = inputs.overview
    reason = NO_DEVICES if o.duty_cycle is None else NO_STEPS
    return measured(inputs.overview_json["step_duty_cycle"], reason)


def _steady_step_median(inputs: Inputs) -> Measured:
    from tpuscope.analysis.diagnose.rule_results import STEADY_STEPS

    steady = inputs.get(STEADY_STEPS)
    return measured(steady.median_us, steady.reason)


def _steady_duty(inputs: Inputs) -> Measured:
    from tpuscope.analysis.diagnose.rule_results import STEADY_STATE_DUTY

    duty = inputs.get(STEADY_STATE_DUTY)
    return measured(duty.busiest_fraction, duty.reason)


def _collective_share(inputs: Inputs) -> Measured:
    from tpuscope.analysis.pod import late

    pod = inputs.overview.pod
    if pod is None or pod.step_count == 0:
        return measured(None, NO_STEPS)
    share = late.collective_share(pod)
    if len(share.hosts) != 1:
        return measured(None, "several hosts: each host's and the pod's mean are their own rows")
    return measured(float(share.percent[0]))


def _communication(inputs: Inputs, overlap: bool) -> Measured:
    """The exposed share of step time or the overlapped share of communication time of one host, read
    from the communication report (`tpuscope comms`); a pod's are its own rows, per host."""
    from tpuscope.analysis.pod.comms_report import COMMS

    report = inputs.get(COMMS)
    if not report.hosts:
        return measured(None, NO_STEPS)
    if len(report.hosts) != 1:
        return measured(None, "several hosts: each host's and the pod's mean are their own rows")
    communication, exposed = report.communication_total_ps, report.exposed_total_ps
    if overlap:
        return measured(100.0 * (communication - exposed) / communication if communication > 0 else None,
                        "no collectives inside the steps")  # fmt: skip
    step = float(report.step_ps.sum())
    return measured(100.0 * exposed / step if step > 0 else None, NO_STEPS)


def _async_wait(inputs: Inputs) -> Measured:
    from tpuscope.analysis.diagnose.rule_results import ASYNC_WAIT

    wait = inputs.get(ASYNC_WAIT)
    return measured(wait.percent_of_device_time, wait.reason)


def _async_wait_of_steps(inputs: Inputs) -> Measured:
    from tpuscope.analysis.diagnose.rule_results import ASYNC_WAIT

    wait = inputs.get(ASYNC_WAIT)
    if wait.percent_of_device_time is None:
        return measured(None, wait.reason)
    p0, p1 = inputs.overview.series.start_ps, inputs.overview.series.end_ps
    return measured(wait.percent_of_step_time((p0, p1)), NO_STEPS)


def _device_allocators(inputs: Inputs) -> list[Any]:
    from tpuscope.analysis.memory.report import MEMORY_REPORT, is_device_allocator

    return [a for a in inputs.get(MEMORY_REPORT).allocators if is_device_allocator(a.id)]


NO_ALLOCATOR = "no device memory allocator recorded in the profile"


def _hbm_peak_in_profile(inputs: Inputs) -> Measured:
    found = _device_allocators(inputs)
    return measured(max((a.peak_in_profile_bytes for a in found), default=None), NO_ALLOCATOR)


def _hbm_peak_lifetime(inputs: Inputs) -> Measured:
    found = _device_allocators(inputs)
    # The profile is part of the lifetime: a reported peak below the profile's own is out of date.
    peaks = (max(a.peak_bytes_in_use, a.peak_in_profile_bytes) for a in found)
    return measured(max(peaks, default=None), NO_ALLOCATOR)


def _flop_utilization(inputs: Inputs) -> Measured:
    from tpuscope.analysis.diagnose.rule_results import COMPUTE_BOUND_UTILIZATION

    found = inputs.get(COMPUTE_BOUND_UTILIZATION)
    return measured(found.utilization_percent, found.reason)


# The registrations, in the order the tables list them. A name is a metric's identity: never reused.
METRICS_DEFINED: tuple[Metric, ...] = (
    Metric("step_time_mean", US, STEPS, "mean step time, each step from its start to the next step's",
           _step_time("mean_us"), overview_key="step_time.mean_us"),
    Metric("step_time_median", US, STEPS, "median step time, each step from its start to the next step's",
           _step_time("median_us"), overview_key="step_time.median_us"),
    Metric("step_time_p95", US, STEPS, "95th percentile of step time (start to next start)",
           _step_time("p95_us"), overview_key="step_time.p95_us"),
    Metric("steady_step_time_median", US, STEPS,
           "median step time with warm-up left out (the first step and steps that compiled), "
           "what step_time_variance compares each step with", _steady_step_median),
    Metric("duty_cycle", FRACTION, PROFILE,
           "share of the whole profile the devices ran an op (mean over the devices)",
           _duty_cycle, overview_key="duty_cycle", ops_key="duty_cycle"),
    Metric("step_duty_cycle", FRACTION, STEPS,
           "share of the time inside steps the devices ran an op (mean over the devices)",
           _step_duty_cycle, overview_key="step_duty_cycle", ops_key="steps.step_duty_cycle"),
    Metric("steady_state_duty_cycle", FRACTION, DEVICE,
           "share of the steady state (steps after the first, compilation left out; without steps the "
           "first to last device op) the busiest device ran an op", _steady_duty),
    Metric("busy_share", PERCENT, STEPS, "share of step time a device ran an op (mean over the devices)",
           _split("busy"), overview_key="step_time_split_percent.busy"),
    Metric("input_share", PERCENT, STEPS,
           "share of step time no device ran an op while the host prepared the step's input",
           _split("input"), overview_key="step_time_split_percent.input"),
    Metric("compile_share", PERCENT, STEPS,
           "share of step time no device ran an op while the host compiled (input wait left out)",
           _split("compile"), overview_key="step_time_split_percent.compile"),
    Metric("idle_share", PERCENT, STEPS, "share of step time neither busy nor waiting for input or compiling",
           _split("idle"), overview_key="step_time_split_percent.idle"),
    Metric("collective_share", PERCENT, STEPS,
           "share of step time a device was inside a collective or the host in a DCN transfer",
           _collective_share),
    Metric("exposed_communication_share", PERCENT, STEPS,
           "share of step time a device was inside a collective that no other op of it overlapped "
           "(copies aside), as `tpuscope comms` measures it", lambda i: _communication(i, overlap=False)),
    Metric("communication_overlap", PERCENT, STEPS,
           "share of collective time inside the steps that compute on the same device overlapped "
           "(HTA's communication/computation overlap)", lambda i: _communication(i, overlap=True)),
    Metric("async_wait_share", PERCENT, PROFILE,
           "share of device op time spent in async -done ops (waiting for a transfer started earlier)",
           _async_wait),
    Metric("async_wait_step_share", PERCENT, STEPS,
           "device time in async -done ops per device, as a share of step time", _async_wait_of_steps),
    Metric("hbm_peak_in_profile", BYTES, DEVICE,
           "highest memory in use inside the profile window, on the fullest device allocator",
           _hbm_peak_in_profile),
    Metric("hbm_peak_lifetime", BYTES, DEVICE,
           "highest memory in use since the process started (its reported peak, or the profile's if higher)",
           _hbm_peak_lifetime),
    Metric("flop_utilization", PERCENT, PROFILE,
           "FLOP/s of the compute-bound ops over their self time, as a share of the chip's peak FLOP/s",
           _flop_utilization),
)  # fmt: skip
BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS_DEFINED}
assert len(BY_NAME) == len(METRICS_DEFINED), "a metric name is registered twice"


def measure_all(source: ResultSource) -> Metrics:
    """Every registered metric of the trace; with several hosts, the pod's (in place of the trace's
    own for the metrics a pod has) and then each host's."""
    inputs = Inputs(source)
    rows = []
    for metric in METRICS_DEFINED:
        value, reason = metric.measure(inputs)
        rows.append(MetricValue(metric.name, value, metric.unit, metric.definition, metric.scope, reason))
    pod_rows = inputs.overview.pod_metrics
    if pod_rows is not None:  # several hosts: the pod's rows stand for the trace's, the hosts' follow
        pod = {r.name: r for r in pod_rows if r.scope == POD}
        pod_only = [r for r in pod.values() if r.name not in BY_NAME]  # a pod's own metrics
        rows = [pod.get(r.name, r) for r in rows] + pod_only + [r for r in pod_rows if r.scope != POD]
    return Metrics(tuple(rows))


METRICS: Result[Metrics] = Result("metrics", measure_all)
