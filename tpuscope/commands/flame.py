"""`tpuscope flame PATH`: device time as a flame graph of the model's structure (named scopes, Python
stacks, programs and ops), as folded stacks, a speedscope file or JSON.

The counts are the op table's self times (`tpuscope ops`): folded counts add up to its total self time
in nanoseconds. By scope and stack, a fusion's time is split among the scopes of what it fused (an
estimate, marked in the frames; `--fusion root` keeps XProf's attribution to the fusion's root).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.analysis.scope_tree import (
    BY_OP,
    BY_SCOPE,
    FLAME_GROUPINGS,
    FUSION_MODES,
    FUSION_SPLIT,
    FlameTree,
    flame_tree,
    flame_tree_result,
)
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.payloads import flame_json
from tpuscope.commands import COMMANDS, UserFacingError
from tpuscope.commands._console import add_path_argument, load_for_cli, print_json
from tpuscope.export.flame import (
    ESTIMATE_FRAMES_NOTE,
    FORMATS,
    folded_lines,
    speedscope_document,
)
from tpuscope.model import order_statistics


def register(subparsers) -> None:
    parser = subparsers.add_parser("flame", help=COMMANDS["flame"])
    add_path_argument(parser)
    parser.add_argument(
        "--by", choices=FLAME_GROUPINGS, default=BY_SCOPE,
        help="framework scope path (default), Python call stack, or program/category/op",
    )  # fmt: skip
    parser.add_argument(
        "--format", choices=FORMATS, default="folded",
        help="folded stacks for flamegraph.pl/inferno (default), a speedscope file, or JSON",
    )  # fmt: skip
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    parser.add_argument(
        "--fusion", choices=FUSION_MODES, default=FUSION_SPLIT,
        help="split a fusion's time among the scopes it fused, by estimated cost (default), "
        "or keep it on its root instruction's scope",
    )  # fmt: skip
    parser.add_argument(
        "--device", default="all",
        help="'all' (default), a device number N (position in the device list), or a kind: TPU, GPU, CPU",
    )  # fmt: skip
    parser.add_argument(
        "--program", metavar="NAME|ID", help="only this program: `jit_f(123)`, its name or its id"
    )
    parser.add_argument(
        "--steps", metavar="FIRST[:LAST]",
        help="only ops starting in these steps (step numbers as `overview` lists them, LAST included)",
    )  # fmt: skip
    parser.set_defaults(handler=run)


def run(args) -> int:
    analysis = TraceAnalysis(load_for_cli(args))
    devices = analysis.devices
    if not devices:
        raise UserFacingError(
            f"{args.path} holds no device ops: no TPU `XLA Ops`, no GPU kernels and no XLA:CPU thunks."
        )
    if not analysis.chosen_devices(args.device):
        names = ", ".join(f"{i}={d.name}" for i, d in enumerate(devices))
        raise UserFacingError(f"--device {args.device} matches no device; the profile has: {names}.")
    tree = _tree(analysis, args)
    payload = None
    if args.format == "speedscope":
        payload = speedscope_document(tree, f"{Path(args.path).name} by {args.by}", "tpuscope")
    elif args.format == "json":
        payload = flame_json(analysis, tree, args.by, args.fusion, args.device)  # the MCP flame tool's too
    if args.output:
        text = json.dumps(payload) if payload is not None else "".join(f"{x}\n" for x in folded_lines(tree))
        try:
            Path(args.output).write_text(text)
        except OSError as error:
            raise UserFacingError(f"cannot write {args.output}: {error.strerror or error}.") from None
        print(f"wrote {args.output} ({len(tree) - 1} frames, {args.format})", file=sys.stderr)
    elif payload is not None:
        print_json(payload)
    else:
        sys.stdout.write("".join(f"{line}\n" for line in folded_lines(tree)))
    if tree.has_estimates:
        print(f"tpuscope: note: {ESTIMATE_FRAMES_NOTE}.", file=sys.stderr)
    return 0


def _tree(analysis: TraceAnalysis, args) -> FlameTree:
    """The tree of the chosen devices, programs and steps (the shared result when none is narrowed)."""
    if args.program is None and args.steps is None:
        found = analysis.get(flame_tree_result(args.by, args.fusion, args.device))
        assert found is not None  # the chosen devices exist, so they have op events
        return found
    table = analysis.op_table("op", args.device)
    assert table is not None
    events = table.events
    keep = np.ones(len(events), bool)
    if args.program is not None:
        keep &= _program_mask(table, args.program)
    if args.steps is not None:
        keep &= _steps_mask(analysis, events, args.steps)
    code = analysis.get(PROGRAM_CODE) if args.by != BY_OP else None
    return flame_tree(table, code, args.by, args.fusion, keep)


def _program_mask(table, wanted: str) -> np.ndarray:
    """Events of the program named `wanted`: its label (`jit_f(123)`), module name or id."""
    labels = table.labels
    matching = [
        k for k, text in enumerate(labels)
        if k and (text == wanted or text.split("(")[0] == wanted or text.endswith(f"({wanted})"))
    ]  # fmt: skip
    mask = order_statistics.isin(table.events.program, matching)
    if not mask.any():
        programs = sorted({labels[int(p)] for p in order_statistics.sorted_distinct(table.program) if p})
        raise UserFacingError(
            f"--program {wanted} matches no program; the profile has: {', '.join(programs) or 'none'}."
        )
    return mask


def _steps_mask(analysis: TraceAnalysis, events, text: str) -> np.ndarray:
    """Events starting inside steps FIRST..LAST (step numbers), both included."""
    steps = analysis.steps
    first_text, _, last_text = text.partition(":")
    try:
        first = int(first_text)
        last = int(last_text) if last_text else first
    except ValueError:
        raise UserFacingError(f"--steps takes FIRST or FIRST:LAST step numbers, not {text!r}.") from None
    inside = np.flatnonzero((steps.number >= first) & (steps.number <= last))
    if not len(inside):
        shown = f"{steps.number[0]}..{steps.number[-1]}" if len(steps) else "none"
        raise UserFacingError(f"--steps {text} matches no step; the profile's steps are {shown}.")
    t0, t1 = int(steps.start_ps[inside].min()), int(steps.end_ps[inside].max())
    starts = [track.start_ps[indices] for track, indices, _ in events.segments]
    start_ps = np.concatenate(starts) if starts else np.empty(0, np.int64)
    return (start_ps >= t0) & (start_ps < t1)
