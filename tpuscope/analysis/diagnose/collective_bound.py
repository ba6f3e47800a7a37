"""Rule `collective_bound`: every host spends a large share of its steps inside collectives.

When all hosts alike wait in collectives, the time goes to communication itself (the volume
sent, the interconnect, collectives that do not overlap compute), not to one host that keeps
the others waiting: that case is the `straggler` rule's, and this rule stays silent then.
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.diagnose.finding import STEP_TIME_BANDS, Finding, Impact, RuleOutcome, ms
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW
from tpuscope.analysis.metrics.format import format_percent
from tpuscope.analysis.pod import late as late_units
from tpuscope.analysis.pod.analysis import PodAnalysis
from tpuscope.analysis.pod.results import POD

RULE_ID = "collective_bound"
EVIDENCE_PER_HOST = 10
# The finding is made at XProf's collective-bound level (COLLECTIVE_BOUND_PERCENT of step time in
# collectives); its severity comes from the part no compute hides (STEP_TIME_BANDS).
IMPACT_THRESHOLDS = STEP_TIME_BANDS

ADVICE = {
    JAX: [
        "Send less per step: keep gradients and activations in bfloat16, shard parameters so each device "
        "gathers only what it needs, or accumulate gradients over several micro-batches per all-reduce.",
        "Overlap communication with compute: let XLA schedule collectives asynchronously (the latency-hiding "
        "scheduler) instead of forcing them with host round trips such as process_allgather every step.",
        "On multi-slice runs keep the chattiest axis (tensor/model parallel) inside a slice, on ICI, and "
        "only data parallelism across slices (DCN).",
    ],
    PYTORCH_XLA: [
        "Send less per step: bfloat16 gradients, gradient accumulation, or FSDP/SPMD sharding that gathers "
        "only what each device needs.",
        "Avoid host-driven collectives in the step (xm.mesh_reduce, rendezvous) where an in-graph collective "
        "can overlap compute.",
    ],
    TENSORFLOW: [
        "Send less per step (bfloat16 gradients, gradient accumulation) and let collectives overlap compute.",
    ],
    "": [
        "Reduce the data exchanged per step or overlap collectives with compute; check the interconnect.",
    ],
}


def run(ctx: Context) -> RuleOutcome:
    pod = ctx.get(POD)
    share = late_units.collective_share(pod)
    if not share.hosts:
        return RuleOutcome([], "no steps on any host: nothing to measure")
    low, high = share.lowest, float(share.percent.max())
    single = len(share.hosts) == 1
    spread = f"{low:.1f}%" if single else f"{low:.1f}-{high:.1f}%"
    where = "this rank" if single else f"{len(share.hosts)} hosts"
    checked = (
        f"collectives take {spread} of step time on {where} "
        f"(collective-bound at >= {late_units.COLLECTIVE_BOUND_PERCENT:g}%"
        f"{'' if single else ' on every host'})"
    )
    if not share.every_host_bound:
        return RuleOutcome([], checked)
    verdict = late_units.find_late(pod)
    if verdict.late:
        return RuleOutcome([], checked + f"; not reported: hosts wait for {verdict.late[0].name} (straggler)")
    impact = _impact(pod)
    checked += f"; exposed (not overlapped with compute) {impact.percent_of_step_time:g}% of step time"
    per_host = {h: round(float(p), 1) for h, p in zip(share.hosts, share.percent, strict=True)}
    collective_ms = (pod.matrix("collective").mean(axis=1) / 1e9).round(3)
    exposed_ms = (pod.exposed_collective_matrix().mean(axis=1) / 1e9).round(3)
    metrics = {
        "lowest_percent_of_step_time": round(low, 1),
        "collective_percent_of_step_time": per_host,
        "collective_ms_per_step": dict(zip(share.hosts, collective_ms.tolist(), strict=True)),
        "exposed_collective_ms_per_step": dict(zip(share.hosts, exposed_ms.tolist(), strict=True)),
        "hosts": len(share.hosts),
        "steps": pod.step_count,
        "threshold_percent": late_units.COLLECTIVE_BOUND_PERCENT,
    }
    xprof = (
        f"(XProf calls a program collective-bound from {late_units.COLLECTIVE_BOUND_PERCENT:g}%). Of it, "
        f"{format_percent(impact.percent_of_step_time or 0.0)} of step time "
        f"({impact.ms_per_step:g} ms per step) runs while no compute overlaps it: that is what "
        "communication costs the step."
    )
    if single:
        title = f"Collective-bound: this rank spends {format_percent(low)} of step time in collectives"
        explanation = (
            f"Over {pod.step_count} steps, this rank spends {format_percent(low)} of its step time inside "
            "collectives "
            f"{xprof} The profile holds one rank, so whether another rank keeps it waiting cannot be told "
            "from it: open the run's other ranks together to see that."
        )
    else:
        spread = f"{low:.1f}-{format_percent(high)}"  # as format_percent rounds each end
        title = f"Collective-bound: every host spends {spread} of step time in collectives"
        explanation = (
            f"Over {pod.step_count} steps, every host spends between {format_percent(low)} and "
            f"{format_percent(high)} of its step time inside collectives {xprof} No host arrives "
            "consistently late, so the time goes to "
            "communication itself: the data exchanged, the interconnect, or collectives that do not overlap "
            "compute."
        )
    evidence = []
    for summary in pod.host_summaries:
        waits = sorted(summary.evidence.get("collective", []), key=lambda e: e["start_ps"] - e["end_ps"])
        evidence.extend(waits[:EVIDENCE_PER_HOST])
    severity = IMPACT_THRESHOLDS.severity(impact)
    finding = Finding(
        RULE_ID, severity, title, explanation, metrics, evidence, ctx.advice_for(ADVICE), impact
    )
    return RuleOutcome([finding], checked)


def _impact(pod: PodAnalysis) -> Impact:
    """Collective time no compute overlapped, over the step time, averaged over the hosts."""
    step = pod.matrix("step").sum(axis=1)
    exposed = pod.exposed_collective_matrix().sum(axis=1)
    share = float(np.mean(np.where(step > 0, 100.0 * exposed / np.maximum(step, 1), 0.0)))
    per_step = float(exposed.mean()) / max(pod.step_count, 1)
    over = " (mean over hosts)" if len(pod.hosts) > 1 else ""
    return Impact(
        f"collective time not overlapped with compute, inside the steps{over}", round(share, 2), ms(per_step)
    )
