"""Runs every diagnosis rule on a trace and returns the findings, worst first.

A rule that fails on an unexpected profile must not take the others down: its error is
kept in the report (and shown), the remaining rules still run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import field
from functools import partial

from tpuscope.analysis.diagnose import (
    async_wait,
    clock_offset,
    collective_bound,
    cpu_fallback,
    dtype,
    embedding_lookup,
    exposed_communication,
    flops_utilization,
    host_callback,
    host_device_sync,
    infeed_outfeed,
    input_bound,
    low_utilization,
    memory_growth,
    memory_pressure,
    padding_waste,
    recompilation,
    shape_alignment,
    sparsecore,
    step_variance,
    straggler,
    tensorcore_idle,
)
from tpuscope.analysis.diagnose.finding import Finding, ImpactThresholds, RuleOutcome, Severity
from tpuscope.analysis.facts.context import CONTEXT, Context
from tpuscope.analysis.framework import Framework
from tpuscope.analysis.host_analyses import HOST_ANALYSES
from tpuscope.analysis.steps import Steps
from tpuscope.model.completeness import Completeness
from tpuscope.model.records import record

Rule = Callable[[Context], "list[Finding] | RuleOutcome"]

# The rules, in the order they run and findings of equal severity and impact are listed.
_RULE_MODULES = (
    input_bound,
    recompilation,
    host_device_sync,
    low_utilization,
    step_variance,
    straggler,
    cpu_fallback,
    memory_pressure,
    padding_waste,
    memory_growth,
    collective_bound,
    exposed_communication,
    async_wait,
    host_callback,
    infeed_outfeed,
    tensorcore_idle,
    flops_utilization,
    shape_alignment,
    dtype,
    sparsecore,
    embedding_lookup,
    clock_offset,
)
# Each rule's impact levels: a warning or critical finding of the rule has an impact at or above its
# `warning` level (tests hold every rule to it on every real profile).
IMPACT_THRESHOLDS: dict[str, ImpactThresholds] = {m.RULE_ID: m.IMPACT_THRESHOLDS for m in _RULE_MODULES}

RULES: dict[str, Rule] = {m.RULE_ID: m.run for m in _RULE_MODULES}  # in the order findings tie-break


@record(frozen=True)
class RuleTiming:
    """One rule's wall time in a diagnosis, and the shared facts it was the first to ask for: their
    cost is in its time, and the rules after it reuse them (`tpuscope diagnose --timings`)."""

    rule: str
    seconds: float
    facts: tuple[str, ...]


@record
class Report:
    """The outcome of one diagnosis run."""

    framework: Framework
    steps: Steps
    findings: list[Finding]
    rule_errors: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    checked: list[dict[str, str]] = field(default_factory=list)  # {"rule", "summary"} per rule that ran
    timings: list[RuleTiming] = field(default_factory=list)  # per rule, in run order (one trace's rules)
    # Whether the rules saw the whole profile: on a salvaged load they judged a part (the all-clear says so).
    completeness: Completeness = field(default_factory=Completeness)

    @property
    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def to_json(self) -> dict:
        return {
            "framework": self.framework.name,
            "framework_evidence": self.framework.evidence,
            "steps": self.steps.to_json(),
            "findings": [f.to_json() for f in self.findings],
            "rule_errors": dict(self.rule_errors),
            "checked": [dict(c) for c in self.checked],
            **self.completeness.to_json(),
        }


def _impact_percent(finding: Finding) -> float:
    """What findings of one severity sort by: their impact, those without one last."""
    return finding.impact.percent if finding.impact is not None else -1.0


def diagnose(ctx: Context, rules: dict[str, Rule] | None = None) -> Report:
    """All findings of all rules (or of `rules`) on the context's trace, sorted worst first, then by
    impact (the largest cost first), then by rule order.

    The context is its analysis' (`TraceAnalysis(trace).context`; `TraceAnalysis.report` is every
    rule's report, computed once): what the rules compute stays there for the views and commands.

    A trace of several hosts (a pod's run folder) is diagnosed as its hosts read one at a time are
    (`tpuscope.analysis.pod_run.diagnose_by_host`): each per-host rule on each host's planes
    alone, the rules comparing hosts once over the pod table, the findings grouped across hosts.
    """
    if len(ctx.trace.hosts) > 1:
        return _diagnose_by_host(ctx, None if rules is None else list(rules))
    started = time.perf_counter()
    findings: list[Finding] = []
    errors: dict[str, str] = {}
    checked: list[dict[str, str]] = []
    timings: list[RuleTiming] = []
    for rule_id, rule in (rules or RULES).items():
        facts_before = set(ctx.facts_in_hand())
        rule_started = time.perf_counter()
        try:
            outcome = rule(ctx)
            if isinstance(outcome, RuleOutcome):
                findings.extend(outcome.findings)
                checked.append({"rule": rule_id, "summary": outcome.checked})
            else:
                findings.extend(outcome)
                checked.append({"rule": rule_id, "summary": ""})
        except Exception as error:  # noqa: BLE001 - one broken rule must not hide the others' findings
            errors[rule_id] = f"{type(error).__name__}: {error}"
        new_facts = tuple(f for f in ctx.facts_in_hand() if f not in facts_before)
        timings.append(RuleTiming(rule_id, time.perf_counter() - rule_started, new_facts))
    order = {rule_id: k for k, rule_id in enumerate(RULES)}
    findings.sort(key=lambda f: (-int(f.severity), -_impact_percent(f), order.get(f.id, len(order))))
    complete = ctx.trace.completeness
    found = {f.id for f in findings}
    checked = [dict(c, summary=complete.qualified(c["summary"], c["rule"] in found)) for c in checked]
    seconds = time.perf_counter() - started
    return Report(ctx.framework, ctx.steps, findings, errors, seconds, checked, timings, complete)


def _diagnose_by_host(ctx: Context, wanted: list[str] | None) -> Report:
    """The report of a trace holding several hosts, as `tpuscope.analysis.pod_run.combine` finds it
    for their files read one at a time: each per-host rule on each host's planes alone
    (`host_trace`), the rules comparing hosts once on the pod table, the findings grouped."""
    # The grouping across hosts (its records: ~0.7 ms of import), for a trace of several hosts only.
    from tpuscope.analysis.diagnose.across_hosts import diagnose_pod, finding_from_json, host_rules

    started = time.perf_counter()
    rules = host_rules(RULES)
    if wanted is not None:
        rules = {k: v for k, v in rules.items() if k in wanted}
    reports = []
    timings: list[list[RuleTiming]] = []
    for host, analysis in ctx.get(HOST_ANALYSES).items():  # each of its planes alone, as the pod table's
        report = analysis.reading_facts(partial(diagnose, analysis.get(CONTEXT), rules))
        reports.append((host, report.to_json()))
        timings.append(report.timings)
    outcome = diagnose_pod(ctx, reports, RULES, wanted)
    findings = [finding_from_json(f) for f in outcome.findings]
    seconds = time.perf_counter() - started
    checked = outcome.checked
    timings.append([RuleTiming(*t) for t in outcome.pod_timings])
    return Report(
        ctx.framework, ctx.steps, findings, outcome.rule_errors, seconds, checked, summed_timings(timings),
        ctx.trace.completeness,
    )  # fmt: skip


def summed_timings(per_host: list[list[RuleTiming]]) -> list[RuleTiming]:
    """Each rule's time over all hosts (a pod rule's: its one run), with every fact it computed first
    on any of them, in the rules' order."""
    seconds: dict[str, float] = {}
    facts: dict[str, dict[str, None]] = {}  # in the order first met
    for timings in per_host:
        for timing in timings:
            seconds[timing.rule] = seconds.get(timing.rule, 0.0) + timing.seconds
            facts.setdefault(timing.rule, {}).update(dict.fromkeys(timing.facts))
    order = {rule: k for k, rule in enumerate(RULES)}
    ranked = sorted(seconds, key=lambda rule: order.get(rule, len(order)))
    return [RuleTiming(rule, seconds[rule], tuple(facts[rule])) for rule in ranked]
