"""Rule `memory_pressure`: a program's planned peak, or an allocator's peak, is close to the chip's memory.

Close to capacity, the next larger batch or sequence fails with an out-of-memory error (XLA's
"RESOURCE_EXHAUSTED: ... while trying to allocate"), and the allocator has no room left to
defragment. The finding names the biggest buffers at the peak, since they are what to shrink.
"""

from __future__ import annotations

from tpuscope.analysis.diagnose.finding import Finding, Impact, ImpactThresholds, RuleOutcome
from tpuscope.analysis.diagnose.op_evidence import instruction_source, lines_words
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.facts.evidence import event_evidence, range_evidence
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW
from tpuscope.analysis.memory.links import program_runs
from tpuscope.analysis.memory.programs import HBM_SPACE
from tpuscope.analysis.memory.report import MEMORY_REPORT, is_device_allocator
from tpuscope.model.units import format_bytes

RULE_ID = "memory_pressure"
# A peak at or above this share of the device's memory warns; our heuristic (an allocator needs
# headroom for fragmentation, and XLA's own default preallocation on GPU stops at 75%:
# jax.readthedocs.io/en/latest/gpu_memory_allocation.html, XLA_PYTHON_CLIENT_MEM_FRACTION).
WARNING_SHARE = 0.90
# At or above this share it is critical: a few percent more and the program does not fit. Our heuristic.
CRITICAL_SHARE = 0.97
IMPACT_THRESHOLDS = ImpactThresholds(
    100 * WARNING_SHARE,
    100 * CRITICAL_SHARE,
    "our heuristic: headroom an allocator needs (90% / 97% of capacity)",
)
BUFFERS_NAMED = 3
EVIDENCE_RUNS = 5

ADVICE = {
    JAX: [
        "Shrink the biggest buffers at the peak: a smaller per-device batch, or jax.checkpoint "
        "(rematerialization) around the layers whose activations dominate.",
        "Donate inputs that are overwritten (jax.jit(..., donate_argnums=...)) so outputs reuse "
        "their memory.",
        "Shard the largest arrays over more devices (jax.sharding) or keep optimizer state in bf16.",
    ],
    PYTORCH_XLA: [
        "Use a smaller batch, or torch_xla's gradient checkpointing around the largest layers.",
        "Shard parameters and optimizer state (FSDP via torch_xla.distributed.fsdp).",
    ],
    TENSORFLOW: [
        "Use a smaller batch, or tf.recompute_grad around the largest layers.",
        "Enable mixed precision (tf.keras.mixed_precision) to halve activation memory.",
    ],
    "": [
        "Shrink the largest buffers at the peak (batch size, rematerialization, sharding, lower precision)."
    ],
}


def run(ctx: Context) -> RuleOutcome:
    report = ctx.get(MEMORY_REPORT)
    findings: list[Finding] = []
    worst = 0.0
    programs = [p for p in report.programs if p.memory_space == HBM_SPACE and p.capacity_bytes]
    for program in programs:
        share = program.peak_heap_bytes / (program.capacity_bytes or 1)
        worst = max(worst, share)
        if share >= WARNING_SHARE:
            findings.append(_program_finding(ctx, program, share))
    allocators = [a for a in report.allocators if is_device_allocator(a.id) and a.capacity_bytes > 0]
    for allocator in allocators:
        share = allocator.peak_bytes_in_use / allocator.capacity_bytes
        worst = max(worst, share)
        if share >= WARNING_SHARE:
            findings.append(_allocator_finding(ctx, allocator, share))
    if not programs and not allocators:
        return RuleOutcome([], "no program or device allocator with a known memory capacity")
    checked = (
        f"{len(programs)} program peaks and {len(allocators)} device allocator peaks against capacity; "
        f"highest {100 * worst:.1f}%, warning at {100 * WARNING_SHARE:g}%"
    )
    return RuleOutcome(findings, checked)


def _impact(peak_bytes: int, share: float) -> Impact:
    return Impact("memory in use at the peak against the device's capacity", bytes=int(peak_bytes),
                  percent_of_capacity=round(100 * share, 2))  # fmt: skip


def _program_finding(ctx: Context, program, share: float) -> Finding:
    biggest = program.buffers_largest_first()[:BUFFERS_NAMED]
    named = "; ".join(f"{format_bytes(b.bytes)} {b.shape} ({b.name}, {b.category.lower()})" for b in biggest)
    sources = [instruction_source(ctx, program.program_id, b.defined_by) for b in biggest]
    title = f"{program.name} needs {100 * share:.1f}% of device memory at its peak"
    explanation = (
        f"XLA planned a peak of {format_bytes(program.peak_heap_bytes)} for {program.name} "
        f"({program.memory_space_name}), {100 * share:.1f}% of the {format_bytes(program.capacity_bytes)} "
        f"available per device. The biggest buffers live at the peak: {named}{lines_words(sources)}."
    )
    evidence = []
    for track, rows in program_runs(ctx.trace, program.name):
        evidence += [event_evidence(f"run of {program.name}", track, int(i)) for i in rows[:EVIDENCE_RUNS]]
    metrics = {
        "program": program.name,
        "peak_heap_bytes": program.peak_heap_bytes,
        "capacity_bytes": program.capacity_bytes,
        "share_percent": round(100 * share, 2),
        "biggest_buffers": [dict(b.to_json(), source=s) for b, s in zip(biggest, sources, strict=True)],
    }
    impact = _impact(program.peak_heap_bytes, share)
    return Finding(RULE_ID, IMPACT_THRESHOLDS.severity(impact), title, explanation, metrics,
                   evidence[:EVIDENCE_RUNS], ctx.advice_for(ADVICE), impact)  # fmt: skip


def _allocator_finding(ctx: Context, allocator, share: float) -> Finding:
    live = allocator.live_at_peak[:BUFFERS_NAMED]
    named = "; ".join(f"{format_bytes(a.bytes)} {a.shape or ''} {a.op or ''}".strip() for a in live)
    title = f"Allocator {allocator.id} peaked at {100 * share:.1f}% of its memory"
    explanation = (
        f"Allocator {allocator.id} ({allocator.host}) reached "
        f"{format_bytes(allocator.peak_bytes_in_use)} in use, "
        f"{100 * share:.1f}% of its {format_bytes(allocator.capacity_bytes)}."
    )
    if named:
        explanation += f" Largest allocations live at the profile's peak: {named}."
    evidence = [range_evidence(f"peak of allocator {allocator.id}", allocator.peak_time_ps,
                               allocator.peak_time_ps + 1, allocator.host)]  # fmt: skip
    metrics = {
        "allocator": allocator.id,
        "peak_bytes_in_use": allocator.peak_bytes_in_use,
        "capacity_bytes": allocator.capacity_bytes,
        "share_percent": round(100 * share, 2),
    }
    impact = _impact(allocator.peak_bytes_in_use, share)
    return Finding(RULE_ID, IMPACT_THRESHOLDS.severity(impact), title, explanation, metrics, evidence,
                   ctx.advice_for(ADVICE), impact)  # fmt: skip
