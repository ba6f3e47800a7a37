"""`tpuscope diagnose PATH`: integration problems found in a profile, worst first, with advice.

With `--fail-on warning|critical` the exit code is 1 when a finding of that severity or worse
exists, so CI can gate on it; errors (bad path, unreadable profile) stay exit 2.

A run of several hosts gets the same findings whether it is read as one trace or host by host
(`--per-host`, `--workers N`): each per-host rule runs on each host alone and its findings are
grouped across hosts (`tpuscope.analysis.pod_run`). A host file of such a run that cannot be
read is named on stderr and left out, and the others are analysed (host by host); `--strict`
makes it an error.
"""

from __future__ import annotations

import textwrap

from tpuscope.analysis.diagnose import Report, Severity
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.commands import EXIT_FINDINGS, EXIT_OK
from tpuscope.commands._console import add_path_argument, cost_line, load_for_cli, print_json
from tpuscope.commands._per_host import add_per_host_arguments, per_host_run, print_findings, warn_about_pod
from tpuscope.errors import ProfileError

_MARK = {Severity.CRITICAL: "[CRITICAL]", Severity.WARNING: "[WARNING] ", Severity.INFO: "[info]    "}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "diagnose", help="find integration problems: input-bound, recompilation, host syncs, idle devices"
    )
    add_path_argument(parser)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument(
        "--fail-on",
        choices=["warning", "critical"],
        help="exit 1 when a finding of this severity or worse exists (for CI gates)",
    )
    add_per_host_arguments(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    pod = per_host_run(args)
    trace = None
    if pod is None:
        try:
            trace = load_for_cli(args)
        except ProfileError:
            # A run folder whose one host file cannot be read is analysed host by host: that host is
            # named and left out, the others are analysed (the same findings as one trace would give).
            if getattr(args, "strict", False) or _host_file_count(args) < 2:
                raise
            pod = per_host_run(args, force=True)
    if pod is not None:
        print_json(pod.diagnose_json()) if args.json else print_findings(pod)
        worst = max((Severity.parse(f["severity"]) for f in pod.findings()), default=None)
        return (
            EXIT_FINDINGS
            if args.fail_on and worst is not None and worst >= Severity.parse(args.fail_on)
            else EXIT_OK
        )
    assert trace is not None
    analysis = TraceAnalysis(trace)
    notes = analysis.pod.notes() if len(trace.hosts) > 1 else []
    warn_about_pod(notes)
    report = analysis.report
    if args.json:
        pod_keys = {"hosts": list(trace.hosts), "unreadable": [], "notes": notes}  # as --per-host's JSON
        print_json({**report_json(report), **pod_keys} if len(trace.hosts) > 1 else report_json(report))
    else:
        print_text(report)
    if args.fail_on and report.worst is not None and report.worst >= Severity.parse(args.fail_on):
        return EXIT_FINDINGS
    return EXIT_OK


def _host_file_count(args) -> int:
    from tpuscope.runs import host_file_count

    try:
        return host_file_count(args.path, args.run)
    except ProfileError:
        return 0


def report_json(report: Report) -> dict:
    """The documented JSON shape: framework, steps {count, source}, findings worst first."""
    return report.to_json()


def print_text(report: Report) -> None:
    print(f"Framework: {report.framework.name} ({report.framework.evidence})")
    print(f"Steps:     {len(report.steps)} from {report.steps.description}")
    if not report.findings:
        print("\nNo problems found.")
    for finding in report.findings:
        print(f"\n{_MARK[finding.severity]} {finding.title}")
        print(f"    {cost_line(finding.impact.to_json() if finding.impact else None, finding.impact_note)}")
        for line in textwrap.wrap(finding.explanation, 100):
            print(f"    {line}")
        numbers = ", ".join(f"{k}={_short(v)}" for k, v in finding.metrics.items() if _is_scalar(v))
        if numbers:
            for line in textwrap.wrap(numbers, 100):
                print(f"    | {line}")
        for advice in finding.advice:
            for k, line in enumerate(textwrap.wrap(advice, 96)):
                print(f"    {'-' if k == 0 else ' '} {line}")
    for rule, error in report.rule_errors.items():
        print(f"\nRule {rule} could not run on this profile: {error}")
    print_checked(report)


def print_checked(report: Report) -> None:
    """One line per rule that ran, on what it looked at, so "No problems found" can be trusted."""
    if not report.checked:
        return
    print(f"\nWhat was checked ({len(report.checked)} rules):")
    width = max(len(c["rule"]) for c in report.checked)
    for entry in report.checked:
        summary = entry["summary"] or "(no summary)"
        lines = textwrap.wrap(summary, 100 - width - 4) or [""]
        print(f"  {entry['rule']:<{width}}  {lines[0]}")
        for line in lines[1:]:
            print(f"  {'':<{width}}  {line}")


def _is_scalar(value) -> bool:
    return isinstance(value, (int, float, str)) and not isinstance(value, bool)


def _short(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
