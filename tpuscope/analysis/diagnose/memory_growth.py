"""Rule `memory_growth`: memory in use rises step over step (a leak, or a cache that keeps growing).

Each step of a healthy loop frees what it allocated, so the least memory in use during a step
(its floor) stays flat; when a loop keeps every step's output alive (a Python list of results, a
cache keyed by shape), the floor climbs by about the same amount each step and the run ends out
of memory. Steps come from the profile (analysis.steps); the allocator's events give the floor.
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.diagnose.finding import Finding, Impact, ImpactThresholds, RuleOutcome
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.facts.evidence import range_evidence
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW
from tpuscope.analysis.memory.report import MEMORY_REPORT
from tpuscope.model.units import format_bytes

RULE_ID = "memory_growth"
# At least this many steps with allocator events: fewer cannot tell a trend from warm-up. Our heuristic.
MIN_STEPS = 4
# The floor must rise from one step to the next in at least this share of the steps. Our heuristic.
MIN_RISING_SHARE = 0.75
# ... by at least this much over the profile, and by this share of the first step's floor. Our heuristic.
MIN_GROWTH_BYTES = 16 << 20
MIN_GROWTH_SHARE = 0.05
# A leak warns when what it kept over the profile is this share of the allocator's capacity (at that
# rate a run a hundred times the profile's length fills the device), critical from the next. Our heuristic.
IMPACT_THRESHOLDS = ImpactThresholds(
    1.0, 10.0, "our heuristic: growth over the profile at 1% / 10% of capacity"
)

ADVICE = {
    JAX: [
        "Do not keep every step's outputs: log scalars with float(x) every N steps instead of appending "
        "jax.Arrays to a list, and drop references to old states.",
        "A growing jit cache (a new shape each step) also grows memory: see the recompilation finding.",
    ],
    PYTORCH_XLA: [
        "Do not keep tensors from every step (loss history as tensors); call .item() every N steps."
    ],
    TENSORFLOW: ["Do not keep tensors from every step; avoid Python-side caches of tf.Tensors in the loop."],
    "": ["Find what keeps each step's buffers alive (lists of results, caches) and release it."],
}


def run(ctx: Context) -> RuleOutcome:
    report = ctx.get(MEMORY_REPORT)
    if not report.allocators:
        return RuleOutcome([], "no allocator events in this profile")
    p0, p1 = ctx.periods
    if len(p0) < MIN_STEPS:
        return RuleOutcome([], f"{len(p0)} steps, fewer than {MIN_STEPS}: no trend to read")
    findings = []
    summaries = []
    for allocator in report.allocators:
        floors = _step_floors(allocator.time_ps, allocator.in_use, p0, p1)
        steps_known = np.flatnonzero(floors >= 0)
        known = floors[steps_known]
        if len(known) < MIN_STEPS:
            continue
        rises = np.diff(known)
        rising_share = float((rises > 0).mean())
        growth = int(known[-1] - known[0])
        summaries.append(f"{allocator.id}: {format_bytes(growth)} over {len(known)} steps")
        if (
            rising_share >= MIN_RISING_SHARE
            and growth >= MIN_GROWTH_BYTES
            and growth >= MIN_GROWTH_SHARE * max(int(known[0]), 1)
        ):
            findings.append(
                _finding(allocator, known, growth, rising_share, p0[steps_known], p1[steps_known], ctx)
            )
    checked = "step floors of memory in use: " + (
        "; ".join(summaries) or "no allocator has events in the steps"
    )
    return RuleOutcome(findings, checked + f" (finding at {format_bytes(MIN_GROWTH_BYTES)} and rising steps)")


def _step_floors(time_ps: np.ndarray, in_use: np.ndarray, p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
    """The least memory in use during each step (-1: no allocator event in the step)."""
    first = np.searchsorted(time_ps, p0, side="left")
    last = np.searchsorted(time_ps, p1, side="left")
    floors = np.full(len(p0), -1, np.int64)
    for k in np.flatnonzero(last > first).tolist():  # one slice per step, not per event
        floors[k] = int(in_use[first[k] : last[k]].min())
    return floors


def _finding(allocator, floors, growth, rising_share, p0, p1, ctx: Context) -> Finding:
    per_step = growth / max(len(floors) - 1, 1)
    title = f"Memory in use grows every step on allocator {allocator.id} (+{format_bytes(per_step)} per step)"
    explanation = (
        f"The least memory in use during each step rose from {format_bytes(int(floors[0]))} to "
        f"{format_bytes(int(floors[-1]))} over {len(floors)} steps ({100 * rising_share:.0f}% of the steps "
        f"rose): about {format_bytes(per_step)} stays alive after every step. At this rate the allocator's "
        f"{format_bytes(allocator.capacity_bytes)} last about "
        f"{max(int((allocator.capacity_bytes - int(floors[-1])) / max(per_step, 1)), 0):,} more steps."
    )
    evidence = [
        range_evidence(f"step {k}: floor {format_bytes(int(f))}", int(p0[k]), int(p1[k]), allocator.host)
        for k, f in list(enumerate(floors))[-5:]
    ]
    metrics = {
        "allocator": allocator.id,
        "first_floor_bytes": int(floors[0]),
        "last_floor_bytes": int(floors[-1]),
        "growth_bytes": growth,
        "growth_per_step_bytes": int(per_step),
        "steps": int(len(floors)),
        "rising_percent": round(100 * rising_share, 1),
    }
    capacity = int(allocator.capacity_bytes or 0)
    impact = Impact(
        "memory kept alive over the profile's steps, against the allocator's capacity",
        bytes=int(growth),
        percent_of_capacity=round(100 * growth / capacity, 2) if capacity else None,
    )
    severity = IMPACT_THRESHOLDS.severity(impact)
    return Finding(RULE_ID, severity, title, explanation, metrics, evidence, ctx.advice_for(ADVICE), impact)
