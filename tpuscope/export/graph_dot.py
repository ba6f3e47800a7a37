"""The HLO graph around an op as Graphviz DOT text (`tpuscope graph --dot`), for `dot -Tsvg` or any
DOT viewer; the grammar is Graphviz's (https://graphviz.org/doc/info/lang.html): every name and
label is a double-quoted string with `"` and `\\` escaped, so HLO names (`copy-done.2`) need no care.

Nodes are boxes labelled with name, opcode, shape and device time, filled by their share of the
largest device time in the picture (white to orange); a fusion's fused instructions sit in a
cluster named after it; each fusion hint is the tooltip and label of its edge.
"""

from __future__ import annotations

from tpuscope.analysis.op_graph import OpGraph
from tpuscope.model.units import format_duration

# Fill colours from no device time to the most in the picture (ColorBrewer "Oranges", 5 classes:
# Cynthia Brewer, https://colorbrewer2.org, Apache-2.0 licence).
HEAT_COLOURS = ("#ffffff", "#fdd0a2", "#fdae6b", "#fd8d3c", "#e6550d")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# The share of the largest device time in the picture each class starts at (our heuristic: device
# times of neighbouring ops span orders of magnitude, a 2 us copy-start beside a 3 s fusion, so the
# classes are spaced by factors rather than evenly).
HEAT_SHARES = (0.01, 0.1, 0.5)


def heat_class(time_ps: int, most_ps: int) -> int:
    """0 for no time, else 1..4 by the share of the largest time in the picture (`HEAT_SHARES`);
    the Graph view fills its boxes by the same classes."""
    if time_ps <= 0 or most_ps <= 0:
        return 0
    return 1 + sum(time_ps >= share * most_ps for share in HEAT_SHARES)


def to_dot(found: OpGraph) -> str:
    """`found` as one DOT digraph (module docstring)."""
    part, graph = found.part, found.part.graph
    most = int(part.self_ps.max()) if len(part.self_ps) else 0
    lines = [
        f"digraph {_quote('HLO around ' + found.op)} {{",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    clusters: dict[int, list[str]] = {}
    for k in range(len(part.nodes)):
        node = int(part.nodes[k])
        time = int(part.self_ps[k])
        label = f"{graph.names[node]}\n{graph.opcode[node]}"
        if graph.fusion_kind[node]:
            label += f" ({graph.fusion_kind[node]})"
        label += f"\n{graph.shape[node]}"
        if time > 0:
            label += f"\n{format_duration(time)}"
        attributes = f"label={_quote(label)}, fillcolor={_quote(HEAT_COLOURS[heat_class(time, most)])}"
        if node == part.center:
            attributes += ", penwidth=3"
        line = f"  {_quote(graph.names[node])} [{attributes}];"
        owner = int(graph.fused_into[node])
        if owner >= 0:
            clusters.setdefault(owner, []).append(line)
        else:
            lines.append(line)
    for number, (owner, members) in enumerate(sorted(clusters.items())):
        lines.append(f"  subgraph {_quote(f'cluster_{number}')} {{")
        lines.append(f"    label={_quote('fused into ' + graph.names[owner])}; style=dashed;")
        lines.extend("  " + m for m in members)
        lines.append("  }")
    hints = {(h.producer, h.consumer): h.reason for h in found.hints}
    for a, b in zip(part.edge_src.tolist(), part.edge_dst.tolist(), strict=True):
        source, target = graph.names[int(part.nodes[a])], graph.names[int(part.nodes[b])]
        reason = hints.get((source, target))
        extra = f" [tooltip={_quote(reason)}, style=dashed, color={_quote('#b03a2e')}]" if reason else ""
        lines.append(f"  {_quote(source)} -> {_quote(target)}{extra};")
    lines.append("}")
    return "\n".join(lines) + "\n"
