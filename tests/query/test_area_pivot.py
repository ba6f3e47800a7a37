"""The pivot of a selected area (numpy, tpuscope.analysis.area_pivot) equals its SQL (DuckDB over the
events table, tpuscope.query.area) row for row, on real profiles, random ranges and track subsets."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SAMPLES, SHARED_TRACES, TF_TRACE, TPU_TRACE, require_shared_traces
from tpuscope.analysis.area_pivot import DIMENSION_KEYS, exact_bincount, pivot_area
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.query.area import area_pivot_sql, track_condition
from tpuscope.query.session import QuerySession

PROFILES = [
    TPU_TRACE,  # categories, program ids and source lines from op metadata
    TF_TRACE,  # deep host nesting, 128k events
    SAMPLES / "jax_cpu_healthy.xplane.pb",  # 45 levels deep
    SHARED_TRACES / "kineto" / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
    SHARED_TRACES / "kineto" / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
]


def _sql_rows(session: QuerySession, query: str) -> dict:
    relation = session.sql(query)
    assert relation is not None
    assert relation.columns == ["label", "count", "total_ps", "self_ps", "avg_ps"]
    return {
        (None if label is None else str(label)): (count, int(total), int(own), float(avg))
        for label, count, total, own, avg in relation.fetchall()
    }


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name[:40])
def test_the_pivot_equals_its_sql(path):
    require_shared_traces()
    trace = open_trace(path)
    session = QuerySession(TraceAnalysis(trace))
    tracks = trace.track_list()
    rng = np.random.default_rng(21)
    ranges = [(0, trace.duration_ps + 1)]
    ranges += [tuple(sorted(rng.uniform(0, trace.duration_ps, 2))) for _ in range(3)]
    seen_nesting = False
    for trial, (t0, t1) in enumerate(ranges):
        # every track, then two thirds of them (the ones the timeline shows expanded)
        chosen = tracks if trial % 2 == 0 else [t for k, t in enumerate(tracks) if k % 3 != trial % 3]
        ids = [trace.track_number(t) for t in chosen]
        pivot = pivot_area(chosen, t0, t1)
        assert pivot.events == sum(len(t.overlapping(int(t0), int(t1))) for t in chosen)
        for dimension in DIMENSION_KEYS:
            table = pivot.by[dimension]
            expected = _sql_rows(session, area_pivot_sql(dimension, int(t0), int(t1), ids, len(tracks)))
            got = {label: (c, t, s, a) for label, c, t, s, a in table.rows()}
            assert got.keys() == expected.keys()
            for label, (count, total, own, avg) in got.items():
                assert (count, total, own) == expected[label][:3], (dimension, label)
                assert avg == pytest.approx(expected[label][3])
            assert int(table.counts.sum()) == pivot.events
            assert (table.self_ps <= table.total_ps).all()
            assert list(table.total_ps) == sorted(table.total_ps, reverse=True)
        names = pivot.by["name"]
        seen_nesting |= bool((names.self_ps < names.total_ps).any())
    assert seen_nesting  # every profile here nests events, so some self time is not the total


def test_the_dimensions_group_what_the_profile_has():
    trace = open_trace(TPU_TRACE)
    pivot = pivot_area(trace.track_list(), 0, trace.duration_ps + 1)
    session = QuerySession(TraceAnalysis(trace))
    for dimension, column in (("category", "category"), ("program", "program_id"), ("source", "source")):
        labelled = [label for label in pivot.by[dimension].labels if label is not None]
        ((distinct,),) = session.sql(f"SELECT count(DISTINCT {column}) FROM events").fetchall()
        assert len(labelled) == distinct > 1, dimension
        assert None in pivot.by[dimension].labels  # host events have no op category, program or line


def test_an_empty_area_has_no_rows_and_its_sql_none():
    trace = open_trace(TPU_TRACE)
    tracks = trace.track_list()
    session = QuerySession(TraceAnalysis(trace))
    pivot = pivot_area(tracks, -10_000, -1)
    assert pivot.events == 0
    for dimension in DIMENSION_KEYS:
        assert len(pivot.by[dimension]) == 0
        query = area_pivot_sql(dimension, -10_000, -1, range(len(tracks)), len(tracks))
        assert _sql_rows(session, query) == {}
    assert _sql_rows(session, area_pivot_sql("name", 0, trace.duration_ps, [], len(tracks))) == {}


def test_track_condition_writes_runs():
    assert track_condition(range(5), 5) == ""
    assert track_condition([0, 1, 2, 4, 7, 8], 10) == (
        "AND (track_id BETWEEN 0 AND 2 OR track_id BETWEEN 7 AND 8 OR track_id IN (4))"
    )
    assert track_condition([], 3) == "AND false"


def test_sums_past_float_precision_stay_exact():
    # Clipped times of a long selection over many tracks can sum past 2**53 ps (2.5 hours); there
    # float weights would round, so the integer path must give SQL's exact sums.
    values = np.array([2**53 - 1, 3, 5, 2**52 + 1, 7], np.int64)
    bins = np.array([0, 0, 1, 0, 2])
    assert exact_bincount(bins, values, 4).tolist() == [2**53 - 1 + 3 + 2**52 + 1, 5, 7, 0]
    assert exact_bincount(bins, values % 1000, 4).tolist() == [
        int(sum(values[bins == b] % 1000)) for b in range(4)
    ]


@pytest.mark.parametrize("path", PROFILES[:3], ids=lambda p: p.name[:40])
def test_parent_id_is_the_enclosing_event_one_level_up(path):
    session = QuerySession(open_trace(path))
    ((nested, with_parent, wrong),) = session.sql(
        """SELECT count(*) FILTER (WHERE c.depth > 0), count(c.parent_id),
                  count(*) FILTER (WHERE p.depth != c.depth - 1 OR p.track_id != c.track_id
                                   OR p.ts_ps > c.ts_ps OR p.ts_ps + p.dur_ps < c.ts_ps + c.dur_ps)
           FROM events c LEFT JOIN events p ON p.id = c.parent_id"""
    ).fetchall()
    assert 0 < with_parent <= nested and wrong == 0
    # an event without a parent has no event one level up around it (async rows stack, not nest)
    ((orphans_inside,),) = session.sql(
        """SELECT count(*) FROM events c JOIN events p
             ON p.track_id = c.track_id AND p.depth = c.depth - 1
            AND p.ts_ps <= c.ts_ps AND p.ts_ps + p.dur_ps >= c.ts_ps + c.dur_ps AND c.dur_ps > 0
           WHERE c.parent_id IS NULL"""
    ).fetchall()
    assert orphans_inside == 0
