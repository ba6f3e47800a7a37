"""A metric's value as text, one way per unit, so a number rounded in one place is rounded the same
way everywhere it is shown (the `metrics` table, the findings' titles and explanations).

Durations, sizes and shares go through `tpuscope.model.units` (the formatter the tables and the app's
cards use); a share is shown with one decimal, whether it is stored as a fraction (duty cycles) or a percent.
"""

from __future__ import annotations

from tpuscope.analysis.metrics.units import BYTES, FRACTION, PERCENT, US
from tpuscope.model.units import format_bytes, format_duration, format_percent_value

NOT_APPLICABLE = "-"


def format_percent(percent: float) -> str:
    """A share already in percent (0..100): `96.5%`, as `units.format_percent_value` writes every share."""
    return format_percent_value(percent)


def format_fraction(fraction: float) -> str:
    """A share as a fraction (0..1), shown in percent: `0.803` -> `80.3%`."""
    return format_percent(fraction * 100.0)


def format_metric(value: float | None, unit: str) -> str:
    """`value` in `unit` as the text outputs show it; `-` when the metric does not apply."""
    if value is None:
        return NOT_APPLICABLE
    if unit == US:
        return format_duration(value * 1e6)
    if unit == FRACTION:
        return format_fraction(value)
    if unit == PERCENT:
        return format_percent(value)
    if unit == BYTES:
        return format_bytes(value)
    return f"{value:g}"
