"""`tpuscope graph PATH OP`: the HLO graph around an op (its operands and users, N hops out), with each
instruction's opcode, shape and device time, as text, JSON or Graphviz DOT."""

from __future__ import annotations

from tpuscope.analysis.hlo_graph import DEFAULT_RADIUS
from tpuscope.analysis.op_graph import MAX_RADIUS, OpGraph
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.payloads import RequestError, op_graph_of
from tpuscope.commands import COMMANDS, UserFacingError
from tpuscope.commands._console import add_path_argument, load_for_cli, print_json
from tpuscope.model.units import format_duration

SHAPE_WIDTH = 44  # characters of a shape shown in the text table; --json has it whole


def register(subparsers) -> None:
    parser = subparsers.add_parser("graph", help=COMMANDS["graph"])
    add_path_argument(parser)
    parser.add_argument("op", help="the HLO op (instruction) name, as the op table lists it, e.g. fusion.3")
    parser.add_argument(
        "--radius", type=int, default=DEFAULT_RADIUS,
        help=f"hops from the op, along operands and users (default {DEFAULT_RADIUS}, at most {MAX_RADIUS})",
    )  # fmt: skip
    parser.add_argument("--expand", action="store_true", help="also show the instructions each fusion fused")
    parser.add_argument(
        "--program", metavar="NAME|ID", help="the program to look in when several have an op of that name"
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print machine-readable JSON")
    output.add_argument("--dot", action="store_true", help="print Graphviz DOT")
    parser.set_defaults(handler=run)


def run(args) -> int:
    analysis = TraceAnalysis(load_for_cli(args))
    try:
        found = op_graph_of(analysis, args.op, args.radius, args.expand, args.program, args.path)
    except RequestError as error:
        raise UserFacingError(str(error)) from None
    if args.json:
        print_json(found.to_json())  # what the MCP server's graph tool returns too
        return 0
    if args.dot:
        from tpuscope.export.graph_dot import to_dot

        print(to_dot(found), end="")
    else:
        _print_text(found)
    return 0


def _print_text(found: OpGraph) -> None:
    part, graph = found.part, found.part.graph
    print(
        f"HLO around {found.op} in {found.program_label}, radius {part.radius}: "
        f"{len(part)} instructions, {len(part.edge_src)} edges"
        + (" (cut at the node limit)" if part.truncated else "")
    )
    if found.place.others:
        others = ", ".join(str(p) for p in found.place.others)
        print(f"Also named so in programs {others} (--program picks one).")
    print()
    width = max([len("name")] + [len(graph.names[int(n)]) for n in part.nodes])
    print(f"{'hops':>4}  {'name':<{width}}  {'opcode':<14}  {'shape':<{SHAPE_WIDTH}}  device time")
    for k in range(len(part)):
        node = int(part.nodes[k])
        hops = str(int(part.distance[k])) if part.distance[k] >= 0 else "in"
        shape = graph.shape[node]
        shape = shape if len(shape) <= SHAPE_WIDTH else shape[: SHAPE_WIDTH - 1] + "…"
        time = format_duration(int(part.self_ps[k])) if part.self_ps[k] > 0 else "-"
        name, opcode = graph.names[node], graph.opcode[node]
        print(f"{hops:>4}  {name:<{width}}  {opcode:<14}  {shape:<{SHAPE_WIDTH}}  {time}")
    if len(part.edge_src):
        print("\nEdges (operand -> user):")
        for a, b in zip(part.edge_src.tolist(), part.edge_dst.tolist(), strict=True):
            print(f"  {graph.names[int(part.nodes[a])]} -> {graph.names[int(part.nodes[b])]}")
    if found.hints:
        print("\nNot fused, and why:")
        for hint in found.hints:
            print(f"  {hint.producer} -> {hint.consumer}: {hint.reason}")
