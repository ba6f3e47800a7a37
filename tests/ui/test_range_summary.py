"""A Shift-drag's pivot: per name against a plain per-event computation, its other dimensions, and
"as SQL" running the same pivot in the Query tab with the same numbers."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from PySide6.QtCore import QUrl

from tests.conftest import PTXLA_TRACE, TF_TRACE, TPU_TRACE
from tests.ui.conftest import LOAD_TIMEOUT_MS, open_and_wait
from tpuscope.analysis.area_pivot import pivot_area
from tpuscope.app.opener import open_trace
from tpuscope.ui.range_summary import range_pivot_html


def brute_force(tracks, t0: int, t1: int) -> dict[str, tuple[int, int, int]]:
    """Per name (count, total, self), one event at a time; children: the events one level down inside it."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for track in tracks:
        starts, ends, depth = track.start_ps.tolist(), track.end_ps.tolist(), track.depth.tolist()
        inside = [
            i for i in range(len(track)) if (ends[i] > t0 or ends[i] == starts[i] >= t0) and starts[i] < t1
        ]
        clipped = {i: max(0, min(ends[i], t1) - max(starts[i], t0)) for i in inside}
        for i in inside:
            children = [
                j
                for j in inside
                if depth[j] == depth[i] + 1 and starts[i] <= starts[j] and ends[j] <= ends[i] and j > i
            ]
            row = out[track.event_name(i)]
            row[0] += 1
            row[1] += clipped[i]
            row[2] += max(0, clipped[i] - sum(clipped[j] for j in children))
    return {k: tuple(v) for k, v in out.items()}


@pytest.mark.parametrize("path", [PTXLA_TRACE, TF_TRACE, TPU_TRACE], ids=lambda p: p.parent.name)
def test_by_name_matches_a_per_event_computation(path):
    trace = open_trace(path)
    tracks = [t for t in trace.tracks() if len(t)]
    rng = np.random.default_rng(1)
    for _ in range(3):
        a, b = sorted(rng.uniform(0, trace.duration_ps, 2))
        width = min(b - a, trace.duration_ps / 20)  # keeps the brute force small
        t0, t1 = int(a), int(a + width)
        table = pivot_area(tracks, t0, t1).by["name"]
        got = {label: (c, t, s) for label, c, t, s, _ in table.rows()}
        assert got == brute_force(tracks, t0, t1)
        assert np.allclose(table.average_ps, table.total_ps / table.counts)


def test_the_page_names_every_dimension_and_links_the_others():
    trace = open_trace(TPU_TRACE)
    pivot = pivot_area(trace.track_list(), 0, trace.duration_ps)
    page = range_pivot_html(pivot, "category")
    assert "<b>Category</b>" in page and "href='pivot:name'" in page and "href='pivot:category'" not in page
    assert "href='sql:category'" in page and "Average" in page
    labels = pivot.by["category"].labels
    assert None in labels and "(none)" in page  # host events have no op category
    busiest = next(label for label in labels if label is not None)
    assert busiest in page


def test_an_empty_range_has_no_rows():
    trace = open_trace(PTXLA_TRACE)
    pivot = pivot_area(list(trace.tracks()), -10_000, -1)
    assert pivot.events == 0 and all(len(t) == 0 for t in pivot.by.values())


def test_as_sql_runs_the_same_pivot_in_the_query_tab(qtbot, window):
    trace = open_and_wait(qtbot, window, TPU_TRACE, view="timeline")
    t0, t1 = trace.duration_ps * 0.2, trace.duration_ps * 0.7
    with qtbot.waitSignal(window.rangeSummarized, timeout=LOAD_TIMEOUT_MS) as summarized:
        window.timeline.rangeSelected.emit(t0, t1)
    pivot = summarized.args[0]
    details = window.details
    details.anchorClicked.emit(QUrl("pivot:source"))  # the user picks another dimension
    assert details.toPlainText().splitlines()[2].startswith("By Name | Category | Program | Source line")
    table = pivot.by["source"]
    assert len(table) > 1
    query_view = window.views["query"]
    with qtbot.waitSignal(query_view.queryFinished, timeout=LOAD_TIMEOUT_MS) as finished:
        details.anchorClicked.emit(QUrl("sql:source"))
    assert window.tabs.currentWidget() is query_view
    result = finished.args[0]
    assert not isinstance(result, str), result
    assert result.columns == ["label", "count", "total_ps", "self_ps", "avg_ps"]
    rows = list(zip(*result.data, strict=True))
    assert [(label, count, int(total), int(own)) for label, count, total, own, _ in rows] == [
        (label, count, total, own) for label, count, total, own, _ in table.rows()
    ]
