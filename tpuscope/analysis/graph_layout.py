"""A layered drawing of a directed graph, top to bottom: the HLO graph around an op.

The method is Sugiyama's (K. Sugiyama, S. Tagawa, M. Toda, "Methods for Visual Understanding of
Hierarchical System Structures", IEEE Trans. SMC 11(2), 1981): every node gets a layer so that
edges point down, edges spanning several layers pass through one dummy node per layer they cross,
each layer is ordered to cross fewer edges by the barycenter heuristic (a node moves to the mean
position of its neighbours in the layer above, then below, sweep after sweep; the order with the
fewest crossings seen is kept), and the nodes are placed left to right in that order, as near their
neighbours as the spacing allows, never overlapping.

The graph and its layers come from rustworkx (Apache-2.0; `topological_generations`: a node's layer
is the longest path to it from a source, then a node without operands moves down to just above its
first user); a cycle (not in HLO, whose computations are acyclic)
falls back to layers by breadth-first distance, its upward edges drawn as they fall. The rest is
numpy. No external binary (Graphviz) is needed.
"""

from __future__ import annotations

import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.records import record

SWEEPS = 24  # barycenter sweeps (down and up count one each); Sugiyama et al. iterate to a fixed point
NODE_GAP = 24.0  # horizontal space between neighbouring boxes, in the caller's units
LAYER_GAP = 40.0  # vertical space between layers
PLACEMENT_PASSES = 8  # rounds of pulling nodes toward their neighbours' mean x


@record(frozen=True)
class Layout:
    """Where each node goes (its box's centre) and the path of each edge.

    `x`, `y`, `layer` are per node; `edge_paths[k]` is edge k's points (source centre, the
    dummy nodes it passes, target centre) as an (m, 2) array; `crossings` is the count of edge
    crossings between adjacent layers of the order chosen."""

    x: np.ndarray
    y: np.ndarray
    layer: np.ndarray
    edge_paths: list[np.ndarray]
    crossings: int
    width: float
    height: float


def layers_of(count: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Each node's layer: the longest path to it from a node without operands (module docstring)."""
    import rustworkx as rx

    graph = rx.PyDiGraph(check_cycle=False, multigraph=False)
    graph.add_nodes_from(range(count))
    graph.add_edges_from_no_data([(int(a), int(b)) for a, b in zip(src, dst, strict=True) if a != b])
    layer = np.zeros(count, np.int64)
    try:
        for depth, generation in enumerate(rx.topological_generations(graph)):
            layer[list(generation)] = depth
    except rx.DAGHasCycle:
        return _breadth_first_layers(count, src, dst)
    return _sources_near_their_users(layer, src, dst)


def _sources_near_their_users(layer: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Moves each node without operands (a constant, a parameter) down to the layer just above its
    first user: longest-path layering puts every source on the top layer, so a constant read at the
    bottom would draw a long edge down the whole picture (and out of its fusion's frame)."""
    forward = layer[src] < layer[dst]
    src, dst = src[forward], dst[forward]
    has_operand = np.zeros(len(layer), bool)
    has_operand[dst] = True
    first_user = np.full(len(layer), np.iinfo(np.int64).max)
    np.minimum.at(first_user, src, layer[dst])
    movable = ~has_operand & (first_user < np.iinfo(np.int64).max)
    moved = layer.copy()
    moved[movable] = first_user[movable] - 1
    return moved


def _breadth_first_layers(count: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Layers by distance from the nodes nothing points to (or node 0), for graphs with cycles."""
    layer = np.full(count, -1, np.int64)
    starts = np.setdiff1d(np.arange(count), order_statistics.sorted_distinct(dst), assume_unique=True)
    frontier = starts if len(starts) else np.array([0])
    depth = 0
    while len(frontier):
        layer[frontier] = depth
        nxt = order_statistics.sorted_distinct(dst[order_statistics.isin(src, frontier)])
        frontier = nxt[layer[nxt] < 0]
        depth += 1
    layer[layer < 0] = 0
    return layer


def layout(
    widths: np.ndarray,
    heights: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    sweeps: int = SWEEPS,
    node_gap: float = NODE_GAP,
    layer_gap: float = LAYER_GAP,
) -> Layout:
    """Lays out nodes of the given box sizes with edges src -> dst (module docstring)."""
    count = len(widths)
    widths = np.asarray(widths, float)
    heights = np.asarray(heights, float)
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    if count == 0:
        return Layout(np.zeros(0), np.zeros(0), np.zeros(0, np.int64), [], 0, 0.0, 0.0)
    layer = layers_of(count, src, dst)
    # Dummy nodes: an edge from layer a to layer b > a + 1 passes through one per layer between.
    chain_src: list[int] = []
    chain_dst: list[int] = []
    node_layer = list(layer.tolist())
    paths: list[list[int]] = []
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        top, bottom = (a, b) if layer[a] <= layer[b] else (b, a)
        path = [top]
        for depth in range(int(layer[top]) + 1, int(layer[bottom])):
            node_layer.append(depth)
            path.append(len(node_layer) - 1)
        path.append(bottom)
        for u, v in zip(path[:-1], path[1:], strict=True):
            if u != v:
                chain_src.append(u)
                chain_dst.append(v)
        paths.append(path if top == a else path[::-1])
    all_layers = np.asarray(node_layer, np.int64)
    total = len(all_layers)
    up = np.asarray(chain_src, np.int64)
    down = np.asarray(chain_dst, np.int64)
    order = _order(all_layers, up, down, sweeps)
    crossings = _crossings(all_layers, order, up, down)
    box = np.concatenate((widths, np.zeros(total - count)))
    x = _place(all_layers, order, box, up, down, node_gap)
    depth_count = int(all_layers.max()) + 1
    layer_height = np.zeros(depth_count)
    np.maximum.at(layer_height, layer, heights)
    tops = np.concatenate(([0.0], np.cumsum(layer_height + layer_gap)[:-1]))
    y_all = tops[all_layers] + layer_height[all_layers] / 2
    edge_paths = [np.column_stack((x[path], y_all[path])) for path in paths]
    shift = float(np.min(x[:count] - widths / 2)) if count else 0.0
    shift = min(shift, float(x.min()))
    x = x - shift
    for points in edge_paths:
        points[:, 0] -= shift
    right = float(np.max(x[:count] + widths / 2))
    return Layout(
        x=x[:count],
        y=y_all[:count],
        layer=layer,
        edge_paths=edge_paths,
        crossings=crossings,
        width=right,
        height=float(tops[-1] + layer_height[-1]),
    )


def _order(layer: np.ndarray, up: np.ndarray, down: np.ndarray, sweeps: int) -> np.ndarray:
    """Each node's position within its layer, by barycenter sweeps (module docstring)."""
    total = len(layer)
    position = np.zeros(total)
    for depth in range(int(layer.max()) + 1):  # the first order: as the nodes come
        members = np.flatnonzero(layer == depth)
        position[members] = np.arange(len(members))
    best = position.copy()
    best_crossings = _crossings(layer, position, up, down)
    depths = int(layer.max()) + 1
    for sweep in range(sweeps):
        downward = sweep % 2 == 0
        sequence = range(1, depths) if downward else range(depths - 2, -1, -1)
        for depth in sequence:
            members = np.flatnonzero(layer == depth)
            # Neighbours in the layer just swept: above when going down, below when going up.
            ends, others = (down, up) if downward else (up, down)
            linked = order_statistics.isin(ends, members)
            sums = np.zeros(total)
            counts = np.zeros(total)
            np.add.at(sums, ends[linked], position[others[linked]])
            np.add.at(counts, ends[linked], 1)
            current = position[members]
            # A node without neighbours there keeps its place (Sugiyama et al.'s rule).
            bary = np.where(counts[members] > 0, sums[members] / np.maximum(counts[members], 1), current)
            ranked = members[np.lexsort((current, bary))]
            position[ranked] = np.arange(len(ranked))
        found = _crossings(layer, position, up, down)
        if found < best_crossings:
            best, best_crossings = position.copy(), found
            if found == 0:
                break
    return best


def _crossings(layer: np.ndarray, position: np.ndarray, up: np.ndarray, down: np.ndarray) -> int:
    """Edge crossings between adjacent layers: two edges between the same pair of layers cross
    when their ends are in opposite orders (edges here always join adjacent layers)."""
    if not len(up):
        return 0
    top_layer = np.minimum(layer[up], layer[down])
    a = np.where(layer[up] <= layer[down], position[up], position[down])
    b = np.where(layer[up] <= layer[down], position[down], position[up])
    total = 0
    for depth in order_statistics.sorted_distinct(top_layer):
        pick = top_layer == depth
        pa, pb = a[pick], b[pick]
        da = np.sign(pa[:, None] - pa[None, :])
        db = np.sign(pb[:, None] - pb[None, :])
        total += int(np.count_nonzero(da * db < 0)) // 2
    return total


def _place(
    layer: np.ndarray, position: np.ndarray, box: np.ndarray, up: np.ndarray, down: np.ndarray, gap: float
) -> np.ndarray:
    """x of each node: layers packed left to right in their order, then pulled toward their
    neighbours' mean x, keeping the order and at least `gap` between boxes."""
    total = len(layer)
    x = np.zeros(total)
    rows = [np.flatnonzero(layer == depth) for depth in range(int(layer.max()) + 1)]
    rows = [members[np.argsort(position[members], kind="stable")] for members in rows]
    for members in rows:
        half = box[members] / 2
        steps = np.concatenate(([0.0], half[:-1] + half[1:] + gap))
        x[members] = np.cumsum(steps)
        x[members] -= x[members].mean()
    ends = np.concatenate((up, down))
    others = np.concatenate((down, up))
    for _ in range(PLACEMENT_PASSES):
        sums = np.zeros(total)
        counts = np.zeros(total)
        np.add.at(sums, ends, x[others])
        np.add.at(counts, ends, 1)
        wanted = np.where(counts > 0, sums / np.maximum(counts, 1), x)
        for members in rows:
            x[members] = _spread(wanted[members], box[members], gap)
    return x


def _spread(wanted: np.ndarray, box: np.ndarray, gap: float) -> np.ndarray:
    """Positions as near `wanted` as possible, in the given order, boxes at least `gap` apart:
    each box is pushed right of the one before, then the row is centred on what was wanted."""
    if len(wanted) == 0:
        return wanted
    half = box / 2
    need = np.concatenate(([0.0], half[:-1] + half[1:] + gap))  # minimum step to the next centre
    placed = wanted.copy()
    for k in range(1, len(placed)):
        placed[k] = max(placed[k], placed[k - 1] + need[k])
    # Pushing right drifts the row; move it back by the mean drift (spacing is kept).
    return placed - float(np.mean(placed - wanted))
