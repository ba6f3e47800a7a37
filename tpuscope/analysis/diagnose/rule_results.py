"""The results some rules measure and the headline metrics (`tpuscope.analysis.metrics`) read too,
so that a finding and the metric print one number: each computed once per trace.

Named here, apart from the rules, so that the session can ask for them before the rules run (those
that read the facts are in the report's `first`: `tpuscope.analysis.results` on the lock order)
without importing any rule; each rule's module holds the computation, imported when one is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpuscope.analysis.facts.context import CONTEXT
from tpuscope.analysis.results import Result, ResultSource
from tpuscope.analysis.trace_results import op_table_result

if TYPE_CHECKING:
    from tpuscope.analysis.diagnose.async_wait import AsyncWait
    from tpuscope.analysis.diagnose.flops_utilization import ComputeBound
    from tpuscope.analysis.diagnose.low_utilization import SteadyStateDuty
    from tpuscope.analysis.diagnose.step_variance import SteadySteps


def _async_wait(source: ResultSource) -> AsyncWait:
    from tpuscope.analysis.diagnose.async_wait import async_wait_of

    return async_wait_of(source.get(op_table_result("op", "all")))


def _compute_bound(source: ResultSource) -> ComputeBound:
    from tpuscope.analysis.diagnose.flops_utilization import compute_bound

    return compute_bound(source.get(op_table_result("op", "all")))


def _steady_state_duty(source: ResultSource) -> SteadyStateDuty:
    from tpuscope.analysis.diagnose.low_utilization import steady_state_duty

    return steady_state_duty(source.get(CONTEXT))


def _steady_steps(source: ResultSource) -> SteadySteps:
    from tpuscope.analysis.diagnose.step_variance import steady_steps

    return steady_steps(source.get(CONTEXT))


ASYNC_WAIT: Result[AsyncWait] = Result("async_wait", _async_wait)
COMPUTE_BOUND_UTILIZATION: Result[ComputeBound] = Result("compute_bound_utilization", _compute_bound)
STEADY_STATE_DUTY: Result[SteadyStateDuty] = Result("steady_state_duty", _steady_state_duty, reads_facts=True)
STEADY_STEPS: Result[SteadySteps] = Result("steady_steps", _steady_steps, reads_facts=True)
# What the report asks for before its rules run (they read the facts: see the module docstring).
READ_BY_RULES_WITH_FACTS: tuple[Result, ...] = (STEADY_STATE_DUTY, STEADY_STEPS)
