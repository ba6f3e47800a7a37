"""Range summaries (count, clipped total, self time per name) against a plain per-event computation."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from tests.conftest import PTXLA_TRACE, TF_TRACE, TPU_TRACE
from tpuscope.opener import open_trace
from tpuscope.ui.range_summary import summarize_range


def brute_force(tracks, t0: int, t1: int) -> dict[str, tuple[int, int, int]]:
    """Per name (count, total, self), one event at a time; children found by containment one level down."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for track in tracks:
        starts, ends, depth = track.start_ps.tolist(), track.end_ps.tolist(), track.depth.tolist()
        inside = [i for i in range(len(track)) if ends[i] > t0 and starts[i] < t1]
        clipped = {i: max(0, min(ends[i], t1) - max(starts[i], t0)) for i in inside}
        for i in inside:
            children = [
                j for j in inside if depth[j] == depth[i] + 1 and starts[i] <= starts[j] < ends[i] and j > i
            ]
            row = out[track.event_name(i)]
            row[0] += 1
            row[1] += clipped[i]
            row[2] += max(0, clipped[i] - sum(clipped[j] for j in children))
    return {k: tuple(v) for k, v in out.items()}


@pytest.mark.parametrize("path", [PTXLA_TRACE, TF_TRACE, TPU_TRACE], ids=lambda p: p.parent.name)
def test_matches_a_per_event_computation(path):
    trace = open_trace(path)
    tracks = [t for t in trace.tracks() if len(t)]
    rng = np.random.default_rng(1)
    for _ in range(3):
        a, b = sorted(rng.uniform(0, trace.duration_ps, 2))
        width = min(b - a, trace.duration_ps / 20)  # keeps the brute force small
        t0, t1 = int(a), int(a + width)
        summary = summarize_range(tracks, t0, t1)
        expected = brute_force(tracks, t0, t1)
        got = {
            trace.strings[int(n)]: (int(c), int(t), int(s))
            for n, c, t, s in zip(
                summary.name_ids, summary.counts, summary.total_ps, summary.self_ps, strict=True
            )
        }
        assert got == expected
        assert list(summary.total_ps) == sorted(summary.total_ps, reverse=True)
        assert (summary.self_ps <= summary.total_ps).all()


def test_an_empty_range_has_no_names():
    trace = open_trace(PTXLA_TRACE)
    summary = summarize_range(list(trace.tracks()), -10_000, -1)
    assert len(summary) == 0
