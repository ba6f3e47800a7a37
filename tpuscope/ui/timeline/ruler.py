"""Time ruler ticks: round steps (1, 2, 5 x 10^k ps) labelled in the unit that reads best."""

from __future__ import annotations

import math

from tpuscope.model.units import duration_unit

MIN_TICK_SPACING_PX = 90  # room for a label like "1.234 ms" between major ticks


def tick_step(ps_per_px: float, min_spacing_px: float = MIN_TICK_SPACING_PX) -> float:
    """The smallest 1/2/5 x 10^k ps step that puts ticks at least `min_spacing_px` apart."""
    target = max(1.0, ps_per_px * min_spacing_px)
    exponent = math.floor(math.log10(target))
    for mantissa in (1, 2, 5, 10):
        step = mantissa * 10.0**exponent
        if step >= target:
            return step
    return 10.0 ** (exponent + 1)


def unit_for(step_ps: float) -> tuple[str, float]:
    """A tick label uses the largest unit the tick step reaches."""
    return duration_unit(step_ps)


def format_time(ps: float, step_ps: float) -> str:
    """A tick label: enough decimals to tell neighbouring ticks apart, in the step's unit."""
    unit, scale = unit_for(step_ps)
    decimals = max(0, -math.floor(math.log10(step_ps / scale) + 1e-9))
    return f"{ps / scale:.{decimals}f} {unit}"


def ticks(t0_ps: float, t1_ps: float, width_px: float) -> tuple[float, list[float]]:
    """The step and the tick times within [t0, t1] for a ruler `width_px` wide."""
    if width_px <= 0 or t1_ps <= t0_ps:
        return 1.0, []
    step = tick_step((t1_ps - t0_ps) / width_px)
    first = math.ceil(t0_ps / step)
    last = math.floor(t1_ps / step)
    return step, [k * step for k in range(first, last + 1)]
