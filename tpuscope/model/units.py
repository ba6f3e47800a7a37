"""Numbers as text, one formatter per unit: durations, byte counts and percentages.

Every view and command formats times, sizes and shares through here, so a number reads (and is
rounded) the same everywhere it is shown; callers choose only how many digits (`spec`). A single
duration is shown in the unit that reads best for it (`format_duration`); a column of durations
(a table's, the app's or the command line's) is shown in one unit for all its rows
(`format_duration_column`), so "26.921 us" never sits beside "30.175 ms" in one column.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

# Units from the largest down; a duration is shown in the largest unit it reaches.
TIME_UNITS = (("s", 1e12), ("ms", 1e9), ("us", 1e6), ("ns", 1e3), ("ps", 1.0))
# Fixed decimals: numbers in a table column line up (1.500 ms over 12.250 ms).
TABLE_SPEC = ".3f"
# Four significant digits, no trailing zeros: compact labels (1.5 ns, 2 ms, 784.2 ms).
SHORT_SPEC = ".4g"


def duration_unit(ps: float) -> tuple[str, float]:
    """(name, picoseconds per unit) of the largest unit `|ps|` reaches; picoseconds below 1 ps."""
    magnitude = abs(float(ps))
    for unit, scale in TIME_UNITS:
        if magnitude >= scale:
            return unit, scale
    return TIME_UNITS[-1]


def format_duration(ps: float, spec: str = TABLE_SPEC) -> str:
    """`ps` in the unit that reads best, its number formatted with `spec`; whole picoseconds below 1 ns."""
    value = float(ps)
    unit, scale = duration_unit(value)
    if unit == "ps":
        return f"{value:.0f} ps"
    return f"{value / scale:{spec}} {unit}"


# Table columns: fixed decimals with thousands separators, so a column's numbers line up.
COLUMN_SPEC = ",.3f"


def duration_column_unit(values_ps: Iterable[float] | np.ndarray) -> tuple[str, float]:
    """(name, picoseconds per unit) of the one unit a column of durations is shown in: the unit its
    largest magnitude reads best in. Our heuristic, as a chart's axis picks its unit: the rows that
    matter most (a table of ops is sorted by time) read compactly (77.773 s, not 77,773.123 ms) and a
    row reads 0.000 only below a millionth of the largest; zeros and NaNs (no value) do not vote."""
    column = values_ps if isinstance(values_ps, np.ndarray) else np.fromiter(values_ps, float)
    magnitudes = np.abs(column.astype(float, copy=False))
    magnitudes = magnitudes[np.isfinite(magnitudes) & (magnitudes > 0)]
    if not len(magnitudes):
        return TIME_UNITS[-1]
    return duration_unit(float(magnitudes.max()))


def format_duration_in(ps: float, unit: tuple[str, float], spec: str = COLUMN_SPEC) -> str:
    """`ps` written in `unit` (a `duration_column_unit`), its number formatted with `spec`."""
    name, scale = unit
    value = float(ps)
    if name == "ps":
        sign = "+" if spec.startswith("+") else ""
        return f"{value:{sign},.0f} ps"  # whole picoseconds: the model's resolution
    return f"{value / scale:{spec}} {name}"


def format_duration_column(values_ps: Sequence[float] | np.ndarray, spec: str = COLUMN_SPEC) -> list[str]:
    """A column of durations as text, every row in the column's one unit (`duration_column_unit`)."""
    unit = duration_column_unit(values_ps)
    return [format_duration_in(v, unit, spec) for v in values_ps]


# A share of a whole: one decimal (96.5%, 9.5%, 0.2%). Our choice: a tenth of a percent is finer than
# any threshold a diagnose rule applies (the smallest is 5%) and the most a reader compares by eye.
PERCENT_SPEC = ".1f"


def format_percent_value(percent: float) -> str:
    """A percentage (0-100) as text: `96.9%`; the one rounding of a share everywhere (the metrics',
    the findings', the cards')."""
    value = float(percent)
    if not math.isfinite(value):
        return "\u2013"
    return f"{value:{PERCENT_SPEC}}%"


def format_percent(fraction: float) -> str:
    """A fraction (0-1) as a percentage, as `format_percent_value` writes it."""
    return format_percent_value(100.0 * float(fraction))


# Binary byte units, largest first: memory is sized in powers of two (a 32 GiB chip, 4 MiB tiles).
BYTE_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def format_bytes(count: float, spec: str = ".2f") -> str:
    """A byte count in the largest binary unit it reaches: `20.00 GiB`, `512 B`."""
    value = float(count)
    for unit, scale in BYTE_UNITS:
        if abs(value) >= scale:
            return f"{value / scale:{spec}} {unit}"
    return f"{value:.0f} B"


def bytes_column_unit(counts: Iterable[float] | np.ndarray) -> tuple[str, float]:
    """(name, bytes per unit) of the one unit a column of byte counts is shown in: its largest's, as
    `duration_column_unit` picks a time column's; bytes (`B`) when every count is below a KiB."""
    column = counts if isinstance(counts, np.ndarray) else np.fromiter(counts, float)
    magnitudes = np.abs(column.astype(float, copy=False))
    largest = float(magnitudes[np.isfinite(magnitudes)].max(initial=0.0))
    return next(((unit, float(scale)) for unit, scale in BYTE_UNITS if largest >= scale), ("B", 1.0))


def format_bytes_in(count: float, unit: tuple[str, float], spec: str = ".2f") -> str:
    """A byte count written in `unit` (a `bytes_column_unit`); whole bytes in `B`."""
    name, scale = unit
    return f"{float(count):,.0f} B" if name == "B" else f"{float(count) / scale:{spec}} {name}"
