"""Level-of-detail boxes against the raw events they stand for, on real profiles and a dense synthetic track.

For every (track, depth) and a range of zoom levels, the boxes must cover
every pixel column some event covers, must not invent activity farther than
the merge width from a real event, must stay within a few boxes per pixel
column, and each box's name/colour must come from an event inside it.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import GPU_TRACE, PTXLA_TRACE, TF_TRACE, TPU_TRACE
from tpuscope.app.opener import open_trace
from tpuscope.model.stats import StatTable
from tpuscope.model.trace import Plane, Trace, Track
from tpuscope.ui.timeline.lod import (
    MIN_EVENTS_FOR_PYRAMID,
    SAMPLE_STRIDE,
    Bisector,
    DepthLod,
    TimelineLod,
    TrackLod,
    merge_small,
)
from tpuscope.ui.timeline.scene import MERGE_PX

WIDTH_PX = 1600
MAX_BOXES_PER_COLUMN = 3  # "at most a few boxes per pixel column" (issue 3)


def raw_depth_events(track: Track, depth: int) -> np.ndarray:
    return np.flatnonzero(track.depth == depth)


def columns_covered(start, end, t0, ps_per_px, min_px=0.0) -> np.ndarray:
    """Boolean coverage of WIDTH_PX pixel columns by [start, end) intervals (each at least min_px wide)."""
    x0 = (np.asarray(start, np.float64) - t0) / ps_per_px
    x1 = np.maximum((np.asarray(end, np.float64) - t0) / ps_per_px, x0 + min_px)
    first = np.clip(np.floor(x0), 0, WIDTH_PX).astype(np.int64)
    last = np.clip(np.ceil(x1), 0, WIDTH_PX).astype(np.int64)
    delta = np.zeros(WIDTH_PX + 1, np.int64)
    np.add.at(delta, first, 1)
    np.add.at(delta, last, -1)
    return np.cumsum(delta)[:WIDTH_PX] > 0


def dilate(mask: np.ndarray, radius: int) -> np.ndarray:
    out = mask.copy()
    for shift in range(1, radius + 1):
        out[shift:] |= mask[:-shift]
        out[:-shift] |= mask[shift:]
    return out


def check_window(depth_lod: DepthLod, t0: float, t1: float) -> int:
    track = depth_lod.track
    ps_per_px = (t1 - t0) / WIDTH_PX
    min_ps = ps_per_px * MERGE_PX
    boxes = depth_lod.window(t0, t1, min_ps)
    rows = np.arange(len(track)) if depth_lod.indices is None else depth_lod.indices
    assert (track.depth[rows] == depth_lod.depth).all()
    assert np.array_equal(rows, raw_depth_events(track, depth_lod.depth))
    start, end = track.start_ps[rows], track.start_ps[rows] + track.duration_ps[rows]
    inside = (end > t0) & (start < t1)
    raw = columns_covered(start[inside], end[inside], t0, ps_per_px, min_px=1e-9)
    drawn = columns_covered(boxes.start_ps, boxes.end_ps, t0, ps_per_px, min_px=1.0)
    # One column of slack: an instant exactly at a box's end rounds into the next column.
    assert not (raw & ~dilate(drawn, 1)).any(), "a pixel column with events has no box"
    far = drawn & ~dilate(raw, int(np.ceil(MERGE_PX)) + 1)
    assert not far.any(), "a box covers columns far from any event"
    starts_px = np.floor((boxes.start_ps - t0) / ps_per_px).astype(np.int64)
    on_screen = starts_px[(starts_px >= 0) & (starts_px < WIDTH_PX)]
    if len(on_screen):
        assert np.bincount(on_screen).max() <= MAX_BOXES_PER_COLUMN
    reps = boxes.rep
    assert (track.start_ps[reps] >= boxes.start_ps).all()
    assert (track.start_ps[reps] + track.duration_ps[reps] <= boxes.end_ps).all()
    assert (boxes.count >= 1).all()
    return len(boxes)


def windows_for(track: Track, n: int = 7) -> list[tuple[float, float]]:
    """From the whole track down to about 30 events wide, centred on its middle event."""
    t_min = float(track.start_ps[0])
    t_max = float((track.start_ps + track.duration_ps).max())
    centre = float(track.start_ps[len(track) // 2])
    spacing = max(1.0, (t_max - t_min) / len(track))
    narrowest = 30 * spacing
    out = [(t_min, t_max)]
    for k in range(1, n):
        width = (t_max - t_min) * (narrowest / (t_max - t_min)) ** (k / (n - 1))
        out.append((centre - width / 2, centre + width / 2))
    return out


@pytest.mark.parametrize("path", [TPU_TRACE, TF_TRACE, PTXLA_TRACE, GPU_TRACE], ids=lambda p: p.parent.name)
def test_boxes_match_raw_events_on_real_profiles(path):
    trace = open_trace(path)
    lod = TimelineLod(trace)
    checked = 0
    for track in trace.tracks():
        if len(track) < 2:
            continue
        for depth_lod in lod.of(track).depths:
            for t0, t1 in windows_for(track):
                check_window(depth_lod, t0, t1)
                checked += 1
    assert checked > 50


def synthetic_trace(n: int, seed: int = 0) -> Trace:
    """One dense track of back-to-back events with random durations and gaps (too many to draw one by one)."""
    rng = np.random.default_rng(seed)
    trace = Trace()
    plane = Plane(trace, 1, "/device:TPU:0", "host", {})
    names = trace.strings.intern_many([f"op.{i}" for i in range(50)])
    from tpuscope.model.trace import EventMetadataTable

    plane.metadata = EventMetadataTable(np.arange(50), names, [b""] * 50, StatTable(50))
    duration = rng.integers(1_000, 200_000, n)
    gaps = np.where(rng.random(n) < 0.01, rng.integers(1_000_000, 50_000_000, n), rng.integers(0, 5_000, n))
    start = np.cumsum(duration + gaps) - duration[0]
    meta = rng.integers(0, 50, n).astype(np.int32)
    track = Track(
        plane,
        1,
        1,
        "XLA Ops",
        "XLA Ops",
        start.astype(np.int64),
        duration.astype(np.int64),
        meta,
        names[meta],
        np.zeros(n, np.int16),
        StatTable(n),
    )
    plane.tracks.append(track)
    trace.planes.append(plane)
    trace.duration_ps = int(track.end_ps.max())
    return trace


def test_dense_track_uses_a_pyramid_and_stays_within_a_few_boxes_per_column():
    trace = synthetic_trace(300_000)
    track = trace.planes[0].tracks[0]
    track_lod = TrackLod(track)
    depth_lod = track_lod.depths[0]
    assert len(depth_lod.levels) >= 3
    resolutions = [r for r, _ in depth_lod.levels]
    assert resolutions == sorted(resolutions)
    assert all(len(b) < len(track) for _, b in depth_lod.levels)
    for t0, t1 in windows_for(track, n=12):
        boxes = check_window(depth_lod, t0, t1)
        assert boxes <= MAX_BOXES_PER_COLUMN * WIDTH_PX
    assert track_lod.nbytes() < 0.10 * track.nbytes()


def test_small_depths_read_raw_events():
    trace = open_trace(TPU_TRACE)
    for track_lod in TimelineLod(trace).tracks.values():
        for depth_lod in track_lod.depths:
            if len(depth_lod) < MIN_EVENTS_FOR_PYRAMID:
                assert depth_lod.levels == []


def test_merge_keeps_wide_events_and_folds_small_neighbours():
    start = np.array([0, 10, 20, 30, 1000, 5000], np.int64)
    end = np.array([5, 15, 25, 900, 1010, 5003], np.int64)
    rep = np.arange(6, dtype=np.int64)
    merged = merge_small(start, end, rep, np.ones(6, np.int64), min_ps=100.0)
    # 0..25 fold into one box (all small, gaps small, same bucket); 30..900 is wide and stays;
    # 1000 and 5000 are small but far apart, so each keeps its own box.
    assert merged.start_ps.tolist() == [0, 30, 1000, 5000]
    assert merged.end_ps.tolist() == [25, 900, 1010, 5003]
    assert merged.count.tolist() == [3, 1, 1, 1]
    assert merged.rep.tolist() == [0, 3, 4, 5]


def test_event_at_finds_the_event_under_a_time():
    trace = open_trace(TPU_TRACE)
    plane = trace.find_plane("/device:TPU:0")
    track = plane.track("XLA Ops")
    track_lod = TrackLod(track)
    for index in (0, len(track) // 3, len(track) - 1):
        depth = int(track.depth[index])
        middle = float(track.start_ps[index] + track.duration_ps[index] // 2)
        found = track_lod.event_at(depth, middle, tolerance_ps=0.0)
        assert found is not None
        assert track.start_ps[found] <= middle <= track.start_ps[found] + track.duration_ps[found]
        assert int(track.depth[found]) == depth
    assert track_lod.event_at(0, float(track.start_ps[0]) - 1e9, tolerance_ps=1.0) is None


@pytest.mark.parametrize("n", [0, 1, 5, SAMPLE_STRIDE * 4, SAMPLE_STRIDE * 4 + 1, SAMPLE_STRIDE * 37 + 11])
def test_bisector_answers_as_searchsorted_does(n):
    """The sampled two-step search equals one bisection of the whole column, for keys between, on and
    beyond its values, runs of equal values included (events starting together)."""
    rng = np.random.default_rng(n)
    values = np.sort(rng.integers(0, max(1, n // 3), n)).astype(np.int64)  # many repeats
    search = Bisector(values)
    keys = np.concatenate([values[:: max(1, n // 200)], values[:: max(1, n // 200)] + 1, [-5, 0, n, 10 * n]])
    for key in keys.astype(np.int64):
        for side in ("left", "right"):
            assert search(key, side=side) == int(np.searchsorted(values, key, side=side)), (key, side)


def merge_small_in_numpy(start, end, rep, count, min_ps):
    """The merge rule written with whole-array numpy operations: the oracle for the one-pass C merge."""
    if len(start) < 2:
        return start, end, rep, count
    length = end - start
    tiny = length < min_ps
    bucket = np.floor_divide(start, min_ps)
    end_so_far = np.maximum.accumulate(end)
    joins = tiny[1:] & tiny[:-1] & ((start[1:] - end_so_far[:-1]) < min_ps) & (bucket[1:] == bucket[:-1])
    if not joins.any():
        return start, end, rep, count
    breaks = np.concatenate(([True], ~joins))
    first = np.flatnonzero(breaks)
    run = np.cumsum(breaks) - 1
    longest = np.maximum.reduceat(length, first)
    is_longest = np.flatnonzero(length == longest[run])
    keep = np.concatenate(([True], run[is_longest[1:]] != run[is_longest[:-1]]))
    return start[first], np.maximum.reduceat(end, first), rep[is_longest[keep]], np.add.reduceat(count, first)


@pytest.mark.parametrize("seed", range(12))
def test_the_one_pass_merge_gives_the_boxes_numpy_gives(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 5000))
    gaps = rng.choice([0, 1, 3, 50, 10_000], n)  # events starting together, touching, apart
    start = np.cumsum(gaps).astype(np.int64) + int(rng.integers(0, 10**12))
    end = start + rng.choice([0, 1, 7, 90, 5_000, 10**6], n)
    rep = rng.permutation(n).astype(np.int64)
    count = rng.integers(1, 4, n).astype(np.int64)
    for min_ps in (0.5, 3.0, 100.0, 1e3 / 3, 2.0**20, 1e9):
        boxes = merge_small(start, end, rep, count, min_ps)
        for got, expected in zip(
            (boxes.start_ps, boxes.end_ps, boxes.rep, boxes.count),
            merge_small_in_numpy(start, end, rep, count, min_ps),
            strict=True,
        ):
            np.testing.assert_array_equal(got, expected)


def test_the_one_pass_merge_refuses_columns_it_cannot_read():
    from tpuscope.ui.timeline import _boxmerge

    column = np.arange(10, dtype=np.int64)
    out = [np.empty(10, np.int64) for _ in range(4)]
    with pytest.raises(ValueError):
        _boxmerge.merge_small(column, column[:5], column, column, 1.0, *out)
    with pytest.raises(ValueError):
        _boxmerge.merge_small(column, column, column, column, 1.0, *out[:3], np.empty(5, np.int64))
    with pytest.raises(ValueError):
        _boxmerge.merge_small(column, column, column, column, 0.0, *out)
