"""A pod's headline metrics: each host's from its summary (`HostSummary`, over the steps every host
has, as the host x step table aligns them) and the pod's, the mean over its hosts.

A trace holding several hosts and a run analysed host by host (`tpuscope.app.hosts`) both come
down to the same `PodAnalysis`, so both give these same numbers. A host's parts are the pod table's
(`tpuscope.analysis.pod.summary`), named as the overview names its split: busy is device compute
plus time in collectives, idle is the host's other time.
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.metrics.registry import HOST, POD, MetricValue
from tpuscope.analysis.metrics.units import FRACTION, PERCENT, US
from tpuscope.analysis.pod.analysis import PodAnalysis
from tpuscope.model import order_statistics

# The tail statistic, as `tpuscope.analysis.overview.STEP_TIME_PERCENTILE` (which imports this module).
STEP_TIME_PERCENTILE = 95.0

# Each pod metric: (name, unit, definition for one host). The pod's row is the mean of the hosts'.
POD_METRICS: tuple[tuple[str, str, str], ...] = (
    ("step_time_mean", US, "mean step time (start to next start) over the steps every host has"),
    ("step_time_median", US, "median step time (start to next start) over the steps every host has"),
    ("step_time_p95", US, "95th percentile of step time over the steps every host has"),
    ("duty_cycle", FRACTION, "share of its profile the host's devices ran an op (mean over its devices)"),
    ("step_duty_cycle", FRACTION, "share of step time the host's devices ran an op or were in a collective"),
    ("busy_share", PERCENT, "share of step time the host's devices ran an op or were in a collective"),
    ("input_share", PERCENT, "share of step time no device of the host ran an op while it prepared input"),
    ("compile_share", PERCENT, "share of step time no device of the host ran an op while it compiled"),
    ("idle_share", PERCENT, "share of step time the host's devices were idle for no input or compilation"),
    ("collective_share", PERCENT, "share of step time the host's devices were inside a collective"),
    ("exposed_communication_share", PERCENT, "share of step time in collectives no compute of theirs hid"),
    ("communication_overlap", PERCENT, "share of the host's collective time compute overlapped (HTA)"),
)
POD_METRIC_NAMES = tuple(name for name, _, _ in POD_METRICS)
NO_HOST_STEPS = "no host has steps"


def host_values(pod: PodAnalysis) -> dict[str, dict[str, float | None]]:
    """Per host (the hosts with steps, in table order, then those without), each pod metric's value."""
    found: dict[str, dict[str, float | None]] = {}
    step = pod.matrix("step")
    parts = {p: pod.matrix(p) for p in ("compute", "collective", "input", "compile", "host")}
    exposed = pod.exposed_collective_matrix()  # the pod table's, as `tpuscope comms` reads it
    for k, summary in enumerate(pod.host_summaries):
        total = float(step[k].sum())
        values: dict[str, float | None] = dict.fromkeys(POD_METRIC_NAMES)
        if pod.step_count:
            us = step[k] / 1e6
            values["step_time_mean"] = float(us.mean())
            values["step_time_median"] = float(order_statistics.median(us))
            values["step_time_p95"] = float(order_statistics.percentile(us, STEP_TIME_PERCENTILE))
        if total > 0:
            shares = {p: 100.0 * float(v[k].sum()) / total for p, v in parts.items()}
            values["busy_share"] = shares["compute"] + shares["collective"]
            values["input_share"] = shares["input"]
            values["compile_share"] = shares["compile"]
            values["idle_share"] = shares["host"]
            values["collective_share"] = shares["collective"]
            values["exposed_communication_share"] = 100.0 * float(exposed[k].sum()) / total
            busy = shares["compute"] + shares["collective"]
            values["step_duty_cycle"] = busy / 100.0 if summary.devices else None
        communication, not_hidden = float(parts["collective"][k].sum()), float(exposed[k].sum())
        if communication > 0:
            values["communication_overlap"] = 100.0 * (communication - not_hidden) / communication
        values["duty_cycle"] = summary.duty_cycle
        found[summary.host] = values
    for summary in pod.summaries:
        if summary.host not in found:
            values = dict.fromkeys(POD_METRIC_NAMES)
            values["duty_cycle"] = summary.duty_cycle
            found[summary.host] = values
    return found


def pod_metrics(pod: PodAnalysis) -> list[MetricValue]:
    """The pod's rows (scope "pod": the mean over the hosts that have the value), then each host's."""
    by_host = host_values(pod)
    rows: list[MetricValue] = []
    for name, unit, definition in POD_METRICS:
        have: list[float] = [x for x in (v[name] for v in by_host.values()) if x is not None]
        value = float(np.mean(have)) if have else None
        over = f"mean of {len(have)} host{'s' if len(have) != 1 else ''}" if have else ""
        rows.append(
            MetricValue(name, value, unit, f"mean over the hosts of: {definition}", POD,
                        "" if have else NO_HOST_STEPS, over=over)
        )  # fmt: skip
    for host, values in by_host.items():
        for name, unit, definition in POD_METRICS:
            value = values[name]
            reason = "" if value is not None else "this host has no steps or no devices"
            rows.append(MetricValue(name, value, unit, definition, HOST, reason, host=host))
    return rows


SPLIT = {"busy": "busy_share", "input": "input_share", "compile": "compile_share", "idle": "idle_share"}
STEP_TIME = {"mean_us": "step_time_mean", "median_us": "step_time_median", "p95_us": "step_time_p95"}


def headline(values: dict[str, float | None]) -> dict[str, object]:
    """One host's or the pod's values (`host_values`) under `overview --json`'s own keys."""
    split = None if values["busy_share"] is None else {k: values[n] for k, n in SPLIT.items()}
    step = None if values["step_time_mean"] is None else {k: values[n] for k, n in STEP_TIME.items()}
    return {
        "step_time": step,
        "duty_cycle": values["duty_cycle"],
        "step_duty_cycle": values["step_duty_cycle"],
        "step_time_split_percent": split,
    }


def headline_json(rows: list[MetricValue]) -> dict[str, object]:
    """The pod's headline as `overview --json` prints it, from the rows `pod_metrics` made: the
    pod's (mean over hosts, `over` says of how many) with each host's beside it."""
    pod_rows = {r.name: r for r in rows if r.scope == POD}
    by_host: dict[str, dict[str, float | None]] = {}
    for r in rows:
        if r.host is not None:
            by_host.setdefault(r.host, {})[r.name] = r.value
    return {
        **headline({k: r.value for k, r in pod_rows.items()}),
        "scope": POD,
        "over": pod_rows["step_time_mean"].over or pod_rows["duty_cycle"].over,
        "per_host": {host: headline(values) for host, values in by_host.items()},
    }
