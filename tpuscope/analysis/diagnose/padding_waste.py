"""Rule `padding_waste`: a program's peak is inflated by layout padding (TPU tiles).

TPU layouts store arrays in tiles, e.g. `f32[10,500]{1,0:T(8,128)}`: the two most minor
dimensions are rounded up to multiples of 8 and 128, so a `[10,500]` array takes the memory of a
`[16,512]` one. The Cloud TPU performance guide asks for such dimensions to be multiples of 128
(and of 8 for the second-minor one; cloud.google.com/tpu/docs/performance-guide), and XProf's
Memory Viewer points at padding as an "optimization opportunity" when it is a large fraction of
the allocation (openxla/xprof docs/memory_viewer.md). The finding names the shapes that waste
most and which dimension to round.
"""

from __future__ import annotations

import re

from tpuscope.analysis.diagnose.finding import Finding, Impact, ImpactThresholds, RuleOutcome
from tpuscope.analysis.diagnose.op_evidence import instruction_source, short_source
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.facts.evidence import event_evidence
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW
from tpuscope.analysis.memory.links import program_runs
from tpuscope.analysis.memory.programs import HBM_SPACE, PeakBuffer
from tpuscope.analysis.memory.report import MEMORY_REPORT
from tpuscope.model.units import format_bytes

RULE_ID = "padding_waste"
# Padding must be at least this share of the program's peak to be worth a finding; our heuristic.
MIN_PADDING_SHARE = 0.25
# ... and at least this many bytes: below it there is nothing worth reshaping for. Our heuristic.
MIN_PADDING_BYTES = 64 << 20
# Padding warns from this share of the device's memory, critical from the next: our heuristic (memory a
# program could give to a bigger batch; the same 5% / 20% bands the time costs use).
IMPACT_THRESHOLDS = ImpactThresholds(5.0, 20.0, "our heuristic: padding at 5% / 20% of device memory")
SHAPES_NAMED = 3
_SHAPE = re.compile(r"^\w+\[([\d,<=]*)\]\{([\d,]*)(?::(.*))?\}")
_FIRST_TILE = re.compile(r"T\(([\d,]+)\)")

ADVICE = {
    JAX: [
        "Pad or choose feature sizes that are multiples of 128 and batch-like minor dimensions that are "
        "multiples of 8 (16 for bf16), e.g. a hidden size of 512 instead of 500.",
        "Reorder dimensions so the largest one is last (minor): jnp.transpose / einsum output order.",
    ],
    PYTORCH_XLA: ["Choose tensor dimensions that are multiples of 128 (last) and 8 (second to last)."],
    TENSORFLOW: ["Choose tensor dimensions that are multiples of 128 (last) and 8 (second to last)."],
    "": ["Make the two most minor dimensions multiples of the tile (128 and 8 on TPU)."],
}


def run(ctx: Context) -> RuleOutcome:
    report = ctx.get(MEMORY_REPORT)
    programs = [p for p in report.programs if p.memory_space == HBM_SPACE and p.peak_heap_bytes > 0]
    if not programs:
        return RuleOutcome([], "no program memory in this profile")
    findings = []
    worst_share, worst_name = 0.0, ""
    for program in programs:
        share = program.padding_bytes / program.peak_heap_bytes
        if share > worst_share:
            worst_share, worst_name = share, program.name
        if share >= MIN_PADDING_SHARE and program.padding_bytes >= MIN_PADDING_BYTES:
            findings.append(_finding(ctx, program, share))
    checked = (
        f"padding in the peaks of {len(programs)} programs; most {100 * worst_share:.1f}%"
        + (f" ({worst_name})" if worst_name else "")
        + f", finding at {100 * MIN_PADDING_SHARE:g}% and {format_bytes(MIN_PADDING_BYTES)}"
    )
    return RuleOutcome(findings, checked)


def round_up_hint(shape: str) -> str:
    """Which dimensions of a tiled shape to round: `dimension 1 (500) to a multiple of 128`."""
    match = _SHAPE.match(shape)
    if not match or not match.group(3):
        return ""
    tile = _FIRST_TILE.search(match.group(3))
    if not tile:
        return ""
    dims = [int(d.removeprefix("<=")) for d in match.group(1).split(",") if d]
    minor_to_major = [int(d) for d in match.group(2).split(",") if d]
    tile_dims = [int(t) for t in tile.group(1).split(",")]
    hints = []
    for size, dimension in zip(reversed(tile_dims), minor_to_major, strict=False):
        if 0 <= dimension < len(dims) and dims[dimension] % size:
            hints.append(f"dimension {dimension} ({dims[dimension]}) to a multiple of {size}")
    return ", ".join(reversed(hints))


def _finding(ctx: Context, program, share: float) -> Finding:
    wasteful: list[PeakBuffer] = sorted(program.buffers_at_peak, key=lambda b: -(b.bytes - b.unpadded_bytes))
    wasteful = [b for b in wasteful if b.bytes > b.unpadded_bytes][:SHAPES_NAMED]
    parts = []
    sources = [instruction_source(ctx, program.program_id, b.defined_by) for b in wasteful]
    for buffer, source in zip(wasteful, sources, strict=True):
        hint = round_up_hint(buffer.shape)
        made_at = f", from {short_source(source)}" if source else ""
        parts.append(
            f"{buffer.shape} ({buffer.name}{made_at}): {format_bytes(buffer.bytes)} for "
            f"{format_bytes(buffer.unpadded_bytes)} of data" + (f"; round {hint}" if hint else "")
        )
    title = f"{program.name}: {100 * share:.0f}% of its peak memory is layout padding"
    explanation = (
        f"At its peak {program.name} holds {format_bytes(program.peak_heap_bytes)}, of which "
        f"{format_bytes(program.padding_bytes)} is padding from tiled layouts (unpadded "
        f"{format_bytes(program.peak_unpadded_heap_bytes)}). Most padded: " + "; ".join(parts) + "."
    )
    evidence = []
    for track, rows in program_runs(ctx.trace, program.name):
        evidence += [event_evidence(f"run of {program.name}", track, int(i)) for i in rows[:5]]
    metrics = {
        "program": program.name,
        "peak_heap_bytes": program.peak_heap_bytes,
        "peak_unpadded_heap_bytes": program.peak_unpadded_heap_bytes,
        "padding_bytes": program.padding_bytes,
        "padding_percent": round(100 * share, 2),
        "shapes": [
            {"shape": b.shape, "bytes": b.bytes, "unpadded_bytes": b.unpadded_bytes, "source": s}
            for b, s in zip(wasteful, sources, strict=True)
        ],
    }
    capacity = program.capacity_bytes or 0
    impact = Impact(
        "layout padding in the program's peak memory, against the device's capacity",
        bytes=int(program.padding_bytes),
        percent_of_capacity=round(100 * program.padding_bytes / capacity, 2) if capacity else None,
    )
    finding = Finding(
        RULE_ID, IMPACT_THRESHOLDS.severity(impact), title, explanation, metrics, evidence[:5],
        ctx.advice_for(ADVICE), impact,
    )  # fmt: skip
    if not capacity:
        finding.impact_note = (
            "the device's memory capacity is not in the profile, so the padding's share of it is unknown"
        )
    return finding
