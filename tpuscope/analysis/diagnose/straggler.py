"""Rule `straggler`: one host (or device) arrives late at the collectives and the others wait for it.

The late host is the one whose wait in collectives (collective time no compute overlapped) is short
while the others' is long, step after step (`tpuscope.analysis.pod.late` says how it is scored).
The finding names it, says how long
the others wait for it per step and in total, and what it did instead: loading data, other host
work, compiling, or computing longer on a slower device, with its events as evidence and its
latest step first, to jump to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tpuscope.analysis.diagnose.finding import STEP_TIME_BANDS, Finding, Impact, RuleOutcome, ms
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW
from tpuscope.analysis.pod import late as late_units
from tpuscope.analysis.pod.results import POD

if TYPE_CHECKING:
    from tpuscope.analysis.pod.analysis import PodAnalysis

RULE_ID = "straggler"
# Evidence items per kind: the late host's own events of what it did instead, and the others' waits.
CAUSE_EVIDENCE = 30
WAIT_EVIDENCE_PER_HOST = 5
IMPACT_THRESHOLDS = STEP_TIME_BANDS

ADVICE = {
    JAX: [
        "Look at the late host's timeline in its slowest step (the first evidence item): whatever it does "
        "that the others do not is what every host waits for.",
        "Data loading: give every host the same loader work and prefetch (e.g. Grain with worker processes, "
        "or a background thread with jax.device_put), so no host starts a step late.",
        "Host work: move logging, checkpointing and metric computation off the step, or do it on every "
        "host alike; check the late VM for other processes.",
        "A slower device: check the late host's program and shapes (uneven shards, a different batch).",
    ],
    PYTORCH_XLA: [
        "Look at the late host's timeline in its slowest step (the first evidence item).",
        "Data loading: use torch_xla's MpDeviceLoader and the same num_workers on every host.",
        "Host work: move logging and .item() calls off the step or do them on every host alike.",
    ],
    TENSORFLOW: [
        "Look at the late host's timeline in its slowest step (the first evidence item).",
        "Data loading: use tf.data with prefetch and the same sharding on every host.",
    ],
    "": [
        "Find what the late host does that the others do not (data loading, logging, uneven shards).",
    ],
}


def run(ctx: Context) -> RuleOutcome:
    pod = ctx.get(POD)
    verdict = late_units.find_late(pod)
    findings = [_finding(ctx, pod, verdict.units, unit) for unit in verdict.late]
    return RuleOutcome(findings, verdict.checked)


def _finding(ctx: Context, pod: PodAnalysis, units, unit: late_units.LateUnit) -> Finding:
    kind = unit.kind
    others = len(units.names) - 1
    step_ms = ms(float(units.step_ps[unit.row].mean()))
    share = 100.0 * unit.wait_per_step_ps / max(float(units.step_ps.mean()), 1.0)
    worst_number = int(pod.step_number[unit.worst_step])
    mine = ms(unit.collective_per_step_ps[unit.name])
    theirs = ms(sorted(v for n, v in unit.collective_per_step_ps.items() if n != unit.name)[others // 2])
    if unit.cause:
        instead = (
            f"Meanwhile {unit.name} was {late_units.CAUSE_WORDS[unit.cause]}: "
            f"{ms(unit.cause_extra_ps)} ms more per step than the other {kind}s."
        )
    else:
        instead = (
            f"No part of {unit.name}'s step (input, host work, compilation, compute) is longer "
            "than the others'."
        )
    explanation = (
        f"In {unit.late_steps} of {unit.steps} steps (aligned by {pod.alignment}), {unit.name} waits "
        f"the least in collectives ({mine} ms per step, median, not overlapped by compute) while the other "
        f"{others} {kind}s wait {theirs} ms there: they enter the collective first and wait for {unit.name} "
        "to arrive. "
        f"They wait {ms(unit.wait_per_step_ps)} ms per step for it ({share:.0f}% of a {step_ms} ms step), "
        f"{ms(unit.wait_total_ps)} ms over the profile per {kind} "
        f"({ms(unit.wait_all_units_ps)} ms of {kind} time in all). {instead} Its collective time is an "
        f"outlier among the {kind}s (modified z-score {unit.z_score:.1f}; XProf flags below "
        f"-{late_units.MODIFIED_Z_OUTLIER:g})."
    )
    metrics: dict[str, Any] = {
        "straggler": unit.name,
        "unit": kind,
        "host": unit.host,
        "wait_per_step_ms": ms(unit.wait_per_step_ps),
        "wait_percent_of_step_time": round(share, 1),
        "wait_total_ms_per_waiting_unit": ms(unit.wait_total_ps),
        "wait_total_ms_all_units": ms(unit.wait_all_units_ps),
        "late_steps": unit.late_steps,
        "steps": unit.steps,
        "aligned_by": pod.alignment,
        "slowest_step": worst_number,
        "doing_instead": unit.cause or None,
        "extra_ms_per_step": {p: ms(v) for p, v in unit.extra_per_step_ps.items()},
        "collective_ms_per_step": {n: ms(v) for n, v in unit.collective_per_step_ps.items()},
        "modified_z_score": round(unit.z_score, 2),
    }
    title = f"Straggler: the other {kind}s wait {ms(unit.wait_per_step_ps)} ms per step for {unit.name}" + (
        f", which is {_short_cause(unit.cause)}" if unit.cause else ""
    )
    impact = Impact(
        f"the other {kind}s' wait per step for {unit.name} at the collectives",
        round(share, 2),
        ms(unit.wait_per_step_ps),
    )
    severity = IMPACT_THRESHOLDS.severity(impact)
    return Finding(
        RULE_ID, severity, title, explanation, metrics, _evidence(pod, unit), ctx.advice_for(ADVICE), impact
    )


def _short_cause(cause: str) -> str:
    return {
        "input": "loading data",
        "host": "busy on the host",
        "compile": "compiling",
        "compute": "computing longer",
    }[cause]


def _evidence(pod: PodAnalysis, unit: late_units.LateUnit) -> list[dict[str, Any]]:
    """Its slowest step first (what a click jumps to), then what it did instead, then the others' waits."""
    summaries = {s.host: s for s in pod.host_summaries}
    late = summaries[unit.host]
    row = pod.hosts.index(unit.host)
    position = int(pod.positions[row, unit.worst_step])
    number = int(pod.step_number[unit.worst_step])
    slowest = late.step_evidence(
        position,
        f"{unit.name}, step {number}: the others wait {ms(unit.lateness_ps[unit.worst_step])} ms for it",
    )
    items = [dict(slowest, focus=True)]  # where a view jumps first when the finding is opened
    if unit.cause == "host" and not late.evidence.get("host"):  # no event to show: its busiest steps
        host_ps = late.part("host")[pod.positions[row]]
        for k in host_ps.argsort()[::-1][:CAUSE_EVIDENCE]:
            label = f"{unit.name}, step {int(pod.step_number[k])}: {ms(host_ps[k])} ms of host work"
            items.append(late.step_evidence(int(pod.positions[row, k]), label))
    elif unit.cause:
        cause_items = late.evidence.get(unit.cause, [])
        if unit.kind == "device":
            cause_items = [e for e in cause_items if unit.name.endswith(str(e.get("plane", "")))]
        items.extend(cause_items[:CAUSE_EVIDENCE])
    for summary in pod.host_summaries:
        if summary.host == unit.host:
            continue
        waits = sorted(summary.evidence.get("collective", []), key=lambda e: e["start_ps"] - e["end_ps"])
        items.extend(
            dict(e, label=f"{summary.host} waiting: {e['label']}") for e in waits[:WAIT_EVIDENCE_PER_HOST]
        )
    return items
