"""The basic results of a trace that everything else reads: host-name index, steps, framework,
devices, op events and tables, step breakdowns.

Below the facts `Context` and the session, so that both (and any rule or view) can ask for them by
name through a `ResultSource` without importing the session.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from tpuscope.analysis.device_ops import Device, find_devices, select_devices
from tpuscope.analysis.framework import Framework, detect_framework
from tpuscope.analysis.host_names import HostNameIndex
from tpuscope.analysis.ops import CODE_GROUPINGS, OpEvents, OpTable, aggregate, collect_op_events
from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.analysis.results import Result, ResultSource
from tpuscope.analysis.steps import Steps, as_periods, find_steps

if TYPE_CHECKING:  # a step breakdown's module loads where one is made (`diagnose` makes none)
    from tpuscope.analysis.step_breakdown import StepBreakdown

DeviceChoice = str | int  # "all", a position in the device list, or a kind ("TPU", "GPU", "CPU")

HOST_NAMES: Result[HostNameIndex] = Result("host_names", lambda a: HostNameIndex(a.trace))
STEPS: Result[Steps] = Result("steps", lambda a: find_steps(a.trace))
FRAMEWORK: Result[Framework] = Result("framework", lambda a: detect_framework(a.trace, a.get(HOST_NAMES)))
DEVICES: Result[list[Device]] = Result("devices", lambda a: find_devices(a.trace))


def chosen_devices(source: ResultSource, device: DeviceChoice = "all") -> list[Device]:
    """The devices `device` names among the trace's (all of them, one by position, or one kind)."""
    return select_devices(source.get(DEVICES), device)


def _device_key(device: DeviceChoice) -> str:
    return str(device).lower() if isinstance(device, str) else str(int(device))


@cache
def op_events_result(device: DeviceChoice = "all") -> Result[OpEvents | None]:
    def compute(a: ResultSource) -> OpEvents | None:
        chosen = chosen_devices(a, device)
        return collect_op_events(a.trace, chosen) if chosen else None

    return Result(f"op_events[{_device_key(device)}]", compute)


@cache
def op_table_result(by: str = "op", device: DeviceChoice = "all") -> Result[OpTable | None]:
    def compute(a: ResultSource) -> OpTable | None:
        events = a.get(op_events_result(device))
        if events is None:
            return None
        # By source or framework op, ops without their own take them from their program's code.
        code = a.get(PROGRAM_CODE) if by in CODE_GROUPINGS else None
        return aggregate(events, by, code)

    return Result(f"op_table[{by},{_device_key(device)}]", compute)


@cache
def step_breakdown_result(device: DeviceChoice = "all") -> Result[StepBreakdown | None]:
    def compute(a: ResultSource) -> StepBreakdown | None:
        from tpuscope.analysis.step_breakdown import step_breakdown

        chosen = chosen_devices(a, device)
        # Each step from its start to the next step's, as every step time is measured (`step_periods`).
        return step_breakdown(a.trace, devices=chosen, steps=as_periods(a.get(STEPS))) if chosen else None

    return Result(f"step_breakdown[{_device_key(device)}]", compute)
