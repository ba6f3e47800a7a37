"""Counter tracks: a value over time (memory in use, a queue length...) drawn as a step area under the events.

A counter is a sorted time column and a value column, like a track's events but one number per
sample; the value holds until the next sample. Any source can make one (`CounterSeries`); the
timeline lays counters out in their own group above the planes and draws them with the same
viewport as the events, so they zoom and pan together. Per frame the visible samples are cut out
by binary search and, when there are more of them than pixels, reduced to each pixel column's
largest value (a peak never disappears when zoomed out: the Perfetto counter-track idea).
Pure numpy, no Qt: the widget turns the points into one polygon call.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

import numpy as np

from tpuscope.model.records import record

if TYPE_CHECKING:  # the scene imports the layout, which imports this module
    from tpuscope.ui.timeline.scene import Viewport

COUNTER_HEIGHT = 44  # pixels of one counter row
COUNTER_MARGIN_PX = 3  # space above the highest value and below the baseline
COUNTERS_GROUP = ("", "Counters")  # the layout group key of the counter rows
OFFSCREEN_PX = 10.0  # clamp to the viewport +- this margin, as the event boxes (scene.OFFSCREEN_PX)


@record
class CounterSeries:
    """One counter: `values[i]` holds from `time_ps[i]` until `time_ps[i + 1]` (the last: to the end)."""

    key: str
    label: str
    time_ps: np.ndarray
    values: np.ndarray
    unit: str = ""  # "bytes" formats values as KiB/MiB/GiB
    tooltip: str = ""
    ceiling: float | None = None  # a limit to draw as a line (e.g. capacity); not part of the scale
    peak_index: int | None = None  # a sample to mark (e.g. the peak)
    max_value: float = field(init=False)

    def __post_init__(self) -> None:
        order = np.argsort(self.time_ps, kind="stable")
        self.time_ps = np.asarray(self.time_ps, dtype=np.int64)[order]
        self.values = np.asarray(self.values, dtype=np.float64)[order]
        if self.peak_index is not None:
            self.peak_index = int(np.flatnonzero(order == self.peak_index)[0])
        finite = self.values[np.isfinite(self.values)]
        self.max_value = float(finite.max()) if len(finite) else 0.0

    def __len__(self) -> int:
        return len(self.time_ps)

    def value_at(self, t_ps: float) -> float | None:
        """The value holding at `t_ps` (None before the first sample)."""
        i = int(np.searchsorted(self.time_ps, t_ps, side="right")) - 1
        return float(self.values[i]) if i >= 0 else None


def visible_samples(series: CounterSeries, view: Viewport) -> tuple[np.ndarray, np.ndarray]:
    """(x, value) of the samples that shape the window: the one holding at its left edge, those inside,
    and the first after it; at most about two per pixel column (each column's largest value)."""
    if not len(series):
        return np.empty(0), np.empty(0)
    lo = max(int(np.searchsorted(series.time_ps, view.t0_ps, side="right")) - 1, 0)
    hi = min(int(np.searchsorted(series.time_ps, view.t1_ps, side="right")) + 1, len(series))
    x = np.asarray(view.x_of(series.time_ps[lo:hi]), dtype=np.float64)
    values = series.values[lo:hi]
    x = np.clip(x, view.x - OFFSCREEN_PX, view.x + view.width + OFFSCREEN_PX)
    if len(x) > 2 * view.width:
        column = np.floor(x).astype(np.int64)
        starts = np.flatnonzero(np.concatenate(([True], column[1:] != column[:-1])))
        peaks = np.maximum.reduceat(np.where(np.isfinite(values), values, 0.0), starts)
        x, values = x[starts], peaks
    return x, values


def step_area(series: CounterSeries, view: Viewport, top: float, height: float) -> np.ndarray:
    """The closed polygon (n, 2) of the counter's step area in widget coordinates, baseline at the bottom."""
    x, values = visible_samples(series, view)
    if not len(x):
        return np.empty((0, 2))
    base = top + height - COUNTER_MARGIN_PX
    y = value_y(series, values, top, height)
    ends = np.append(x[1:], max(view.x + view.width + OFFSCREEN_PX, float(x[-1])))  # the last value holds
    points = np.empty((2 * len(x) + 2, 2))
    points[1:-1:2, 0], points[2:-1:2, 0] = x, ends
    points[1:-1:2, 1], points[2:-1:2, 1] = y, y
    points[0] = (x[0], base)
    points[-1] = (ends[-1], base)
    return points


def value_y(series: CounterSeries, values: np.ndarray | float, top: float, height: float) -> np.ndarray:
    """Widget y of values on the series' own scale (0 at the baseline, its maximum near the top)."""
    span = max(series.max_value, 1e-12)
    usable = height - 2 * COUNTER_MARGIN_PX
    clean = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0)
    return top + COUNTER_MARGIN_PX + usable * (1.0 - np.clip(clean / span, 0.0, 1.0))


def format_value(series: CounterSeries, value: float | None) -> str:
    """A counter value in the series' unit: bytes as KiB/MiB/GiB, anything else as a number."""
    if value is None or not np.isfinite(value):
        return "-"
    if series.unit == "bytes":
        from tpuscope.model.units import format_bytes

        return format_bytes(value)
    return f"{value:,.6g}" + (f" {series.unit}" if series.unit else "")
