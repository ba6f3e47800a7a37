"""`tpuscope history LOGDIR...`: every run in order, its step time, and what changed from the run before.

One line per run: the median step with its 95% interval, the change from the previous run (slower,
faster, no significant change) with its cause and the op that changed most; a run that could not be
read is named and skipped, a run with no steps says so, and where the program changed no verdict
is called across it. Each run is analysed once and its summary kept (`tpuscope.app.history`).

As a CI gate, `--fail-on-regression PCT` exits 1 when the newest run is significantly slower than
the previous one (or `--baseline RUN`) by more than PCT percent (`--ignore-machine`: net of the
machine), and `--junit FILE` writes the comparisons as a JUnit report, the gate's as a failure.
"""

from __future__ import annotations

import sys
from typing import Any
from xml.etree import ElementTree

from tpuscope.analysis.compare.history import (
    HistoryEntry,
    RunSummary,
    SummaryComparison,
    compare_summaries,
)
from tpuscope.app.history import History, read_history
from tpuscope.app.payloads import history_json
from tpuscope.commands import COMMANDS, EXIT_FINDINGS, EXIT_OK, UserFacingError
from tpuscope.commands._console import print_json
from tpuscope.model.units import duration_column_unit, format_duration_in
from tpuscope.readers import formats_help

RUN_CHARS = 28
JUNIT_SUITE = "tpuscope history"


def register(subparsers) -> None:
    parser = subparsers.add_parser("history", help=COMMANDS["history"])
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a logdir (every run, oldest first), a run folder or a profile file, local or a bucket URL "
        f"(gs://...); several are read in the order given. Profiles: {formats_help()}",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--no-cache", action="store_true", help="analyse every run again; keep nothing")
    parser.add_argument(
        "--fail-on-regression",
        type=float,
        metavar="PCT",
        help="exit 1 when the newest run is significantly slower than the previous (or --baseline) by "
        "more than PCT percent",
    )
    parser.add_argument(
        "--baseline", metavar="RUN", help="with --fail-on-regression: the run to check against"
    )
    parser.add_argument(
        "--ignore-machine",
        action="store_true",
        help="with --fail-on-regression: do not fail on a change the machine caused",
    )
    parser.add_argument("--junit", metavar="FILE", help="write a JUnit XML report of the comparisons to FILE")
    parser.add_argument(
        "--noise-floor", type=float, metavar="PCT", help="smallest change reported (as for compare)"
    )
    parser.set_defaults(handler=run)


def _progress(done: int, total: int, name: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"\r[{done}/{total}] {name[:60]:<60}")
        if done == total:
            sys.stderr.write("\r" + " " * 72 + "\r")
        sys.stderr.flush()


def run(args) -> int:
    for flag, value in (
        ("--fail-on-regression", args.fail_on_regression),
        ("--noise-floor", args.noise_floor),
    ):
        if value is not None and value < 0:
            raise UserFacingError(f"{flag} must be a percentage >= 0, not {value}.")
    if (args.baseline or args.ignore_machine) and args.fail_on_regression is None:
        raise UserFacingError("--baseline and --ignore-machine go with --fail-on-regression PCT.")
    history = read_history(args.paths, not args.no_cache, args.noise_floor, _progress)
    for entry in history.entries:
        if entry.error:
            print(f"tpuscope: warning: run {entry.run} skipped: {entry.error}", file=sys.stderr)
    gate = None
    if args.fail_on_regression is not None:
        gate = _gate(history, args.fail_on_regression, args.baseline, args.ignore_machine, args.noise_floor)
    if args.junit:
        _write_junit(args.junit, history, gate)
    if args.json:
        payload: dict[str, Any] = history_json(history)
        if gate is not None:
            payload["gate"] = gate.to_json()
        print_json(payload)
    else:
        print_text(history)
        if gate is not None:
            print(f"\n{gate.sentence()}")
    return EXIT_FINDINGS if gate is not None and gate.failed else EXIT_OK


class Gate:
    """The --fail-on-regression check: the newest run against its previous run or the baseline."""

    def __init__(
        self,
        percent: float,
        ignore_machine: bool,
        base: str | None,
        new: str,
        comparison: SummaryComparison | None,
        reason: str = "",
    ):
        self.percent, self.ignore_machine = percent, ignore_machine
        self.base, self.new, self.comparison, self.reason = base, new, comparison, reason
        self.failed = comparison is not None and comparison.regressed_by_more_than(percent, ignore_machine)

    def sentence(self) -> str:
        if self.comparison is None:
            return f"Regression gate: not checked ({self.reason})."
        c = self.comparison
        cause = f" Cause: {c.cause.kind}." if c.cause is not None else ""
        change = c.deciding
        numbers = "" if change is None else f" ({change.change_percent:+.1f}%)"
        if self.failed:
            return (
                f"Regression gate: FAILED: {self.new} is slower than {self.base} by more than "
                f"{self.percent:g}%{numbers}.{cause}"
            )
        verdict = c.verdict.replace("_", " ")
        return f"Regression gate: passed: {self.new} against {self.base}{numbers}, {verdict}.{cause}"

    def to_json(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "fail_on_regression_percent": self.percent,
            "ignore_machine": self.ignore_machine,
            "base": self.base,
            "new": self.new,
            "checked": c is not None,
            "reason": self.reason or None,
            "verdict": None if c is None else c.verdict,
            "change_percent": None
            if c is None or c.deciding is None
            else round(c.deciding.change_percent, 3),
            "cause": None if c is None or c.cause is None else c.cause.to_json(),
            "regression": self.failed,
        }


def _gate(
    history: History, percent: float, baseline: str | None, ignore_machine: bool, floor: float | None
) -> Gate:
    entries = history.entries
    if not entries:
        raise UserFacingError("the history has no runs to check.")
    newest = entries[-1]
    if newest.summary is None:
        raise UserFacingError(f"the newest run {newest.run} could not be read: {newest.error}")
    if newest.summary.steps == 0:
        raise UserFacingError(
            f"the newest run {newest.run} has no steps, so its step time cannot be checked."
        )
    if baseline is None:
        if newest.comparison is None:
            why = newest.program_changed or "no earlier run with steps to compare with"
            return Gate(percent, ignore_machine, None, newest.run, None, why)
        return Gate(percent, ignore_machine, newest.previous, newest.run, newest.comparison)
    base = _baseline(entries, baseline)
    return Gate(percent, ignore_machine, base.run, newest.run, compare_summaries(base, newest.summary, floor))


def _baseline(entries: list[HistoryEntry], name: str) -> RunSummary:
    for entry in entries:
        if entry.run == name:
            if entry.summary is None:
                raise UserFacingError(f"the baseline run {name} could not be read: {entry.error}")
            if entry.summary.steps == 0:
                raise UserFacingError(f"the baseline run {name} has no steps.")
            return entry.summary
    names = ", ".join(e.run for e in entries)
    raise UserFacingError(f"there is no run named {name!r} in the history (runs: {names}).")


def _ms(value: float | None, unit: tuple[str, float]) -> str:
    """A time in milliseconds written in the column's `unit` (issue 33: one unit, one rounding)."""
    return "-" if value is None else format_duration_in(value * 1e9, unit)


def _median_unit(entries: list[HistoryEntry]) -> tuple[str, float]:
    """The one unit of the median and interval columns: the largest run median's."""
    medians = [e.summary.median_ms() for e in entries if e.summary is not None]
    return duration_column_unit([m * 1e9 for m in medians if m is not None])


def print_text(history: History) -> None:
    entries = history.entries
    cached = len(entries) - len(history.analysed) - sum(1 for e in entries if e.error)
    print(f"{len(entries)} runs ({len(history.analysed)} analysed, {cached} from the cache):")
    print(f"  {'run':<{RUN_CHARS}}  {'steps':>5}  {'median':>12}  {'95% CI':>25}  change")
    unit = _median_unit(entries)
    for e in entries:
        name = e.run if len(e.run) <= RUN_CHARS else "…" + e.run[-RUN_CHARS + 1 :]
        if e.summary is None:
            print(f"  {name:<{RUN_CHARS}}  skipped: {e.error}")
            continue
        s = e.summary
        interval = s.median_interval_ms()
        ci = "-" if interval is None else f"{_ms(interval[0], unit)}..{_ms(interval[1], unit)}"
        print(f"  {name:<{RUN_CHARS}}  {s.steps:>5}  {_ms(s.median_ms(), unit):>12}  {ci:>25}  {_change(e)}")
    for e in entries:
        if e.comparison is not None and e.comparison.cause is not None:
            print(f"\n{e.previous} -> {e.run}: {e.comparison.cause.summary}")


def _change(e: HistoryEntry) -> str:
    if e.program_changed:
        return f"no verdict: {e.program_changed}"
    if e.note:
        return e.note
    c = e.comparison
    if c is None:
        return "-"
    change = c.deciding
    numbers = "" if change is None else f" {change.change_percent:+.0f}%"
    cause = f", cause: {c.cause.kind}" if c.cause is not None else ""
    top = next((r for r in c.ops.rows if r.delta_ps), None)
    op = "" if top is None or c.cause is None else f", most changed op `{top.name}`"
    return f"{c.verdict.replace('_', ' ')}{numbers}{cause}{op}"


def _write_junit(path: str, history: History, gate: Gate | None) -> None:
    """One test case per comparison of a run with its previous one (a skipped case per run read or
    compared with nothing), and the gate's case, failed when the gate failed."""
    suite = ElementTree.Element("testsuite", name=JUNIT_SUITE)
    cases = 0
    failures = 0
    skipped = 0
    for e in history.entries:
        case = ElementTree.SubElement(suite, "testcase", classname="tpuscope.history", name=e.run)
        cases += 1
        if e.summary is None or e.comparison is None:
            reason = e.error or e.program_changed or e.note or "nothing earlier to compare with"
            ElementTree.SubElement(case, "skipped", message=reason)
            skipped += 1
            continue
        c = e.comparison
        text = f"{e.previous} -> {e.run}: {c.verdict}"
        if c.cause is not None:
            text += f"; {c.cause.summary}"
        ElementTree.SubElement(case, "system-out").text = text
    if gate is not None:
        case = ElementTree.SubElement(suite, "testcase", classname="tpuscope.history", name="regression gate")
        cases += 1
        if gate.failed:
            ElementTree.SubElement(case, "failure", message=gate.sentence())
            failures += 1
        elif gate.comparison is None:
            ElementTree.SubElement(case, "skipped", message=gate.sentence())
            skipped += 1
        else:
            ElementTree.SubElement(case, "system-out").text = gate.sentence()
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    try:
        ElementTree.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        raise UserFacingError(f"cannot write the JUnit report {path}: {exc.strerror or exc}.") from None
