"""`tpuscope ops --by scope [--depth N]`: the flame tree by framework scope (`tpuscope flame --by scope`)
as a table, its paths cut at N levels: each row a scope path and the device self time under it.

Rows are the tree's nodes at depth N (their whole subtree's time) and the shallower nodes' own time, so
the rows add up to the op table's total self time. A fusion's time is split among the scopes it fused
(an estimate, marked `~` in the text and `estimated` in JSON and CSV), as in `tpuscope flame`.
"""

from __future__ import annotations

import csv
import sys

from tpuscope.analysis.scope_tree import BY_SCOPE, FUSION_SPLIT, SCOPE_SEPARATOR, FlameTree, flame_tree_result
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.commands import UserFacingError
from tpuscope.commands._console import load_for_cli, print_json
from tpuscope.export.flame import FUSION_SPLIT_NOTE
from tpuscope.model.units import format_duration

SCOPE = "scope"
DEFAULT_DEPTH = 3  # levels shown by default: `jit(f)/blocks/block_1`
SCOPE_WIDTH = 70  # the longest path shown whole; longer ones keep their end
CSV_FIELDS = ("name", "depth", "self_time_us", "percent", "cumulative_percent", "estimated")


def scope_rows(tree: FlameTree, depth: int) -> list[dict]:
    """Rows of the tree cut at `depth` levels (module docstring), most time first."""
    cut = [k for k in range(1, len(tree)) if tree.depth[k] == depth]
    shallow = [k for k in range(1, len(tree)) if tree.depth[k] < depth and tree.self_ps[k] > 0]
    times = [float(tree.total_ps[k]) for k in cut] + [float(tree.self_ps[k]) for k in shallow]
    nodes = cut + shallow
    order = sorted(range(len(nodes)), key=lambda i: (-times[i], tree.name(nodes[i])))
    total = tree.total_self_ps or 1.0
    rows, running = [], 0.0
    for at in order:
        node, ps = nodes[at], times[at]
        running += ps
        rows.append(
            {
                "name": SCOPE_SEPARATOR.join(tree.name(k) for k in tree.path(node)),
                "depth": int(tree.depth[node]),
                "self_time_us": ps / 1e6,
                "percent": ps * 100.0 / total,
                "cumulative_percent": running * 100.0 / total,
                "estimated": bool(tree.estimated[node]),
            }
        )
    return rows


def run(args) -> int:
    depth = DEFAULT_DEPTH if args.depth is None else args.depth
    if depth < 1:
        raise UserFacingError(f"--depth must be a positive number of scope levels, not {depth}.")
    analysis = TraceAnalysis(load_for_cli(args))
    if not analysis.devices:
        raise UserFacingError(
            f"{args.path} holds no device ops: no TPU `XLA Ops`, no GPU kernels and no XLA:CPU thunks."
        )
    chosen = analysis.chosen_devices(args.device)
    if not chosen:
        names = ", ".join(f"{i}={d.name}" for i, d in enumerate(analysis.devices))
        raise UserFacingError(f"--device {args.device} matches no device; the profile has: {names}.")
    tree = analysis.get(flame_tree_result(BY_SCOPE, FUSION_SPLIT, args.device))
    assert tree is not None  # the chosen devices exist, so they have op events
    rows = scope_rows(tree, depth)[: args.top]
    if args.csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=CSV_FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    elif args.json:
        print_json(
            {
                "devices": [d.label for d in chosen],
                "by": SCOPE,
                "depth": depth,
                "total_self_time_us": tree.total_self_ps / 1e6,
                "estimate_note": FUSION_SPLIT_NOTE if tree.has_estimates else None,
                "rows": rows,
            }
        )
    else:
        _print_text(rows, depth, tree)
    return 0


def _shown(name: str) -> str:
    return name if len(name) <= SCOPE_WIDTH else "…" + name[-SCOPE_WIDTH + 1 :]


def _print_text(rows: list[dict], depth: int, tree: FlameTree) -> None:
    names = [
        r["name"] if len(r["name"]) <= SCOPE_WIDTH else "…" + r["name"][-SCOPE_WIDTH + 1 :] for r in rows
    ]
    width = max([len("scope")] + [len(n) for n in names])
    print(f"Device self time by framework scope, {depth} level{'s' if depth != 1 else ''} deep "
          f"({format_duration(int(tree.total_self_ps))} in all)")  # fmt: skip
    print()
    print(f"  {'scope':<{width}}  {'self':>12}  {'self %':>6}  {'cum %':>6}")
    for name, r in zip(names, rows, strict=True):
        mark = "~" if r["estimated"] else " "
        print(
            f"{mark} {name:<{width}}  {format_duration(r['self_time_us'] * 1e6):>12}  "
            f"{r['percent']:>6.2f}  {r['cumulative_percent']:>6.2f}"
        )
    if any(r["estimated"] for r in rows):
        print(f"\n~ holds an estimate: {FUSION_SPLIT_NOTE}.")
