"""Rule `low_device_utilization`: the devices spend most of the steady state doing nothing.

Duty cycle is XProf's: busy time (union of device ops) over the window (openxla/xprof
`xprof/convert/op_stats_to_overview_page.cc`, `device_duty_cycle_percent`). The window is the
steady state: from the second step on (the first step compiles), through the last device op, minus time spent
compiling (reported by `recompilation`). When most ops are tiny, the device is
launch-bound: it finishes each op faster than the host can issue the next.
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis import device_ops
from tpuscope.analysis.diagnose.finding import (
    NO_STEPS_NOTE,
    Finding,
    Impact,
    ImpactThresholds,
    RuleOutcome,
    Severity,
    ms,
    percent,
)
from tpuscope.analysis.diagnose.rule_results import STEADY_STATE_DUTY
from tpuscope.analysis.facts.context import Context, intervals_of
from tpuscope.analysis.facts.evidence import largest_first
from tpuscope.analysis.facts.evidence import range_evidence as range_ev
from tpuscope.analysis.facts.intervals import (
    Intervals,
    difference,
    empty,
    merge_intervals,
    total,
    window_total,
)
from tpuscope.analysis.framework import JAX, PYTORCH, PYTORCH_XLA, TENSORFLOW
from tpuscope.analysis.metrics.format import format_fraction
from tpuscope.model import order_statistics
from tpuscope.model.records import record

RULE_ID = "low_device_utilization"
# xprof check_host_boundness (xprof 2.24.2 xprof/cli/tools/check_host_boundness_tool.py): a duty cycle
# above 50 % means "not host-bound". Below it the devices idle more than work.
LOW_DUTY_CYCLE_PERCENT = 50.0
# The impact is the busiest device's idle share of the steady state: a warning from XProf's 50% (the duty
# cycle's complement), critical from 80% idle (a duty cycle under 20%; our heuristic).
IMPACT_THRESHOLDS = ImpactThresholds(
    100 - LOW_DUTY_CYCLE_PERCENT,
    80.0,
    "XProf's host-boundness level (duty cycle 50%), critical from 80% idle",
)
# Ops shorter than this are "tiny": about the cost of issuing one (HTA flags GPU kernels that run shorter
# than their CPU launch: facebookresearch/HolisticTraceAnalysis). Suggested heuristic.
TINY_OP_PS = 10_000_000  # 10 us
# Launch-bound when at least this share of ops is tiny. Suggested heuristic.
TINY_OP_SHARE = 0.5
MIN_STEPS_FOR_STEADY_STATE = 3
# XLA:CPU "devices" are the host's own cores: their idle time is host work (including the profiler's
# Python tracer), not an accelerator waiting, so a low duty cycle there is reported as info.
HOST_DEVICE_KIND = "CPU"

ADVICE = {
    JAX: [
        "Put the whole step under one jax.jit (including the optimizer update) so the device gets one "
        "program per step instead of many small ones.",
        "Increase the per-device batch size, or run several steps per call with jax.lax.scan / fori_loop.",
        "Check the input_bound and host_device_sync findings: they are the usual reason the device waits.",
    ],
    PYTORCH_XLA: [
        "Make sure one torch_xla.sync() (or torch_xla.compile) covers the whole step, "
        "so it runs as one graph.",
        "Increase the batch size; avoid host syncs inside the step.",
    ],
    TENSORFLOW: [
        "Wrap the step in tf.function(jit_compile=True) and run several steps per call "
        "(steps_per_execution in Keras compile()).",
    ],
    PYTORCH: [
        "Give the GPU bigger units of work: larger batches, torch.compile to fuse small kernels, CUDA graphs "
        "(torch.cuda.graphs or mode='reduce-overhead') to cut per-kernel launch cost.",
    ],
    "": ["Give the device bigger units of work: larger batches, fused steps, fewer host round trips."],
}


@record(frozen=True)
class SteadyStateDuty:
    """Each device's busy time over the steady state (`_window`): what this rule and the
    `steady_state_duty_cycle` metric (`tpuscope.analysis.metrics`) both read."""

    window: Intervals
    window_ps: int
    skipped: int  # steps left out for compiling
    busy_ps: tuple[int, ...]  # per device of the context, busy inside the window
    reason: str = ""  # why there is no duty cycle

    @property
    def busiest_fraction(self) -> float | None:
        """The busiest device's share of the window it ran ops (0..1), None without a window."""
        return max(self.busy_ps) / self.window_ps if self.window_ps > 0 and self.busy_ps else None


def steady_state_duty(ctx: Context) -> SteadyStateDuty:
    if not ctx.devices:
        return SteadyStateDuty(empty(), 0, 0, (), "no device activity in the profile")
    window, skipped = _window(ctx)
    window_ps = total(window)
    if window_ps <= 0:
        reason = "no steady-state window (no device op outside warm-up and compilation)"
        return SteadyStateDuty(window, 0, skipped, (), reason)
    # The window's pieces are disjoint: a device's busy time in each, added up, is its busy time in the
    # window (without building the intersection of a million ops' intervals with thousands of steps).
    busy = tuple(int(device_ops.busy_coverage(d)(*window).sum()) for d in ctx.devices)
    return SteadyStateDuty(window, window_ps, skipped, busy)


def run(ctx: Context) -> RuleOutcome:
    if not ctx.devices:
        return RuleOutcome([], "no device activity in the profile")
    steady = ctx.get(STEADY_STATE_DUTY)
    window, skipped, window_ps = steady.window, steady.skipped, steady.window_ps
    if window_ps <= 0:
        return RuleOutcome([], steady.reason)
    per_device = list(zip(ctx.devices, steady.busy_ps, strict=True))
    duty = np.array([percent(b, window_ps) for _, b in per_device])
    best = float(duty.max())
    shown = format_fraction(steady.busiest_fraction or 0.0)
    checked = (
        f"busiest device's duty cycle {shown} over the steady state ({ms(window_ps)} ms), "
        f"{'below' if best < LOW_DUTY_CYCLE_PERCENT else 'at or above'} {LOW_DUTY_CYCLE_PERCENT:g}%"
    )
    if best >= LOW_DUTY_CYCLE_PERCENT:
        return RuleOutcome([], checked)
    durations = np.concatenate([t.duration_ps[idx] for d in ctx.devices for t, idx in d.events])
    tiny_share = float((durations < TINY_OP_PS).mean()) if len(durations) else 0.0
    launch_bound = tiny_share >= TINY_OP_SHARE
    metrics = {
        "duty_cycle_percent": {d.label: float(v) for (d, _), v in zip(per_device, duty, strict=True)},
        "max_duty_cycle_percent": best,
        "window_ms": ms(window_ps),
        "steps_left_out_for_compiling": skipped,
        "device_ops": int(len(durations)),
        "median_op_us": round(float(order_statistics.median(durations)) / 1e6, 3) if len(durations) else 0.0,
        "tiny_op_percent": round(100 * tiny_share, 1),
    }
    kind = "launch-bound: many tiny ops" if launch_bound else "devices idle most of the time"
    title = f"Low device utilization: duty cycle {shown} of the steady state, busiest device ({kind})"
    explanation = (
        f"Over the steady state ({ms(window_ps)} ms{_window_words(ctx)}) the busiest "
        f"device ran ops {shown} of the time; XProf treats a duty cycle above "
        f"{LOW_DUTY_CYCLE_PERCENT:g}% as not host-bound."
    )
    if launch_bound:
        explanation += (
            f" {metrics['tiny_op_percent']}% of the {len(durations)} device ops are shorter than "
            f"{TINY_OP_PS / 1e6:g} us (median {metrics['median_op_us']} us): the device finishes each op "
            "before the host issues the next one."
        )
    evidence = _idle_evidence(ctx, window)
    impact = _impact(ctx, window_ps, best)
    severity = IMPACT_THRESHOLDS.severity(impact)
    if all(d.kind == HOST_DEVICE_KIND for d in ctx.devices):
        severity = Severity.INFO
        explanation += (
            " The devices here are XLA:CPU, which runs on the host's own cores: their idle time is host "
            "work (Python, the profiler's own tracing), not an accelerator waiting, so this is only info."
        )
    finding = Finding(
        RULE_ID, severity, title, explanation, metrics, evidence, ctx.advice_for(ADVICE), impact
    )
    if impact is None:
        finding.impact_note = NO_STEPS_NOTE
    return RuleOutcome([finding], checked)


def _impact(ctx: Context, window_ps: int, duty_percent: float) -> Impact | None:
    """The busiest device's idle share of the steady state: the most a step could shrink if the device
    were kept busy. None without steps: the span of device ops is not a step time."""
    steps = len(ctx.periods[0])
    if steps == 0:
        return None
    idle_ps = window_ps * (100.0 - duty_percent) / 100.0
    counted = steps - 1 if steps >= MIN_STEPS_FOR_STEADY_STATE else steps
    return Impact(
        "the busiest device idle in the steady-state steps (compilation left out)",
        round(100.0 - duty_percent, 2),
        ms(idle_ps / max(counted, 1)),
    )


def _window(ctx: Context) -> tuple[tuple[np.ndarray, np.ndarray], int]:
    """The steady state: steps after the first that did not compile (the last one extended to the
    last device op, which async dispatch leaves running after the host step ended), else the span
    from the first to the last device op minus compilation. Also returns how many steps were left out."""
    b0, b1 = ctx.device_busy
    if len(b0) == 0:
        return (np.empty(0, np.int64), np.empty(0, np.int64)), 0
    compiles = intervals_of(ctx.compiles)
    p0, p1 = ctx.periods
    if len(p0) >= MIN_STEPS_FOR_STEADY_STATE:
        w0, w1 = p0[1:].copy(), p1[1:].copy()
        w1[-1] = max(int(w1[-1]), int(b1[-1]))
        compiling = window_total(compiles, w0, w1) > 0
        return merge_intervals(w0[~compiling], w1[~compiling]), int(compiling.sum())
    return difference((b0[:1], b1[-1:]), compiles), 0


def _window_words(ctx: Context) -> str:
    if len(ctx.steps) >= MIN_STEPS_FOR_STEADY_STATE:
        numbers = ctx.steps.number
        return f", steps {int(numbers[1])}..{int(numbers[-1])}, steps that compiled left out"
    return ", first to last device op, compilation left out"


def _idle_evidence(ctx: Context, window) -> list[dict]:
    idle = difference(window, ctx.device_busy)
    i0, i1 = idle
    host = ctx.devices[0].host
    plane = ctx.devices[0].plane.name
    top = np.argsort(-(i1 - i0), kind="stable")[:20]
    return largest_first(
        [
            range_ev(f"all devices idle ({ms(i1[k] - i0[k])} ms)", int(i0[k]), int(i1[k]), host, plane)
            for k in top
        ]
    )
