"""Duration text: the unit each magnitude reads best in, and the two digit styles."""

from __future__ import annotations

from tpuscope.model.units import SHORT_SPEC, duration_unit, format_duration


def test_each_magnitude_picks_the_largest_unit_it_reaches():
    units = [duration_unit(ps)[0] for ps in (0.5, 1, 999, 1_000, 1e6, 1e9, 1e12, 5e15)]
    assert units == ["ps", "ps", "ps", "ns", "us", "ms", "s", "s"]
    assert duration_unit(-2e9) == ("ms", 1e9)


def test_table_style_keeps_three_decimals_and_short_style_drops_zeros():
    assert format_duration(1_500_000_000) == "1.500 ms"
    assert format_duration(1_500_000_000, SHORT_SPEC) == "1.5 ms"
    assert format_duration(-2_250_000) == "-2.250 us"
    assert format_duration(12) == format_duration(12, SHORT_SPEC) == "12 ps"
