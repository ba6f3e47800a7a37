"""Numbers as text: the unit each duration reads best in, the two digit styles, one unit per column,
and the one rounding of a share."""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.metrics.format import format_fraction
from tpuscope.analysis.metrics.format import format_percent as metric_percent
from tpuscope.model.units import (
    SHORT_SPEC,
    bytes_column_unit,
    duration_column_unit,
    duration_unit,
    format_bytes_in,
    format_duration,
    format_duration_column,
    format_duration_in,
    format_percent,
    format_percent_value,
)


def test_each_magnitude_picks_the_largest_unit_it_reaches():
    units = [duration_unit(ps)[0] for ps in (0.5, 1, 999, 1_000, 1e6, 1e9, 1e12, 5e15)]
    assert units == ["ps", "ps", "ps", "ns", "us", "ms", "s", "s"]
    assert duration_unit(-2e9) == ("ms", 1e9)


def test_table_style_keeps_three_decimals_and_short_style_drops_zeros():
    assert format_duration(1_500_000_000) == "1.500 ms"
    assert format_duration(1_500_000_000, SHORT_SPEC) == "1.5 ms"
    assert format_duration(-2_250_000) == "-2.250 us"
    assert format_duration(12) == format_duration(12, SHORT_SPEC) == "12 ps"


def test_a_column_is_written_in_one_unit_chosen_by_its_largest_value():
    # One op of 30 ms among microsecond ops: the column reads in milliseconds, all of it.
    column = [26_921_000, 30_175_312_000, 4_100_000, 950_000, 0]
    texts = format_duration_column(column)
    assert texts == ["0.027 ms", "30.175 ms", "0.004 ms", "0.001 ms", "0.000 ms"]
    assert {text.rsplit(" ", 1)[1] for text in texts} == {"ms"}
    # The same values one at a time would have mixed units: the point of the column formatter.
    assert format_duration(column[1]) == "30.175 ms" and format_duration(column[0]) == "26.921 us"
    assert format_duration_column([1_234_567e6, 2e9]) == ["1.235 s", "0.002 s"]


def test_the_column_unit_ignores_zeros_and_missing_values_and_reads_negative_deltas():
    assert duration_column_unit(np.array([0.0, np.nan, 2e9, -3e9, 5e8])) == ("ms", 1e9)
    assert duration_column_unit([]) == ("ps", 1.0) and duration_column_unit([0, 0]) == ("ps", 1.0)
    assert format_duration_column(np.array([-2e9, 1.5e9, -7e6]), "+,.3f") == [
        "-2.000 ms",
        "+1.500 ms",
        "-0.007 ms",
    ]
    assert format_duration_column([12_345e9, 1e9]) == ["12.345 s", "0.001 s"]
    unit = duration_column_unit([500, 700, 999])  # picoseconds: whole numbers
    assert unit == ("ps", 1.0) and format_duration_in(999, unit) == "999 ps"
    assert format_duration_in(1_200, unit, "+,.3f") == "+1,200 ps"


def test_every_share_is_rounded_one_way():
    assert format_percent(0.96931) == "96.9%" == format_percent_value(96.93)
    assert format_percent(0.96481) == "96.5%" == format_percent_value(96.48)  # never 96.48% elsewhere
    assert format_percent(0.0005) == "0.1%" and format_percent(0) == "0.0%"
    assert format_percent_value(float("nan")) == "\u2013"
    # The metrics' formatter (findings, `tpuscope metrics`) is this one.
    assert metric_percent(96.481) == format_percent_value(96.481) and format_fraction(0.803) == "80.3%"


def test_a_column_of_byte_counts_is_written_in_its_largest_counts_unit():
    counts = [20 * 2**30, 512 * 2**20, 3 * 2**10, 0]
    unit = bytes_column_unit(counts)
    assert unit == ("GiB", float(2**30))
    assert [format_bytes_in(c, unit) for c in counts] == ["20.00 GiB", "0.50 GiB", "0.00 GiB", "0.00 GiB"]
    assert bytes_column_unit([100, 900]) == ("B", 1.0) and format_bytes_in(900, ("B", 1.0)) == "900 B"
    assert bytes_column_unit([]) == ("B", 1.0)
