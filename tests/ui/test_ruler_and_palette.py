"""Ruler ticks and units, and event colours that stay the same across runs and profiles."""

from __future__ import annotations

import math

import pytest

from tests.conftest import TPU_TRACE
from tpuscope.app.opener import open_trace
from tpuscope.model.units import SHORT_SPEC, format_duration
from tpuscope.ui.timeline import ruler
from tpuscope.ui.timeline.palette import CATEGORY_COLOURS, PALETTE, Colours, colour_key, short_name


@pytest.mark.parametrize("span_ps", [3e2, 7.5e4, 1.2e7, 4.4e9, 9.8e13])
@pytest.mark.parametrize("width_px", [400, 1600])
def test_ticks_are_round_spaced_and_labelled_in_a_fitting_unit(span_ps, width_px):
    t0 = 0.37 * span_ps
    step, times = ruler.ticks(t0, t0 + span_ps, width_px)
    mantissa = step / 10 ** math.floor(math.log10(step) + 1e-9)
    assert round(mantissa, 6) in (1, 2, 5)
    assert step / (span_ps / width_px) >= ruler.MIN_TICK_SPACING_PX
    assert 1 <= len(times) <= width_px / ruler.MIN_TICK_SPACING_PX + 1
    assert all(t0 <= t <= t0 + span_ps for t in times)
    labels = [ruler.format_time(t, step) for t in times]
    assert len(set(labels)) == len(labels)  # neighbouring ticks never read the same
    unit, scale = ruler.unit_for(step)
    assert all(label.endswith(" " + unit) for label in labels)
    assert 1 <= step / scale < 1000


def test_durations_read_naturally():
    assert format_duration(1_500, SHORT_SPEC) == "1.5 ns"
    assert format_duration(2_000_000_000, SHORT_SPEC) == "2 ms"
    assert format_duration(12, SHORT_SPEC) == "12 ps"


def test_hlo_names_are_shortened_and_coloured_by_category():
    assert short_name("%fusion.3 = f32[8]{0} fusion(%p0), kind=kLoop") == "fusion.3"
    assert short_name("ThunkExecutor::Execute") == "ThunkExecutor::Execute"
    assert colour_key("%copy-start.12 = (f32[2]) copy-start(%x)") == "copy-start"
    trace = open_trace(TPU_TRACE)
    plane = trace.find_plane("/device:TPU:0")
    colours = Colours().of(plane)
    for row, category in colours.category_of_row.items():
        if category in CATEGORY_COLOURS:
            assert colours.colour_of_row[row] == CATEGORY_COLOURS[category]
    assert len({int(c) for c in colours.colour_of_row}) >= 5
    again = Colours().of(open_trace(TPU_TRACE).find_plane("/device:TPU:0"))
    assert again.colour_of_row.tolist() == colours.colour_of_row.tolist()  # stable between runs
    assert all(0 <= c < len(PALETTE) for c in colours.colour_of_row.tolist())


def test_the_common_categories_have_distinct_colours():
    common = [
        "convolution",
        "loop fusion",
        "input fusion",
        "output fusion",
        "all-reduce",
        "copy-start",
        "copy-done",
        "data formatting",
        "non-fusion elementwise",
        "custom-call",
    ]
    assert len({CATEGORY_COLOURS[c] for c in common}) == len(common)


def test_track_labels_shorten_long_thread_ids_only():
    from tests.conftest import TF_TRACE
    from tpuscope.ui.timeline.layout import TimelineLayout

    layout = TimelineLayout(open_trace(TF_TRACE))
    labels = {r.track.display_name: r.label for r in layout.rows if r.kind == "track"}
    assert labels["python"] == "python"
    long_ids = [
        n for n in labels if n.rsplit("/", 1)[-1].lstrip("-").isdigit() and len(n.rsplit("/", 1)[-1]) >= 10
    ]
    assert long_ids
    for name in long_ids:
        prefix, number = name.rsplit("/", 1)
        assert labels[name] == f"{prefix}/\u2026{number[-4:]}"
        assert name in next(
            r.tooltip for r in layout.rows if r.track is not None and r.track.display_name == name
        )
    assert len(set(labels.values())) == len(labels)  # still tells every thread apart
