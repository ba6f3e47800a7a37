"""Pods analysed host by host: what each host contributes, and the pod those contributions make.

A 64-host run of 100 MB host files would need every host's events in memory to be diagnosed as one
trace. Instead each host is analysed on its own (`analyze_host`: its `HostSummary`, its own diagnosis,
its op table rows) into a small, picklable `HostResult`, and the trace can be dropped before the
next host is read (`tpuscope.app.hosts` reads the files, here, on worker processes or on Dask). `combine` is a
pure function of the per-host results, so wherever they were computed the pod is the same.

Host times are trace-relative per file; the results are shifted onto the run's common time origin
(the earliest host), as a trace holding every host would have them.

One pod analysis, whichever way the run is read: `diagnose_pod`
(`tpuscope.analysis.diagnose.across_hosts`) makes a pod's findings from each host's own diagnosis
(the per-host rules, run on that host alone) and the pod table (the rules that compare hosts, run
once over every host's summary), grouped across hosts. `combine` calls it on the results of host
files read one at a time (here or on Dask), `engine.diagnose` on a trace holding every host, each
host's rules run on that host's planes alone. So `tpuscope diagnose RUN`, `--per-host`,
`--workers WHERE` and the Pod page give the same findings.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

import tpuscope.analysis.diagnose as rules_package  # its engine loads when a rule runs
from tpuscope.analysis.async_ops import is_async_half
from tpuscope.analysis.framework import Framework
from tpuscope.analysis.pod.analysis import PodAnalysis, analyze_pod
from tpuscope.analysis.pod.summary import HostSummary, host_trace, summarize_host
from tpuscope.analysis.roofline import BOUND_NAMES, Peaks, bound_by
from tpuscope.analysis.session import FRAMEWORK, POD, TraceAnalysis
from tpuscope.model.completeness import Completeness, Loss, completeness
from tpuscope.model.records import record
from tpuscope.model.trace import Trace

if TYPE_CHECKING:  # the pod's rules load where a diagnosis is made: the light pass's workers need none
    from tpuscope.analysis.diagnose.across_hosts import POD_RULES, PodDiagnosis

__all__ = ["POD_RULES", "HostResult", "PodDiagnosis", "PodRun", "analyze_host", "combine"]


class PartTiming(NamedTuple):
    """One part of an analysis and its wall seconds, with the shared facts it was the first to compute
    (`tpuscope diagnose --timings`): a host's summary, each of its rules, its op rows; a pod rule."""

    part: str
    seconds: float
    facts: tuple[str, ...] = ()


# The parts of a host's pass that are not rules, as `diagnose --timings` names them.
SUMMARY_PART = "host summary (steps, device busy, waits)"
OP_ROWS_PART = "op table rows"
POD_TABLE_PART = "pod table (the hosts' summaries on one time origin)"


@record
class HostResult:
    """What one host contributes to a pod: small, picklable, independent of the other hosts."""

    source: str
    host: str
    origin_ns: int
    event_count: int
    framework: Framework
    summary: HostSummary
    report: dict[str, Any]  # the host's own diagnosis (pod rules excluded), as JSON
    op_rows: list[dict[str, Any]]  # its op table by op, all rows
    peaks: Peaks | None = None
    load_warnings: list[str] = field(default_factory=list)
    file_host: str = ""  # the host as the file name says it, for runs whose files share a host name
    losses: tuple[Loss, ...] = ()  # what its load could not read, measured (`Trace.load_losses`)
    # What the pass cost on this host, in order: its summary, each rule, its op rows (empty where a
    # result was stored before it was measured).
    timings: tuple[PartTiming, ...] = ()


def analyze_host(trace: Trace, host: str, source: str, *, light: bool = False) -> HostResult:
    """What `host` of `trace` contributes to its pod: its summary, its own diagnosis (the pod rules
    left out: they run over every host's summary in `combine`) and its op table. `light` keeps the
    summary alone (the pod page's first pass: no rules, no op rows), labelled the same way."""
    one = trace if list(trace.hosts) == [host] else host_trace(trace, host)
    analysis = TraceAnalysis(one)
    ctx = analysis.context
    started = time.perf_counter()
    # The summary first: its devices' busy intervals become the context's device busy time
    # (`Context.device_busy_from`), which the rules then read instead of merging the ops again.
    summary = analysis.reading_facts(partial(summarize_host, ctx, host))
    timings = [PartTiming(SUMMARY_PART, time.perf_counter() - started, tuple(ctx.facts_in_hand()))]
    report = None if light else analysis.reading_facts(partial(_own_diagnosis, ctx))
    if report is not None:
        timings += [PartTiming(t.rule, t.seconds, t.facts) for t in report.timings]
    started = time.perf_counter()
    table = None if light else analysis.op_table("op", "all")
    op_rows = table.rows_json() if table is not None else []
    if table is not None:
        timings.append(PartTiming(OP_ROWS_PART, time.perf_counter() - started))
    return HostResult(
        source=source,
        host=host,
        origin_ns=int(trace.origin_ns),
        event_count=int(one.event_count),
        framework=analysis.framework,
        summary=summary,
        report=report.to_json() if report is not None else {},
        op_rows=op_rows,
        peaks=table.peaks if table is not None else None,
        load_warnings=list(getattr(trace, "load_warnings", []) or []),
        losses=tuple(trace.load_losses),
        timings=tuple(timings),
    )


def _own_diagnosis(ctx):
    """A host's diagnosis by the rules that read that host alone (the pod rules run in `combine`)."""
    from tpuscope.analysis.diagnose.across_hosts import host_rules

    return rules_package.diagnose(ctx, host_rules(rules_package.RULES))


def __getattr__(name: str) -> Any:
    """POD_RULES and PodDiagnosis, imported when first asked for (see the TYPE_CHECKING import)."""
    if name in ("POD_RULES", "PodDiagnosis"):
        from tpuscope.analysis.diagnose import across_hosts

        return getattr(across_hosts, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@record
class PodRun:
    """A pod analysed host by host: the per-host results and what comparing them says."""

    hosts: list[HostResult]
    pod: PodAnalysis
    framework: Framework
    pod_findings: list[dict[str, Any]]  # the cross-host rules' findings (in `findings()` too)
    pod_checked: list[dict[str, str]]
    diagnosis: PodDiagnosis | None = None  # every finding, grouped across hosts (`diagnose_pod`)
    unreadable: list[str] = field(default_factory=list)  # one sentence per host file left out
    combined_in: tuple[PartTiming, ...] = ()  # what `combine` cost besides the pod rules (--timings)

    @property
    def event_count(self) -> int:
        return sum(h.event_count for h in self.hosts)

    def findings(self) -> list[dict[str, Any]]:
        """Every finding worst first, as `tpuscope diagnose` of the run as one trace lists them: the
        cross-host rules' and each per-host rule's grouped across hosts, each naming its hosts
        (`metrics["on_hosts"]`; evidence in run time)."""
        return list(self.diagnosis.findings) if self.diagnosis is not None else list(self.pod_findings)

    def checked(self) -> list[dict[str, str]]:
        """One line per rule: the pod rules' own, each per-host rule's merged over the hosts."""
        return list(self.diagnosis.checked) if self.diagnosis is not None else list(self.pod_checked)

    @property
    def rule_errors(self) -> dict[str, str]:
        return dict(self.diagnosis.rule_errors) if self.diagnosis is not None else {}

    def op_rows(self, top: int | None = None) -> list[dict[str, Any]]:
        """The run's op table: each op's rows of all hosts added up, largest self time first."""
        return merge_op_rows([h.op_rows for h in self.hosts], _common([h.peaks for h in self.hosts]), top)

    def host_timings(self) -> list[PartTiming]:
        """Each part of the hosts' passes (summary, rules, op rows) summed over the hosts, with every
        fact it computed first on any of them, in the order the passes ran them: where a host-by-host
        diagnosis spends its workers' time (`diagnose --timings`)."""
        seconds: dict[str, float] = {}
        facts: dict[str, dict[str, None]] = {}  # in the order first met
        for host in self.hosts:
            for timing in host.timings:
                seconds[timing.part] = seconds.get(timing.part, 0.0) + timing.seconds
                facts.setdefault(timing.part, {}).update(dict.fromkeys(timing.facts))
        return [PartTiming(part, total, tuple(facts[part])) for part, total in seconds.items()]

    def completeness(self) -> Completeness:
        """Whether the run was read whole: each host's losses and the host files left out. The share
        read is bounded by the hosts read alone: each host was measured apart from the others."""
        losses = [loss for h in self.hosts for loss in h.losses]
        total = len(self.hosts) + len(self.unreadable)
        return completeness(losses, len(self.unreadable), total, one_load=len(self.hosts) == 1)

    def diagnose_json(self) -> dict[str, Any]:
        return {
            "framework": self.framework.name,
            "framework_evidence": self.framework.evidence,
            "analysed": "host by host",
            "hosts": [h.host for h in self.hosts],
            "steps": {"count": self.pod.step_count, "aligned_by": self.pod.alignment},
            "unreadable": list(self.unreadable),
            "notes": self.pod.notes(),
            "findings": self.findings(),
            "rule_errors": self.rule_errors,
            "checked": self.checked(),
            **self.completeness().to_json(),
        }


def combine(results: list[HostResult]) -> PodRun:
    """The pod of per-host results (a pure function of them: wherever they were computed)."""
    if not results:
        raise ValueError("no host results to combine")
    from tpuscope.model.hosts import host_labels

    # Hosts are labelled as when the files load into one trace.
    labels = host_labels([r.host for r in results], [r.file_host or r.host for r in results])
    results = [r if label == r.host else _renamed(r, label) for r, label in zip(results, labels, strict=True)]
    origin = min(r.origin_ns for r in results)
    started = time.perf_counter()
    summaries = [_shifted(r.summary, (r.origin_ns - origin) * 1000) for r in results]
    pod = analyze_pod(summaries)
    pod_seconds = time.perf_counter() - started
    framework = _most_common_framework([r.framework for r in results])
    reports = [(r.host, _shifted_report(r.report, (r.origin_ns - origin) * 1000)) for r in results]
    # The pod rules read the pod table and the framework only: an analysis of the host names that
    # holds these two has all they ask.
    analysis = TraceAnalysis(Trace(hosts=[r.host for r in results]), known={POD: pod, FRAMEWORK: framework})
    from tpuscope.analysis.diagnose.across_hosts import diagnose_pod

    diagnosis = analysis.reading_facts(partial(diagnose_pod, analysis.context, reports, rules_package.RULES))
    combined_in = (PartTiming(POD_TABLE_PART, pod_seconds),)
    return PodRun(
        results,
        pod,
        framework,
        diagnosis.pod_findings,
        diagnosis.pod_checked,
        diagnosis,
        combined_in=combined_in,
    )


def _shifted_report(report: dict[str, Any], offset_ps: int) -> dict[str, Any]:
    """A host's report with its findings' evidence on the run's time origin instead of its file's."""
    if offset_ps == 0:
        return report
    findings = [
        dict(f, evidence=[_shift_item(e, offset_ps) for e in f.get("evidence", [])])
        for f in report.get("findings", [])
    ]
    return dict(report, findings=findings)


def _renamed(result: HostResult, host: str) -> HostResult:
    def items(evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [dict(e, host=host) if "host" in e else e for e in evidence]

    summary = replace(
        result.summary, host=host, evidence={k: items(v) for k, v in result.summary.evidence.items()}
    )
    report = _with_host_name(result.report, result.host, host)
    report["findings"] = [dict(f, evidence=items(f.get("evidence", []))) for f in report.get("findings", [])]
    return replace(result, host=host, summary=summary, report=report)


def _with_host_name(value: Any, old: str, new: str) -> Any:
    """`value` (a report as JSON) with the host name `old` said as `new` wherever it stands as a
    word, as the report of that host's planes in a trace of every host says it."""
    if not old:
        return value
    word = re.compile(rf"(?<![\w.-]){re.escape(old)}(?![\w.-])")

    def renamed(item: Any) -> Any:
        if isinstance(item, str):  # most strings do not hold the name: no regex pass over them
            return word.sub(new, item) if old in item else item
        if isinstance(item, dict):
            return {renamed(k): renamed(v) for k, v in item.items()}
        if isinstance(item, list):
            return [renamed(v) for v in item]
        return item

    return renamed(value)


def _shifted(summary: HostSummary, offset_ps: int) -> HostSummary:
    """The summary on the run's time origin instead of its own file's."""
    if offset_ps == 0:
        return summary
    evidence = {
        kind: [_shift_item(item, offset_ps) for item in items] for kind, items in summary.evidence.items()
    }
    return replace(
        summary, start_ps=summary.start_ps + offset_ps, end_ps=summary.end_ps + offset_ps, evidence=evidence,
        collective_ends=summary.collective_ends.shifted(offset_ps),
    )  # fmt: skip


def _shift_item(item: dict[str, Any], offset_ps: int) -> dict[str, Any]:
    moved = dict(item)
    for key in ("start_ps", "end_ps"):
        if key in moved and moved[key] is not None:
            moved[key] = int(moved[key]) + offset_ps
    return moved


def _most_common_framework(frameworks: list[Framework]) -> Framework:
    counts = Counter(f.name for f in frameworks)
    name = counts.most_common(1)[0][0]
    return next(f for f in frameworks if f.name == name)


def _common(peaks: list[Peaks | None]) -> Peaks | None:
    found = set(peaks)
    return found.pop() if len(found) == 1 else None


_SUMMED = ("occurrences", "total_time_us", "self_time_us")


def merge_op_rows(tables: list[list[dict[str, Any]]], peaks: Peaks | None, top: int | None) -> list[dict]:
    """Op rows of several hosts added up per (op, category, program), with the rates recomputed."""
    merged: dict[tuple, dict[str, Any]] = {}
    for rows in tables:
        for row in rows:
            key = (row["name"], row.get("category"), row.get("program"))
            into = merged.get(key)
            if into is None:
                merged[key] = {k: row.get(k) for k in ("name", "category", "program", *_SUMMED)}
                merged[key]["flops"] = row.get("flops")
                merged[key]["bytes_accessed"] = row.get("bytes_accessed")
                continue
            for k in _SUMMED:
                into[k] += row[k]
            for k in ("flops", "bytes_accessed"):
                if row.get(k) is not None:
                    into[k] = (into[k] or 0.0) + row[k]
    rows = sorted(merged.values(), key=lambda r: (-r["self_time_us"], -r["total_time_us"], r["name"]))
    total_self = sum(r["self_time_us"] for r in rows) or 1.0
    flops = np.array([np.nan if r["flops"] is None else r["flops"] for r in rows], np.float64)
    nbytes = np.array(
        [np.nan if r["bytes_accessed"] is None else r["bytes_accessed"] for r in rows], np.float64
    )
    bounds = bound_by(flops, nbytes, peaks) if peaks is not None and rows else None
    cumulative = 0.0
    out = []
    for index, row in enumerate(rows[: len(rows) if top is None else top]):
        seconds = row["self_time_us"] * 1e-6
        percent = 100.0 * row["self_time_us"] / total_self
        cumulative += percent
        row = dict(row)
        row["avg_time_us"] = row["total_time_us"] / max(row["occurrences"], 1)
        row["percent"] = percent
        row["cumulative_percent"] = cumulative
        # An async start or done's time is a launch or a wait: no rate (as the op table's rows).
        timed = seconds > 0 and not (is_async_half(row["name"]) or is_async_half(row.get("category") or ""))
        row["flop_rate_gflops"] = row["flops"] / seconds / 1e9 if row["flops"] and timed else None
        row["bandwidth_gbps"] = (
            row["bytes_accessed"] / seconds / 1e9 if row["bytes_accessed"] and timed else None
        )
        row["operational_intensity"] = (
            row["flops"] / row["bytes_accessed"] if row["flops"] and row["bytes_accessed"] else None
        )
        row["bound_by"] = BOUND_NAMES[int(bounds[index])] if bounds is not None else "unknown"
        out.append(row)
    return out
