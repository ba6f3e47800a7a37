"""`tpuscope compare BASE NEW`: did the change help, where, and is it larger than the noise?

The verdict and its cause first (the code, the machine, the input pipeline or compilation), then
the verdict paragraph, configuration differences, step time of both runs with the
change and its 95% interval, the per-step split, the ops whose self time changed most (matched
across recompilations), and the finding changes. `--fail-on-regression PCT` makes it a CI gate
that exits 1 only when NEW is significantly slower by more than PCT percent, and says the cause;
with `--ignore-machine` a change the machine caused does not fail it (the change net of the machine
must pass PCT).
"""

from __future__ import annotations

import argparse

from tpuscope.analysis.compare.ops import OpDelta
from tpuscope.analysis.compare.runs import SPLIT_LABELS, SPLIT_PARTS, Comparison, compare_traces
from tpuscope.commands import COMMANDS, EXIT_FINDINGS, EXIT_OK, UserFacingError
from tpuscope.commands._console import load_for_cli, print_json
from tpuscope.model import order_statistics
from tpuscope.model.units import COLUMN_SPEC, format_duration, format_duration_column
from tpuscope.readers import path_help

TOP_OPS_TEXT = 15
MEMORY_ROWS_TEXT = 8
GROUP_ROWS_TEXT = 5
NAME_CHARS = 40


def register(subparsers) -> None:
    parser = subparsers.add_parser("compare", help=COMMANDS["compare"])
    parser.add_argument("base", help=f"BASE profile: {path_help()}")
    parser.add_argument("new", help="NEW profile, the same kinds of path")
    parser.add_argument("--run-base", help="with a logdir as BASE: the run to open instead of the newest")
    parser.add_argument("--run-new", help="with a logdir as NEW: the run to open instead of the newest")
    parser.add_argument("--no-cache", action="store_true", help="ignore and do not write the trace cache")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--top", type=int, default=TOP_OPS_TEXT, help="ops to list (default %(default)s)")
    parser.add_argument(
        "--fail-on-regression",
        type=float,
        metavar="PCT",
        help="exit 1 when NEW is significantly slower than BASE by more than PCT percent",
    )
    parser.add_argument(
        "--ignore-machine",
        action="store_true",
        help="with --fail-on-regression: do not fail on a change the machine caused (same programs, "
        "every op slower alike); the change net of the machine must pass PCT",
    )
    parser.add_argument(
        "--noise-floor",
        type=float,
        metavar="PCT",
        help="smallest change reported as significant (default 10 on TPU/GPU, 50 when the device is the "
        "host CPU; record one program twice to see your machine's)",
    )
    parser.set_defaults(handler=run)


def _load(path: str, run_name: str | None, no_cache: bool):
    return load_for_cli(argparse.Namespace(path=path, run=run_name, no_cache=no_cache))


def run(args) -> int:
    if args.top < 1:
        raise UserFacingError(f"--top must be a positive number of ops, not {args.top}.")
    if args.fail_on_regression is not None and args.fail_on_regression < 0:
        raise UserFacingError(
            f"--fail-on-regression must be a percentage >= 0, not {args.fail_on_regression}."
        )
    base = _load(args.base, args.run_base, args.no_cache)
    new = _load(args.new, args.run_new, args.no_cache)
    if args.noise_floor is not None and args.noise_floor < 0:
        raise UserFacingError(f"--noise-floor must be a percentage >= 0, not {args.noise_floor}.")
    if args.ignore_machine and args.fail_on_regression is None:
        raise UserFacingError("--ignore-machine goes with --fail-on-regression PCT.")
    comparison = compare_traces(base, new, args.noise_floor)
    failed = args.fail_on_regression is not None and comparison.regressed_by_more_than(
        args.fail_on_regression, args.ignore_machine
    )
    if args.json:
        payload = comparison.to_json(top_ops=None)
        if args.fail_on_regression is not None:
            payload["fail_on_regression_percent"] = args.fail_on_regression
            payload["ignore_machine"] = args.ignore_machine
            payload["regression"] = failed
        print_json(payload)
    else:
        print_text(comparison, args.top)
        if args.fail_on_regression is not None:
            print(gate_sentence(comparison, args.fail_on_regression, args.ignore_machine, failed))
    return EXIT_FINDINGS if failed else EXIT_OK


def gate_sentence(c: Comparison, percent: float, ignore_machine: bool, failed: bool) -> str:
    """What the --fail-on-regression gate decided, and the cause it decided on."""
    cause = f" Cause: {c.cause.kind}." if c.cause is not None else ""
    if failed:
        return f"\nRegression gate: FAILED (NEW slower by more than {percent:g}%).{cause}"
    if ignore_machine and c.cause is not None and c.significant and c.verdict == "slower":
        return f"\nRegression gate: passed (the change net of the machine is within {percent:g}%).{cause}"
    return f"\nRegression gate: passed (no significant slowdown beyond {percent:g}%).{cause}"


def print_text(c: Comparison, top: int = TOP_OPS_TEXT) -> None:
    print(f"BASE: {', '.join(c.base.overview.sources)}")
    print(f"NEW:  {', '.join(c.new.overview.sources)}")
    cause = f" (cause: {c.cause.kind})" if c.cause is not None else ""
    print(f"\nVerdict: {c.verdict.replace('_', ' ')}{cause}")
    print(c.summary)
    differences = [p for p in c.parity if not p.same]
    if differences:
        print("\nConfiguration differences:")
        for p in differences:
            print(f"  {p.aspect}: {p.base}  ->  {p.new}")
    else:
        print("\nConfiguration: same " + ", ".join(p.aspect for p in c.parity) + ".")
    _print_step_time(c)
    _print_split(c)
    _print_ops(c, top)
    _print_groups(c)
    _print_memory(c)
    _print_findings(c)


def _print_step_time(c: Comparison) -> None:
    print("\nStep time (steps that compiled left out):")
    for label, run in (("BASE", c.base), ("NEW ", c.new)):
        steady = run.durations_ps[~run.compiled] if run.steps else run.durations_ps
        if len(steady) == 0:
            print(f"  {label} no steps")
            continue
        print(
            f"  {label} median {format_duration(float(order_statistics.median(steady)))}, p95 "
            f"{format_duration(float(order_statistics.percentile(steady, 95)))}, {len(steady)} steps "
            f"({int(run.compiled.sum())} compiled, left out)"
        )
    for name, change in (("median", c.typical), ("mean with compilation", c.with_compilation)):
        if change is None:
            continue
        low, high = change.ci_low_percent, change.ci_high_percent
        print(
            f"  change of the {name}: {change.change_percent:+.1f}% (95% CI {low:+.1f}%..{high:+.1f}%, "
            f"{'significant' if change.significant else 'not significant'}; {change.method})"
        )


def _print_split(c: Comparison) -> None:
    if c.split is None:
        return
    s = c.split
    print("\nPer-step split (mean per step, BASE -> NEW):")
    # Each column in one unit for all its rows (issue 33).
    base = format_duration_column([s.base_ps[part] for part in SPLIT_PARTS])
    new = format_duration_column([s.new_ps[part] for part in SPLIT_PARTS])
    for part, base_text, new_text in zip(SPLIT_PARTS, base, new, strict=True):
        print(
            f"  {SPLIT_LABELS[part]:<32} {base_text:>10} -> {new_text:>10}"
            f"  ({s.percent('base', part):5.1f}% -> {s.percent('new', part):5.1f}%)"
        )


def _cut(text: str) -> str:
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "…"


def _print_ops(c: Comparison, top: int) -> None:
    rows = c.ops.rows[:top]
    if not rows:
        print("\nNo device ops in either run.")
        return
    per = "per step" if c.ops.per == "step" else "per profile"
    what, column = ("Op categories", "category") if c.across_formats else ("Ops", "op")
    print(f"\n{what} by change of self time ({per}; {len(c.ops.rows):,} in all):")
    width = max(len(_cut(r.name)) for r in rows + [OpDelta(column, None, None, "", "", "", 0, 0, 0, 0)])
    print(f"  {column:<{width}}  {'BASE':>10}  {'NEW':>10}  {'delta':>10}  {'share':>6}  match")
    # Each time column in one unit for all its rows (issue 33), the delta's signed.
    base = format_duration_column([r.base_self_ps for r in rows])
    new = format_duration_column([r.new_self_ps for r in rows])
    delta = format_duration_column([r.delta_ps for r in rows], "+" + COLUMN_SPEC)
    for r, base_text, new_text, delta_text in zip(rows, base, new, delta, strict=True):
        share = c.ops.share_of_change(r) * 100
        print(
            f"  {_cut(r.name):<{width}}  {base_text:>10}  {new_text:>10}  {delta_text:>10}  "
            f"{share:5.0f}%  {r.match}"
        )
        if r.base_members or r.new_members:  # a category row: the ops it holds
            for side, members in (("BASE", r.base_members), ("NEW ", r.new_members)):
                if members:
                    more = f" and {len(members) - 1} more" if len(members) > 1 else ""
                    print(f"  {'':<{width}}    {side}: {_cut(members[0])}{more}")


def _print_groups(c: Comparison) -> None:
    for title, table in (("category", c.categories), ("program", c.programs)):
        rows = [r for r in table.rows if r.delta_ps][:GROUP_ROWS_TEXT]
        if not rows:
            continue
        parts = ", ".join(
            f"{r.name} {('+' if r.delta_ps >= 0 else '-') + format_duration(abs(r.delta_ps))}" for r in rows
        )
        print(f"By {title}: {parts}")


def _bytes(value: int | None) -> str:
    if value is None:
        return "-"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(value) >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value} B"


def _print_memory(c: Comparison) -> None:
    if not c.memory:
        return
    changed = [r for r in c.memory["programs"] + c.memory["allocators"] if r["delta_bytes"] != 0]
    if not changed:
        print("\nMemory: same peaks per program and allocator.")
        return
    print("\nMemory peaks that changed (BASE -> NEW):")
    for r in changed[:MEMORY_ROWS_TEXT]:
        what = (
            f"program {r['program']} ({r['memory_space']})"
            if "program" in r
            else f"allocator {r['allocator']}"
        )
        print(f"  {what}: {_bytes(r['base_peak_bytes'])} -> {_bytes(r['new_peak_bytes'])}")


def _print_findings(c: Comparison) -> None:
    f = c.findings
    if not (f.new or f.resolved or f.changed):
        print("\nFindings: no change.")
        return
    print("\nFindings:")
    for item in f.new:
        print(f"  new       [{item.severity.label}] {item.title}")
    for item in f.resolved:
        print(f"  resolved  [{item.severity.label}] {item.title}")
    for b, n in f.changed:
        print(f"  changed   [{b.severity.label} -> {n.severity.label}] {n.title}")
