"""What a metric is (`Metric`: a name, a unit, a one-line definition, a scope, how it is measured)
and what measuring one gives (`MetricValue`: the value, or None and why), kept apart from the
registrations (`tpuscope.analysis.metrics.definitions`) so that the formatter and the commands can
read the records without importing every analysis a metric reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

# Units: what a value is measured in (`tpuscope.analysis.metrics.units`), named here with the records.
from tpuscope.analysis.metrics.units import UNITS
from tpuscope.model.records import record

# Scopes: what a value covers.
PROFILE = "profile"  # the whole profile window
STEPS = "steps"  # the time inside the steps (each step from its start to the next step's start)
HOST = "host"  # one host of a pod (the record names it)
DEVICE = "device"  # one device (the busiest, the fullest: the definition says which)
POD = "pod"  # every host of a pod, the mean over the hosts
SCOPES = (PROFILE, STEPS, HOST, DEVICE, POD)

# A measurement: the value, or None and the one sentence that says why the metric does not apply.
Measured = tuple[float | None, str]


def measured(value: float | None, reason: str = "") -> Measured:
    return (None, reason or "not measured") if value is None else (float(value), "")


@record(frozen=True)
class Metric:
    """One headline metric, registered once (`definitions.METRICS_DEFINED`).

    `measure(inputs)` reads the trace's results through `inputs` (a `definitions.Inputs`) and gives a
    `Measured`; `overview_key`/`ops_key` are where `overview --json`/`ops --json` print the same
    number (dotted paths into their JSON), so a test can check that they agree."""

    name: str
    unit: str
    scope: str
    definition: str
    measure: Callable[[Any], Measured]
    overview_key: str = ""
    ops_key: str = ""

    def __post_init__(self) -> None:
        assert self.unit in UNITS, self.unit
        assert self.scope in SCOPES, self.scope


@record(frozen=True)
class MetricValue:
    """One row of `tpuscope metrics --json`, of the SQL table `metrics` and of the app's cards."""

    name: str
    value: float | None
    unit: str
    definition: str
    scope: str
    reason: str = ""  # why `value` is None
    host: str | None = None  # the host a `host`-scope row describes
    over: str = ""  # what a pod value is the mean of ("mean of 4 hosts")

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "definition": self.definition,
            "scope": self.scope,
        }
        if self.value is None:
            record["reason"] = self.reason
        if self.host is not None:
            record["host"] = self.host
        if self.over:
            record["over"] = self.over
        return record


@record(frozen=True)
class Metrics:
    """Every metric of one trace (or pod), in registration order; hosts' rows after the pod's."""

    values: tuple[MetricValue, ...]

    def __iter__(self) -> Iterator[MetricValue]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def get(self, name: str, host: str | None = None) -> MetricValue:
        """The row of metric `name` (of `host`, for a pod's host rows); KeyError when not registered."""
        for row in self.values:
            if row.name == name and row.host == host:
                return row
        raise KeyError(name)

    def value(self, name: str, host: str | None = None) -> float | None:
        return self.get(name, host).value

    def to_json(self) -> list[dict[str, Any]]:
        return [row.to_json() for row in self.values]
