"""`tpuscope overview PATH`: the first numbers to read about a profile, as the app's Overview shows them.

Devices, hosts, framework, span, steps and where they came from, step time (mean, median, p95),
duty cycle, how step time splits into busy/input/compile/idle, the top ops by self time and the
worst findings. Each line points at the command that says more (`ops`, `diagnose`).
"""

from __future__ import annotations

from tpuscope.analysis.diagnose.finding import Severity
from tpuscope.analysis.overview import (
    NO_STEPS_TEXT,
    PARTS,
    TOP_FINDINGS,
    TOP_OPS,
    Overview,
    part_label,
)
from tpuscope.analysis.pod.results import POD
from tpuscope.analysis.pod.summary import PARTS as POD_PARTS
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.commands import UserFacingError
from tpuscope.commands._console import add_path_argument, load_for_cli, print_json
from tpuscope.commands._per_host import add_per_host_arguments, overview_json, per_host_run, print_overview
from tpuscope.model.completeness import percent_words
from tpuscope.model.units import format_duration, format_duration_column

_MARK = {Severity.CRITICAL: "[CRITICAL]", Severity.WARNING: "[WARNING] ", Severity.INFO: "[info]    "}
NAME_CHARS = 48  # op names are cut to this many characters in the text table
POD_STEP_COLUMNS = 12  # steps shown in the text host x step table (all of them are in --json)
POD_COLUMNS = ("step", *POD_PARTS)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "overview",
        help="the first look at a profile: devices, steps, step time, duty cycle, top ops, findings",
    )
    add_path_argument(parser)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument(
        "--top", type=int, default=TOP_OPS, help=f"how many ops to list by self time (default {TOP_OPS})"
    )
    add_per_host_arguments(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    if args.top < 1:
        raise UserFacingError(f"--top must be a positive number of ops, not {args.top}.")
    pod = per_host_run(args, light=True)  # the pod page's first picture: summaries, the pod rules
    if pod is not None:
        print_json(overview_json(pod)) if args.json else print_overview(pod)
        return 0
    analysis = TraceAnalysis(load_for_cli(args))
    # The pod table on the second core while this thread makes the op table and imports the rules:
    # whole-process overview of the 1M-event JAX CPU recording -13 ms (benchmarks/bench_analyses.py).
    analysis.start(POD)
    overview = analysis.overview
    if args.json:
        print_json(overview.to_json(top_ops=args.top))
    else:
        print_text(overview, args.top)
    return 0


def print_text(overview: Overview, top_ops: int = TOP_OPS) -> None:
    o = overview
    devices = o.devices
    active = f" ({devices.active} ran ops)" if devices.active < devices.count else ""
    print(f"Profile:     {', '.join(o.sources)}")
    if not o.completeness.complete:  # every figure below is of the part read
        print(f"Incomplete:  {_read_share(o)} could be read ({o.completeness.reason})")
    print(f"Devices:     {devices.label}{active}")
    print(f"Hosts:       {len(o.hosts)} ({', '.join(o.hosts) or '-'})")
    print(f"Framework:   {o.framework.name} ({o.framework.evidence})")
    print(f"Span:        {format_duration(o.span_ps)}")
    if len(o.steps):
        print(f"Steps:       {len(o.steps)} from {o.steps.description}")
    else:
        print(f"Steps:       none ({NO_STEPS_TEXT})")
    if o.pod_metrics is not None:  # a pod: its headline is the mean over its hosts
        _print_pod_headline(o.pod_metrics)
    else:
        _print_headline(o)
    _print_pod(o)
    _print_ops(o, top_ops)
    _print_findings(o)


def _print_headline(o: Overview) -> None:
    if o.step_time is not None:
        t = o.step_time
        print(
            f"Step time:   mean {format_duration(t.mean_ps)}, median {format_duration(t.median_ps)}, "
            f"p95 {format_duration(t.p95_ps)} (start to next start)"
        )
    if o.duty_cycle is None:
        missing = "recorded" if o.completeness.complete else "in the part read"
        print(f"Duty cycle:  - (no device activity {missing})")
    else:
        within = "" if o.step_duty_cycle is None else f", {o.step_duty_cycle * 100:.1f}% of step time"
        print(f"Duty cycle:  {o.duty_cycle * 100:.1f}% of the profile{within}")
    split = o.series.split_percent()
    if split is not None:
        has_devices = o.duty_cycle is not None
        parts = ", ".join(f"{part_label(name, has_devices)} {split[name]:.1f}%" for name in PARTS)
        print(f"Step split:  {parts}")


def _print_pod_headline(rows) -> None:
    """Step time, duty cycles and split of a pod: the metrics' pod rows (the mean over hosts)."""
    from tpuscope.analysis.metrics import POD, format_metric

    pod = {r.name: r for r in rows if r.scope == POD}

    def shown(name: str) -> str:
        return format_metric(pod[name].value, pod[name].unit)

    over = pod["step_time_mean"].over or pod["duty_cycle"].over
    if pod["step_time_mean"].value is not None:
        print(
            f"Step time:   mean {shown('step_time_mean')}, median {shown('step_time_median')}, "
            f"p95 {shown('step_time_p95')} (start to next start; {over})"
        )
    print(
        f"Duty cycle:  {shown('duty_cycle')} of the profile, {shown('step_duty_cycle')} of step time ({over})"
    )
    if pod["busy_share"].value is not None:
        parts = ", ".join(f"{part_label(name)} {shown(name + '_share')}" for name in PARTS)
        print(f"Step split:  {parts} ({over})")


def _print_pod(o: Overview) -> None:
    """Per host: mean step time and its parts; then the collective time of each host in each step."""
    pod = o.pod
    if pod is None or len(pod.hosts) < 2 or pod.step_count == 0:
        return
    width = max(len("host"), *(len(h) for h in pod.hosts))
    print(f"\nHosts ({pod.step_count} steps aligned by {pod.alignment}; mean per step, ms):")
    header = ["step", "compute", "collective", "input", "compile", "host"]
    print(f"  {'host':<{width}}  " + "  ".join(f"{h:>10}" for h in header) + "  busiest op")
    for row in pod.rows():
        values = [row.step_ps] + [row.parts_ps[p] for p in POD_PARTS]
        busiest = (
            row.busiest_op if len(row.busiest_op) <= NAME_CHARS else row.busiest_op[: NAME_CHARS - 1] + "…"
        )
        print(
            f"  {row.host:<{width}}  "
            + "  ".join(f"{v / 1e9:>10.3f}" for v in values)
            + f"  {busiest or '-'}"
        )
    shown = min(pod.step_count, POD_STEP_COLUMNS)
    more = f" (first {shown} of {pod.step_count}; all in --json)" if shown < pod.step_count else ""
    print(f"\nTime in collectives per step, ms{more}:")
    numbers = [str(int(n)) for n in pod.step_number[:shown]]
    print(f"  {'step':<{width}}  " + "  ".join(f"{n:>7}" for n in numbers))
    collective = pod.matrix("collective")[:, :shown] / 1e9
    for host, values in zip(pod.hosts, collective, strict=True):
        print(f"  {host:<{width}}  " + "  ".join(f"{v:>7.2f}" for v in values))


def _print_ops(o: Overview, top: int) -> None:
    if o.ops is None:
        where = "this profile" if o.completeness.complete else "the part of this profile read"
        print(f"\nNo device ops in {where} (no TPU XLA Ops, GPU kernels or XLA:CPU thunks).")
        return
    rows = o.ops.rows_json(top)
    names = [_op_label(r) for r in rows]
    width = max(len("op"), *(len(n) for n in names))
    print(f"\nTop ops by self time (tpuscope ops for all {len(o.ops):,}):")
    print(f"  {'op':<{width}}  {'self':>12}  {'self %':>6}  {'count':>7}")
    self_times = format_duration_column([r["self_time_us"] * 1e6 for r in rows])  # one unit (issue 33)
    for name, r, self_time in zip(names, rows, self_times, strict=True):
        print(f"  {name:<{width}}  {self_time:>12}  {r['percent']:>6.2f}  {r['occurrences']:>7,}")


def _read_share(o: Overview) -> str:
    """How much of the profile was read: "at most 0.87% of the profile", or "only part of the profile"."""
    fraction = o.completeness.fraction_read
    if fraction is None:
        return "only part of the profile"
    return f"at most {percent_words(fraction)} of the profile"


def _op_label(row: dict) -> str:
    name = row["name"] if not row["program"] else f"{row['name']} ({row['program']})"
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


def _print_findings(o: Overview) -> None:
    findings = o.findings
    if not findings:
        print(f"\n{o.completeness.no_problems()}; tpuscope diagnose explains what was checked.")
        return
    shown = findings[:TOP_FINDINGS]
    more = f", {len(findings) - len(shown)} more" if len(findings) > len(shown) else ""
    print(f"\nFindings (tpuscope diagnose for details{more}):")
    for finding in shown:
        print(f"  {_MARK[finding.severity]} {finding.title}")
