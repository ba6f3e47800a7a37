"""Durations as text: picoseconds (the model's time unit) in the unit that reads best.

Every view and command formats times through here, so a duration reads the same everywhere
it is shown; callers choose only how many digits (`spec`).
"""

from __future__ import annotations

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


# Binary byte units, largest first: memory is sized in powers of two (a 32 GiB chip, 4 MiB tiles).
BYTE_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def format_bytes(count: float, spec: str = ".2f") -> str:
    """A byte count in the largest binary unit it reaches: `20.00 GiB`, `512 B`."""
    value = float(count)
    for unit, scale in BYTE_UNITS:
        if abs(value) >= scale:
            return f"{value / scale:{spec}} {unit}"
    return f"{value:.0f} B"
