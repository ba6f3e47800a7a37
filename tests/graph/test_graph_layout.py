"""The layered layout (tpuscope.analysis.graph_layout): edges point down the layers, boxes never
overlap, barycenter ordering removes the crossings a bad first order has, and the real HLO graphs
of the shared profiles lay out the same way."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import GPU_TRACE, TPU_TRACE
from tpuscope.analysis.graph_layout import LAYER_GAP, NODE_GAP, layers_of, layout
from tpuscope.analysis.op_graph import op_graph
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace


def _random_dag(rng: np.random.Generator, count: int, edges: int) -> tuple[np.ndarray, np.ndarray]:
    a = rng.integers(0, count, edges)
    b = rng.integers(0, count, edges)
    keep = a != b
    a, b = a[keep], b[keep]
    return np.minimum(a, b), np.maximum(a, b)  # lower to higher number: acyclic


def _assert_sound(widths, heights, src, dst, placed) -> None:
    layer = placed.layer
    assert np.all(layer[src] < layer[dst]), "an edge points up or along a layer"
    for depth in np.unique(layer):
        members = np.flatnonzero(layer == depth)
        order = members[np.argsort(placed.x[members])]
        left = placed.x[order] - widths[order] / 2
        right = placed.x[order] + widths[order] / 2
        assert np.all(left[1:] >= right[:-1] + NODE_GAP - 1e-6), "two boxes of a layer overlap"
        assert np.allclose(placed.y[members], placed.y[members[0]])
    tops = placed.y - heights / 2
    bottoms = placed.y + heights / 2
    for a in np.unique(layer)[:-1]:
        above = np.flatnonzero(layer == a)
        below = np.flatnonzero(layer == a + 1)
        assert bottoms[above].max() + LAYER_GAP - 1e-6 <= tops[below].min()
    assert np.all(placed.x - widths / 2 >= -1e-6)
    assert len(placed.edge_paths) == len(src)
    for k, points in enumerate(placed.edge_paths):
        assert np.allclose(points[0], (placed.x[src[k]], placed.y[src[k]]))
        assert np.allclose(points[-1], (placed.x[dst[k]], placed.y[dst[k]]))
        assert np.all(np.diff(points[:, 1]) > 0)  # each edge runs straight down the layers


@pytest.mark.parametrize("seed", range(8))
def test_random_dags_layer_down_without_overlap(seed):
    rng = np.random.default_rng(seed)
    count = int(rng.integers(5, 60))
    src, dst = _random_dag(rng, count, int(rng.integers(count, 3 * count)))
    widths = rng.uniform(40, 260, count)
    heights = rng.uniform(30, 80, count)
    placed = layout(widths, heights, src, dst)
    _assert_sound(widths, heights, src, dst, placed)


def test_layers_are_longest_paths():
    # 0 -> 1 -> 2 and 0 -> 2: node 2 is on layer 2, not 1.
    assert layers_of(3, np.array([0, 1, 0]), np.array([1, 2, 2])).tolist() == [0, 1, 2]


def test_barycenter_ordering_removes_crossings_of_a_bad_first_order():
    # Two layers, each top node i joined to bottom node perm[i]: drawn in the given order the
    # edges cross many times; an order without crossings exists (bottom sorted by its top).
    perm = np.array([4, 2, 0, 5, 3, 1])
    src = np.arange(6)
    dst = 6 + perm
    placed = layout(np.full(12, 60.0), np.full(12, 30.0), src, dst)
    assert placed.crossings == 0
    order_top = np.argsort(placed.x[:6])
    order_bottom = np.argsort(placed.x[6 + perm])
    assert order_top.tolist() == order_bottom.tolist()


def test_a_cycle_still_lays_out():
    placed = layout(np.full(3, 50.0), np.full(3, 20.0), np.array([0, 1, 2]), np.array([1, 2, 0]))
    assert len(placed.x) == 3 and len(placed.edge_paths) == 3


REAL_OPS = [(TPU_TRACE, "broadcast_add_fusion.1"), (GPU_TRACE, "loop_reduce_fusion")]


@pytest.mark.parametrize(("path", "op"), REAL_OPS)
def test_real_hlo_neighbourhoods_lay_out(path, op):
    analysis = TraceAnalysis(open_trace(path))
    found = op_graph(analysis, op, radius=3, expand=True)
    part = found.part
    count = len(part)
    widths = np.full(count, 180.0)
    heights = np.full(count, 60.0)
    placed = layout(widths, heights, part.edge_src, part.edge_dst)
    _assert_sound(widths, heights, part.edge_src, part.edge_dst, placed)
