"""Headline metrics, defined once: each a name, a unit, a one-line definition and the scope it covers,
measured once per trace as a result, and read by every output that shows the same quantity.

Usage (the app's cards, `tpuscope metrics`, the SQL table `metrics`, tests)::

    from tpuscope.analysis.metrics import METRICS, format_metric
    metrics = analysis.get(METRICS)          # a TraceAnalysis; computed once, shared by every caller
    row = metrics.get("duty_cycle")          # MetricValue: name, value, unit, definition, scope,
                                             # reason (why value is None), host, over
    text = format_metric(row.value, row.unit)  # "80.3%"; "-" when the metric does not apply
    tooltip = row.definition
    metrics.to_json()                        # the records `tpuscope metrics --json` prints

A pod run analysed host by host (`tpuscope.app.hosts.analyze_run`) has no `TraceAnalysis`:
`pod_metrics(run.pod)` gives the same rows from its pod table. Units are `US`, `FRACTION` (0..1),
`PERCENT` (0..100) and `BYTES`; scopes `PROFILE`, `STEPS`, `HOST`, `DEVICE` and `POD`
(`tpuscope.analysis.metrics.registry`). The registrations are `definitions.METRICS_DEFINED`, one
`Metric` per name, each naming the key `overview --json` / `ops --json` print it under.

This package's own modules import little (the units and the formatter); the registry's records
load when one is first asked for (the diagnose rules format their numbers, but one trace's
`overview` and `diagnose` make no record), the definitions, which read the overview and the rules'
results, when `METRICS` is, so that the rules may format their numbers with `format_percent`
without an import cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tpuscope.analysis.metrics.format import format_fraction, format_metric, format_percent
from tpuscope.analysis.metrics.units import BYTES, FRACTION, PERCENT, US

if TYPE_CHECKING:
    from tpuscope.analysis.metrics.definitions import METRICS, METRICS_DEFINED
    from tpuscope.analysis.metrics.pod import pod_metrics
    from tpuscope.analysis.metrics.registry import (
        DEVICE,
        HOST,
        POD,
        PROFILE,
        STEPS,
        Metric,
        Metrics,
        MetricValue,
    )

__all__ = [
    "BYTES",
    "DEVICE",
    "FRACTION",
    "HOST",
    "METRICS",
    "METRICS_DEFINED",
    "PERCENT",
    "POD",
    "PROFILE",
    "STEPS",
    "US",
    "Metric",
    "MetricValue",
    "Metrics",
    "format_fraction",
    "format_metric",
    "format_percent",
    "pod_metrics",
]


_RECORDS = ("DEVICE", "HOST", "POD", "PROFILE", "STEPS", "Metric", "Metrics", "MetricValue")


def __getattr__(name: str) -> Any:
    """The registry's names, METRICS, METRICS_DEFINED and pod_metrics, imported when first asked for
    (see the docstring)."""
    if name in _RECORDS:
        from tpuscope.analysis.metrics import registry

        return getattr(registry, name)
    if name in ("METRICS", "METRICS_DEFINED"):
        from tpuscope.analysis.metrics import definitions

        return getattr(definitions, name)
    if name == "pod_metrics":
        from tpuscope.analysis.metrics import pod

        return pod.pod_metrics
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
