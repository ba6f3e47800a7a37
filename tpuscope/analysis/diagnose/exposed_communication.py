"""Rule `exposed_communication`: collectives that no compute hides cost the steps their whole time.

Communication that runs while the same device computes costs nothing; the part that runs alone (the
device waits for the data) is the step's cost. This rule weighs that exposed part (the pod table's
`exposed_collective_ps`, read through `CommsReport` as `tpuscope comms` shows it) against step time,
names the collective ops that expose the most, with their bytes and bus bandwidth, and says how to
overlap them in the framework that wrote the profile. Overlapped communication is never reported.

On CPU devices it stays silent (XLA:CPU's collectives block, and wait for whichever process the
machine delays). It leaves the time to the rules that explain it better: when the hosts wait for one late host
(`straggler`) or every host spends XProf's collective-bound share in collectives (`collective_bound`,
whose impact is this same exposed time), it stays silent and says so.
"""

from __future__ import annotations

from typing import Any

from tpuscope.analysis.diagnose.finding import (
    STEP_TIME_BANDS,
    Finding,
    Impact,
    ImpactThresholds,
    RuleOutcome,
    ms,
)
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.framework import JAX, PYTORCH, PYTORCH_XLA, TENSORFLOW
from tpuscope.analysis.pod import late as late_units
from tpuscope.analysis.pod.comms_report import CommsReport
from tpuscope.analysis.pod.results import POD

RULE_ID = "exposed_communication"
# Exposed communication is reported from 10% of step time: XProf flags time the TensorCore waits at
# multi-host barriers from 10% of step time (openxla/xprof, xprof/convert/smart_suggestion/
# barrier_cores_rule.h, kSpecialOpBoundThresholdInPercent), the same wait `late` holds the others to.
EXPOSED_PERCENT = late_units.WAIT_PERCENT_OF_STEP
IMPACT_THRESHOLDS = ImpactThresholds(
    EXPOSED_PERCENT,
    STEP_TIME_BANDS.critical,
    "XProf's multi-host wait level (10% of step time), critical from 20% (our heuristic)",
)
# On CPUs the level is not applied: XLA:CPU runs each collective as one blocking thunk (over gloo or
# MPI), which waits for whichever process the machine's other load delays; the level is XProf's, for
# accelerators.
CPU_NOTE = "the devices are CPUs, whose blocking collectives wait for whichever process the machine delays"
TOP_OPS = 5  # collective ops named in the finding, most exposed first
EVIDENCE_PER_HOST = 10

ADVICE = {
    JAX: [
        "Let XLA overlap collectives with compute. On TPU (flags in LIBTPU_INIT_ARGS): "
        "--xla_tpu_enable_latency_hiding_scheduler=true, --xla_tpu_enable_async_collective_fusion=true "
        "with ..._fuse_all_gather=true and ..._multiple_steps=true, and "
        "--xla_tpu_overlap_compute_collective_tc=true (the flag sets of MaxText's "
        "benchmarks/xla_flags_library.py, https://github.com/AI-Hypercomputer/maxtext, and XLA's flag "
        "guidance, https://github.com/openxla/xla/blob/main/docs/flags_guidance.md). On GPU (XLA_FLAGS): "
        "--xla_gpu_enable_latency_hiding_scheduler=true "
        "(https://docs.jax.dev/en/latest/gpu_performance_tips.html).",
        "Give the scheduler compute to hide the transfers behind: shard so that each layer's all-gather "
        "can run during the previous layer (FSDP-style), and keep per-step host round trips "
        "(process_allgather, blocking reads) out of the step.",
        "Send less: bfloat16 gradients, gradient accumulation over micro-batches before one all-reduce.",
    ],
    PYTORCH: [
        "DDP: gradients are all-reduced in buckets while backward runs; tune bucket_cap_mb (default "
        "25 MB) so the first buckets start early, and set gradient_as_bucket_view=True "
        "(https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html).",
        "With gradient accumulation, skip the all-reduce of all but the last micro-batch: "
        "with model.no_sync().",
        "FSDP: prefetch the next all-gather (backward_prefetch=BackwardPrefetch.BACKWARD_PRE, "
        "forward_prefetch=True) so it overlaps the current layer's compute "
        "(https://pytorch.org/docs/stable/fsdp.html).",
        "Collectives issued with async_op=True overlap only the work between the call and its "
        "wait(): wait as late as possible.",
    ],
    PYTORCH_XLA: [
        "Let XLA overlap collectives with compute (LIBTPU_INIT_ARGS: the latency-hiding scheduler, "
        "--xla_tpu_enable_latency_hiding_scheduler=true, and async collective fusion), and keep "
        "host-driven collectives (xm.mesh_reduce, rendezvous) out of the step.",
    ],
    TENSORFLOW: [
        "Overlap gradient all-reduces with the backward pass (packed or bucketed all-reduces) and send "
        "less (bfloat16 gradients, gradient accumulation).",
    ],
    "": [
        "Overlap collectives with compute (async collectives, a latency-hiding scheduler, gradient "
        "buckets) or send less per step.",
    ],
}


def run(ctx: Context) -> RuleOutcome:
    pod = ctx.get(POD)
    report = CommsReport.of(pod)
    share = report.exposed_percent_of_step_time
    if not report.hosts or share is None:
        return RuleOutcome([], "no steps on any host: nothing to measure")
    if report.communication_total_ps <= 0:
        return RuleOutcome([], "no collectives inside the steps")
    overlap = report.overlap_percent or 0.0
    checked = (
        f"exposed communication {share:g}% of step time ({overlap:g}% of communication time overlapped "
        f"with compute; reported from {EXPOSED_PERCENT:g}%)"
    )
    if share < EXPOSED_PERCENT:
        return RuleOutcome([], checked)
    if all(s.device_kind in ("CPU", "") for s in pod.host_summaries):
        return RuleOutcome([], checked + f"; not reported: {CPU_NOTE}")
    verdict = late_units.find_late(pod)
    if verdict.late:
        return RuleOutcome([], checked + f"; not reported: hosts wait for {verdict.late[0].name} (straggler)")
    if late_units.collective_share(pod).every_host_bound:
        return RuleOutcome([], checked + "; not reported: every host is collective-bound (collective_bound)")
    return RuleOutcome([_finding(ctx, pod, report, share, overlap)], checked)


def _finding(ctx: Context, pod, report: CommsReport, share: float, overlap: float) -> Finding:
    steps = len(report.steps)
    hosts = len(report.hosts)
    per_step = report.exposed_total_ps / max(hosts, 1) / max(steps, 1)
    top = [r for r in report.rows if r.exposed_ps > 0][:TOP_OPS]
    named = "; ".join(_op_words(r.to_json()) for r in top)
    where = "this host" if hosts == 1 else f"the {hosts} hosts (mean)"
    title = f"Exposed communication: {share:.0f}% of step time in collectives no compute overlaps"
    explanation = (
        f"Over {steps} steps, {where} spent {share:g}% of step time ({ms(per_step)} ms per step) inside "
        f"collectives while the device ran nothing else: only {overlap:g}% of communication time overlapped "
        f"compute. That time is what communication costs the step; hidden behind compute it would cost "
        f"nothing. Most exposed: {named or '-'}."
    )
    metrics: dict[str, Any] = {
        "exposed_percent_of_step_time": share,
        "exposed_ms_per_step": ms(per_step),
        "overlap_percent": overlap,
        "communication_ms_per_step": ms(report.communication_total_ps / max(hosts, 1) / max(steps, 1)),
        "threshold_percent": EXPOSED_PERCENT,
        "steps": steps,
        "hosts": hosts,
        "top_collectives": [
            {k: r.to_json()[k] for k in ("name", "kind", "count", "exposed_us", "bytes_per_op", "busbw_gbps")}
            for r in top
        ],
    }
    evidence = []
    for summary in pod.host_summaries:
        waits = sorted(summary.evidence.get("collective", []), key=lambda e: e["start_ps"] - e["end_ps"])
        evidence.extend(waits[:EVIDENCE_PER_HOST])
    over = " (mean over hosts)" if hosts > 1 else ""
    impact = Impact(f"collective time no compute of the same device overlapped, inside the steps{over}",
                    round(share, 2), ms(per_step))  # fmt: skip
    severity = IMPACT_THRESHOLDS.severity(impact)
    return Finding(RULE_ID, severity, title, explanation, metrics, evidence, ctx.advice_for(ADVICE), impact)


def _op_words(row: dict[str, Any]) -> str:
    size = f", {row['bytes_per_op']:,} bytes per op" if row["bytes_per_op"] else ""
    bus = f", bus bandwidth {row['busbw_gbps']:g} GB/s" if row["busbw_gbps"] is not None else ""
    exposed = f"{row['exposed_us'] / 1e3:,.2f} ms exposed"
    source = f" from {row['source']}" if row["source"] else ""
    return f"{row['name']}{source} ({row['kind']}, {row['count']}x, {exposed}{size}{bus})"
