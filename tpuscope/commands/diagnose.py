"""`tpuscope diagnose PATH`: integration problems found in a profile, worst first, with advice.

With `--fail-on warning|critical` the exit code is 1 when a finding of that severity or worse
exists, so CI can gate on it; errors (bad path, unreadable profile) stay exit 2.

A run of several hosts gets the same findings whether it is read as one trace or host by host
(`--per-host`, `--workers WHERE`): each per-host rule runs on each host alone and its findings are
grouped across hosts (`tpuscope.analysis.pod_run`). A host file of such a run that cannot be
read is named on stderr and left out, and the others are analysed (host by host); `--strict`
makes it an error.
"""

from __future__ import annotations

import sys
import textwrap
import time
from typing import TYPE_CHECKING, Any

from tpuscope.analysis.diagnose import Report, Severity
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.analysis.trace_results import op_table_result
from tpuscope.app.payloads import diagnose_json
from tpuscope.commands import EXIT_FINDINGS, EXIT_OK
from tpuscope.commands._console import add_path_argument, cost_line, load_for_cli, print_json
from tpuscope.commands._per_host import add_per_host_arguments, per_host_run, print_pod_header, warn_about_pod
from tpuscope.errors import ProfileError
from tpuscope.model import units
from tpuscope.model.completeness import Completeness

if TYPE_CHECKING:
    from tpuscope.analysis.pod_run import PodRun

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
        help="exit 1 when a finding of this severity or worse exists, or when the profile could not be "
        "read whole (a file cut short, records dropped, a host left out: no gate passes on a part; "
        "--strict makes that exit 2) (for CI gates)",
    )
    parser.add_argument(
        "--timings",
        action="store_true",
        help="also print each rule's wall time and the shared facts it computed first (stderr; "
        "a `timings` object with --json); host by host, each host's parts summed over the hosts, "
        "every host analysed afresh (the stored per-host results are not read)",
    )
    add_per_host_arguments(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    started = time.perf_counter()
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
            started = time.perf_counter()
            pod = per_host_run(args, force=True)
    if pod is not None:
        timings = pod_timings_json(pod, time.perf_counter() - started) if args.timings else {}
        if args.timings and not args.json:
            print_timings(timings)
        if args.json:
            payload = pod.diagnose_json()
            print_json({**payload, "timings": timings} if args.timings else payload)
        else:
            print_pod_header(pod)
            print_finding_blocks(pod.findings(), pod.rule_errors, pod.checked(), pod.completeness())
        worst = max((Severity.parse(f["severity"]) for f in pod.findings()), default=None)
        return gate_exit(args.fail_on, worst, pod.completeness())
    assert trace is not None
    analysis = TraceAnalysis(trace)
    if not args.timings:  # --timings measures each result on this thread
        # The op table (the async-wait rule reads it) on the second core while this thread computes
        # the facts and imports the rules: diagnose of the 1M-event JAX CPU recording -14 ms.
        analysis.start(op_table_result("op", "all"))
    before_rules = timed_facts(analysis) if args.timings else {}
    notes = analysis.pod.notes() if len(trace.hosts) > 1 else []
    warn_about_pod(notes)
    report = analysis.report
    timings = timings_json(before_rules, report) if args.timings else {}
    if args.timings and not args.json:
        print_timings(timings)
    if args.json:
        payload = diagnose_json(analysis, notes)  # a pod adds the keys --per-host's JSON has
        print_json({**payload, "timings": timings} if args.timings else payload)
    elif len(trace.hosts) > 1:  # a pod: its header as host by host, then the same findings
        print(f"Framework: {report.framework.name} ({report.framework.evidence})")
        print(f"Hosts:     {len(trace.hosts)}, read as one trace")
        print(f"Steps:     {analysis.pod.step_count} aligned by {analysis.pod.alignment}")
        print_finding_blocks(
            [f.to_json() for f in report.findings], report.rule_errors, report.checked, report.completeness
        )
    else:
        print_text(report)
    return gate_exit(args.fail_on, report.worst, report.completeness)


def gate_exit(fail_on: str | None, worst: Severity | None, complete: Completeness) -> int:
    """The exit code of `--fail-on`: 1 for a finding at that level or worse, and for a profile that was
    not read whole (what is missing may hold the problem the gate looks for); 0 otherwise, and always
    without `--fail-on` (the report then says how much of the profile it covers)."""
    if not fail_on:
        return EXIT_OK
    if not complete.complete or (worst is not None and worst >= Severity.parse(fail_on)):
        return EXIT_FINDINGS
    return EXIT_OK


def timed_facts(analysis: TraceAnalysis) -> dict[str, float]:
    """The facts every rule builds on, computed before the rules in the order they depend on each
    other, with each one's wall seconds: the pod table makes the step periods, device busy time and
    waits that most rules read, so the rules' own times below are their own work."""
    facts = {
        "steps": lambda: analysis.steps,
        "framework": lambda: analysis.framework,
        "devices": lambda: analysis.devices,
        "pod table (periods, device busy, waits)": lambda: analysis.pod,
    }
    seconds = {}
    for name, compute in facts.items():
        started = time.perf_counter()
        compute()
        seconds[name] = time.perf_counter() - started
    return seconds


def timings_json(before_rules: dict[str, float], report: Report) -> dict[str, Any]:
    """`--timings` as JSON: milliseconds of the facts made first, of each rule (with the facts it was
    the first to ask for), and of all rules together."""
    return {
        "before_rules_ms": {name: round(s * 1e3, 3) for name, s in before_rules.items()},
        "rules": [
            {"rule": t.rule, "ms": round(t.seconds * 1e3, 3), "facts_computed_first": list(t.facts)}
            for t in report.timings
        ],
        "rules_total_ms": round(sum(t.seconds for t in report.timings) * 1e3, 3),
    }


def pod_timings_json(run: PodRun, wall_s: float) -> dict[str, Any]:
    """`--timings` of a run analysed host by host: each part of the hosts' passes summed over the hosts
    (their workers' wall time, in parallel where there are several: more than the run took), the
    pod table and the pod rules of the combination here, and the wall time of all of it."""
    from tpuscope.analysis.diagnose.engine import RULES, RuleTiming, summed_timings
    from tpuscope.analysis.pod_run import OP_ROWS_PART, SUMMARY_PART

    hosts = f"{len(run.hosts)} host{'s' if len(run.hosts) != 1 else ''}"
    parts = {t.part: t for t in run.host_timings()}
    per_host = [[RuleTiming(*t) for t in h.timings if t.part in RULES] for h in run.hosts]
    pod_rules = [RuleTiming(*t) for t in (run.diagnosis.pod_timings if run.diagnosis is not None else [])]
    rules = summed_timings([*per_host, pod_rules])

    def ms(parts_of: list[Any]) -> dict[str, float]:
        return {name: round(t.seconds * 1e3, 3) for name, t in parts_of}

    return {
        "analysed": "host by host",
        "hosts_wall_ms": round(wall_s * 1e3, 3),
        "before_rules_ms": ms(
            [(f"{SUMMARY_PART}, {hosts}", t) for part, t in parts.items() if part == SUMMARY_PART]
            + [(t.part, t) for t in run.combined_in]
        ),
        "rules": [
            {"rule": t.rule, "ms": round(t.seconds * 1e3, 3), "facts_computed_first": list(t.facts)}
            for t in rules
        ],
        "rules_total_ms": round(sum(t.seconds for t in rules) * 1e3, 3),
        "after_rules_ms": ms(
            [(f"{OP_ROWS_PART}, {hosts}", t) for part, t in parts.items() if part == OP_ROWS_PART]
        ),
    }


def print_timings(timings: dict[str, Any]) -> None:
    """The cost table on stderr, so that stdout stays the report."""
    rows = [(name, ms, "") for name, ms in timings["before_rules_ms"].items()]
    rows += [(r["rule"], r["ms"], ", ".join(r["facts_computed_first"])) for r in timings["rules"]]
    after = [(name, ms, "") for name, ms in timings.get("after_rules_ms", {}).items()]
    width = max(len(name) for name, _, _ in [*rows, *after])
    out = sys.stderr
    if "hosts_wall_ms" in timings:
        print(
            "Timings, wall ms: host by host, each host's part summed over the hosts (in parallel on "
            "several workers), the pod's parts once",
            file=out,
        )
    else:
        print("Timings, wall ms: the shared facts, then each rule and the facts it computed first", file=out)
    for name, ms, facts in rows:
        print(f"  {name:<{width}}  {ms:9.1f}{'  ' + facts if facts else ''}", file=out)
    print(f"  {'all rules':<{width}}  {timings['rules_total_ms']:9.1f}", file=out)
    for name, ms, _ in after:
        print(f"  {name:<{width}}  {ms:9.1f}", file=out)
    if "hosts_wall_ms" in timings:
        print(f"  {'the run, analysed and combined':<{width}}  {timings['hosts_wall_ms']:9.1f}", file=out)


def _host_file_count(args) -> int:
    from tpuscope.app.runs import host_file_count

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
    print_finding_blocks(
        [f.to_json() for f in report.findings], report.rule_errors, report.checked, report.completeness
    )


def print_finding_blocks(
    findings: list[dict[str, Any]],
    rule_errors: dict[str, str],
    checked: list[dict[str, str]],
    complete: Completeness | None = None,
) -> None:
    """The findings (as JSON), the rules that failed and what was checked, as text: the same
    blocks for a run read as one trace and host by host (`--per-host`), which find the same.
    On a profile not read whole, no all-clear: the part that was judged and why the rest is missing."""
    complete = complete or Completeness()
    if not complete.complete:
        print(f"\nIncomplete profile: {complete.reason}.")
    if not findings:
        print(f"\n{complete.no_problems()}.")
    for finding in findings:
        print(f"\n{_MARK[Severity.parse(finding['severity'])]} {finding['title']}")
        print(f"    {cost_line(finding.get('impact'), finding.get('impact_note', ''))}")
        for line in textwrap.wrap(finding["explanation"], 100):
            print(f"    {line}")
        metrics = finding.get("metrics", {})
        numbers = ", ".join(f"{k}={_short(v, k)}" for k, v in metrics.items() if _is_scalar(v))
        if numbers:
            for line in textwrap.wrap(numbers, 100):
                print(f"    | {line}")
        for advice in finding.get("advice", []):
            for k, line in enumerate(textwrap.wrap(advice, 96)):
                print(f"    {'-' if k == 0 else ' '} {line}")
    for rule, error in rule_errors.items():
        print(f"\nRule {rule} could not run on this profile: {error}")
    print_checked(checked)


def print_checked(checked: list[dict[str, str]]) -> None:
    """One line per rule that ran, on what it looked at, so "No problems found" can be trusted."""
    if not checked:
        return
    print(f"\nWhat was checked ({len(checked)} rules):")
    width = max(len(c["rule"]) for c in checked)
    for entry in checked:
        summary = entry["summary"] or "(no summary)"
        lines = textwrap.wrap(summary, 100 - width - 4) or [""]
        print(f"  {entry['rule']:<{width}}  {lines[0]}")
        for line in lines[1:]:
            print(f"  {'':<{width}}  {line}")


def _is_scalar(value) -> bool:
    return isinstance(value, (int, float, str)) and not isinstance(value, bool)


def _short(value, key: str = "") -> str:
    """A finding's number for the `| key=value` line: a share (a `percent` key) and a time (`_ms`, `_us`)
    rounded as the title and the app show them (issue 33: 96.5, not 96.48 under a 96.5% title)."""
    if not isinstance(value, float):
        return str(value)
    if "percent" in key:
        return f"{value:{units.PERCENT_SPEC}}"
    if {"ms", "us"} & set(key.split("_")):
        return f"{value:.3f}"
    return f"{value:g}"
