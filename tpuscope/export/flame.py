"""A flame tree (`tpuscope.analysis.scope_tree.FlameTree`) in the files flame-graph tools open.

- folded stacks, Brendan Gregg's format (github.com/brendangregg/FlameGraph, README "2. Fold
  stacks"), which flamegraph.pl, inferno and speedscope read: one line per path with time of its
  own, frames root first joined by `;`, a space, then the count: here the device self time in whole
  nanoseconds (rounded so that the counts add up to the total, `FlameTree.leaf_counts_ns`). A `;`
  inside a frame name would start a new frame: it is written as `:`.
- speedscope's own file format (github.com/jlfwong/speedscope, src/lib/file-format-spec.ts; the
  schema at https://www.speedscope.app/file-format-schema.json): `shared.frames` once, one
  "sampled" profile whose samples are the same paths (frame indices, root first) weighted by their
  nanoseconds.
- JSON: every node with its parent, self and total time, for scripts.

Times are the tree's, in nanoseconds (folded, speedscope) or microseconds (JSON, like `ops --json`).
"""

from __future__ import annotations

from typing import Any

from tpuscope.analysis.scope_tree import ROOT_NAME, FlameTree

FORMATS = ("folded", "speedscope", "json")
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"
FOLDED_SEPARATOR = ";"
FOLDED_SEPARATOR_STANDIN = ":"
# How a fusion's time is split, in words, for every output that shows an estimate.
FUSION_SPLIT_NOTE = (
    "a fusion's device time is split among the scopes of the instructions it fused, in proportion to "
    "each one's estimated time (XLA HloCostAnalysis: max(FLOPs / peak FLOP/s, bytes accessed / peak "
    "bandwidth) from the instruction's shapes); `tpuscope flame --fusion root` keeps each fusion on its "
    "root instruction's scope"
)
ESTIMATE_FRAMES_NOTE = "frames ending in '[<fusion>: est. share]' are estimates: " + FUSION_SPLIT_NOTE


def _frame_text(name: str) -> str:
    return name.replace(FOLDED_SEPARATOR, FOLDED_SEPARATOR_STANDIN).replace("\n", " ")


def folded_lines(tree: FlameTree) -> list[str]:
    """`frame;frame;... COUNT` per node with self time, in node order (root left out)."""
    nodes, counts = tree.leaf_counts_ns()
    lines = []
    for node, count in zip(nodes.tolist(), counts.tolist(), strict=True):
        if node == 0 or count <= 0:
            continue
        path = FOLDED_SEPARATOR.join(_frame_text(tree.name(k)) for k in tree.path(node))
        lines.append(f"{path} {count}")
    root_count = dict(zip(nodes.tolist(), counts.tolist(), strict=True)).get(0, 0)
    if root_count > 0:  # time of the root itself (no op lands there, but keep the sum whole)
        lines.append(f"{ROOT_NAME} {root_count}")
    return lines


def speedscope_document(tree: FlameTree, name: str, exporter: str) -> dict[str, Any]:
    """The tree as a speedscope file (module docstring)."""
    nodes, counts = tree.leaf_counts_ns()
    frame_index: dict[int, int] = {}
    by_frame: dict[tuple[str, str, int], int] = {}
    frames: list[dict[str, Any]] = []
    samples: list[list[int]] = []
    weights: list[int] = []

    def index_of(node: int) -> int:
        found = frame_index.get(node)
        if found is None:
            frame = tree.frames[node]
            entry: dict[str, Any] = {"name": frame.name}
            if frame.file:
                entry["file"] = frame.file
                if frame.line > 0:
                    entry["line"] = frame.line
            # Frames of one name at different places of the tree are one speedscope frame.
            key = by_frame.get((frame.name, frame.file, frame.line))
            if key is None:
                key = by_frame[(frame.name, frame.file, frame.line)] = len(frames)
                frames.append(entry)
            found = frame_index[node] = key
        return found

    for node, count in zip(nodes.tolist(), counts.tolist(), strict=True):
        if node == 0 or count <= 0:
            continue
        samples.append([index_of(k) for k in tree.path(node)])
        weights.append(int(count))
    total = int(sum(weights))
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        "shared": {"frames": frames},
        "profiles": [
            {
                "type": "sampled",
                "name": name,
                "unit": "nanoseconds",
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": weights,
            }
        ],
        "name": name,
        "activeProfileIndex": 0,
        "exporter": exporter,
    }


def tree_json(tree: FlameTree) -> list[dict[str, Any]]:
    """Every node (the root first, parents before children) with its times in microseconds."""
    total = tree.total_self_ps or 1.0
    return [
        {
            "id": k,
            "name": tree.name(k),
            "parent": int(tree.parent[k]),
            "depth": int(tree.depth[k]),
            "self_time_us": float(tree.self_ps[k]) / 1e6,
            "total_time_us": float(tree.total_ps[k]) / 1e6,
            "percent": float(tree.total_ps[k]) * 100.0 / total,
            "estimated": bool(tree.estimated[k]),
        }
        for k in range(len(tree))
    ]
