"""Pods too big for one trace in memory: each host analysed on its own, only small results kept.

A 64-host run of 100 MB host files would need every host's events in memory to be diagnosed as one
trace. Here each host file is opened alone, summarized (its `HostSummary`, its own diagnosis, its op
table rows) and dropped before the next, so memory stays at one host's model plus the summaries,
whatever the number of hosts. The same per-host function runs in this process (in turn) or on
Dask workers (`dask.distributed`, the optional `pods` extra: a local cluster of N processes, or an
existing scheduler near the data); the combination is a pure function of the per-host results, so
both ways give the same answer.

Host times are trace-relative per file; the results are shifted onto the run's common time origin
(the earliest host), as a trace holding every host would have them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import tpuscope.analysis.diagnose as rules_package  # its engine loads when a rule runs
from tpuscope.analysis.diagnose import collective_bound, straggler
from tpuscope.analysis.diagnose.context import Context
from tpuscope.analysis.framework import Framework
from tpuscope.analysis.ops import aggregate, collect_op_events
from tpuscope.analysis.pod.analysis import PodAnalysis, analyze_pod
from tpuscope.analysis.pod.summary import HostSummary, host_trace, summarize_host
from tpuscope.analysis.roofline import BOUND_NAMES, Peaks, bound_by
from tpuscope.errors import LoadCancelled, ProfileError
from tpuscope.model.trace import Trace
from tpuscope.readers.files import host_from_filename

if TYPE_CHECKING:
    from tpuscope.readers.registry import ProgressCallback

# Rules that compare hosts: they run once over every host's summary, not on each host alone.
POD_RULES = (straggler.RULE_ID, collective_bound.RULE_ID)
# From this many host files on, the commands analyse a run host by host instead of as one trace
# (bounded memory). Our heuristic: a 16-host run of 100 MB files already needs ~20 GB as one trace.
MANY_HOSTS = 16

# progress(hosts_done, hosts_total, host) -> False to cancel; in process, hosts_done grows by fractions
# of a host while one is read, so a caller can show steady progress and a Cancel takes effect mid-host.
HostProgress = Callable[[float, int, str], bool | None]


@dataclass
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


def analyze_host_file(path: str | Path, progress: ProgressCallback | None = None) -> list[HostResult]:
    """Opens one host file, analyses each host in it, and lets the trace go.

    `progress(fraction, message)` follows the file's load (False cancels it: LoadCancelled)."""
    from tpuscope.opener import open_trace  # the readers load where the files are read

    trace = open_trace(path, progress=progress)
    results = [_analyze_host(trace, host, str(path)) for host in (trace.hosts or [""])]
    if len(results) == 1:
        results[0].file_host = host_from_filename(Path(path))
    return results


def _analyze_host(trace: Trace, host: str, source: str) -> HostResult:
    one = trace if list(trace.hosts) == [host] else host_trace(trace, host)
    ctx = Context(one)
    rules = {k: v for k, v in rules_package.RULES.items() if k not in POD_RULES}
    report = rules_package.diagnose(one, rules=rules, context=ctx)
    summary = summarize_host(one, host, ctx)
    table = aggregate(collect_op_events(one, ctx.devices), "op") if ctx.devices else None
    return HostResult(
        source=source,
        host=host,
        origin_ns=int(trace.origin_ns),
        event_count=int(one.event_count),
        framework=ctx.framework,
        summary=summary,
        report=report.to_json(),
        op_rows=table.rows_json() if table is not None else [],
        peaks=table.peaks if table is not None else None,
        load_warnings=list(getattr(trace, "load_warnings", []) or []),
    )


def analyze_hosts(
    files: Sequence[str | Path],
    workers: int = 0,
    scheduler: str | None = None,
    progress: HostProgress | None = None,
    unreadable: list[str] | None = None,
) -> PodRun:
    """Every host file analysed on its own: in turn here (workers=0), or on Dask.

    `workers` > 0 starts a local Dask cluster of that many processes; `scheduler` (an address such
    as tcp://10.0.0.5:8786) uses an existing cluster instead. Only HostResults travel back.
    With an `unreadable` list (in process only), a host file that cannot be read is left out and its
    one-sentence reason appended there, so one broken host does not hide the other 63; without it,
    the first such file ends the analysis (ProfileError), as the CLI wants.
    """
    names = [str(f) for f in files]
    if workers > 0 or scheduler:
        results = _on_dask(names, workers, scheduler, progress)
    else:
        results = []
        first_error: ProfileError | None = None
        for done, name in enumerate(names):
            if progress is not None and progress(done, len(names), name) is False:
                raise LoadCancelled()
            try:
                results.extend(analyze_host_file(name, _within_host(progress, done, len(names), name)))
            except ProfileError as error:
                if unreadable is None:
                    raise
                unreadable.append(str(error))
                first_error = first_error or error
        if not results and first_error is not None:
            raise ProfileError(
                Path(names[0]).parent,
                f"none of its {len(names)} host files can be read (the first one: {first_error.cause})",
            )
    return combine(results)


def _within_host(progress: HostProgress | None, done: int, total: int, name: str) -> ProgressCallback | None:
    """A file's load progress as a fraction of one host of the run's."""
    if progress is None:
        return None
    return lambda fraction, _message: progress(done + fraction, total, name)


def _on_dask(names: list[str], workers: int, scheduler: str | None, progress: HostProgress | None):
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ProfileError(None, "--workers needs Dask (pip install 'tpuscope[pods]')") from None
    import dask

    cluster = None
    if scheduler:
        client = Client(scheduler, timeout="20s")
    else:
        # Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_=65536 (distributed.yaml,
        # nanny.pre-spawn-environ), so glibc hands every freed block of the decoder back to the OS and
        # the next host faults it in again: measured here, 2.5-3.2 s per 1M-event host instead of
        # 1.3-2.1 s. The thread caps stay; our workers keep glibc's default trimming.
        environ = {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1}
        with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
            # One thread per worker process: the decoder and numpy already use the cores they get.
            cluster = LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
        client = Client(cluster)
    try:
        futures = client.map(analyze_host_file, names, pure=False)
        by_future = dict(zip(futures, names, strict=True))
        results_of: dict[str, list[HostResult]] = {}
        for done, future in enumerate(as_completed(futures), start=1):
            results_of[by_future[future]] = future.result()
            if progress is not None:
                progress(done, len(names), by_future[future])
        return [r for name in names for r in results_of[name]]
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


@dataclass
class PodRun:
    """A pod analysed host by host: the per-host results and what comparing them says."""

    hosts: list[HostResult]
    pod: PodAnalysis
    framework: Framework
    pod_findings: list[dict[str, Any]]
    pod_checked: list[dict[str, str]]

    @property
    def event_count(self) -> int:
        return sum(h.event_count for h in self.hosts)

    def findings(self) -> list[dict[str, Any]]:
        """The pod's findings first, then each host's own, worst first; host findings name their host."""
        order = {"critical": 0, "warning": 1, "info": 2}
        per_host = []
        for result in self.hosts:
            for finding in result.report.get("findings", []):
                per_host.append(dict(finding, host=result.host, title=f"{result.host}: {finding['title']}"))
        combined = self.pod_findings + per_host
        return sorted(combined, key=lambda f: order.get(f["severity"], 3))

    def checked(self) -> list[dict[str, str]]:
        """Per rule: the pod rules' lines, and for host rules how many hosts were clean."""
        lines = list(self.pod_checked)
        rules: dict[str, list[str]] = {}
        for result in self.hosts:
            for item in result.report.get("checked", []):
                rules.setdefault(item["rule"], []).append(result.host)
        flagged: Counter[str] = Counter()
        for result in self.hosts:
            for rule in {f["id"] for f in result.report.get("findings", [])}:
                flagged[rule] += 1
        for rule, hosts in rules.items():
            lines.append(
                {"rule": rule, "summary": f"ran on each of {len(hosts)} hosts; {flagged[rule]} had findings"}
            )
        return lines

    def op_rows(self, top: int | None = None) -> list[dict[str, Any]]:
        """The run's op table: each op's rows of all hosts added up, largest self time first."""
        return merge_op_rows([h.op_rows for h in self.hosts], _common([h.peaks for h in self.hosts]), top)

    def diagnose_json(self) -> dict[str, Any]:
        return {
            "framework": self.framework.name,
            "framework_evidence": self.framework.evidence,
            "analysed": "host by host",
            "hosts": [h.host for h in self.hosts],
            "steps": {"count": self.pod.step_count, "aligned_by": self.pod.alignment},
            "findings": self.findings(),
            "rule_errors": {},
            "checked": self.checked(),
        }

    def overview_json(self, top_ops: int = 10) -> dict[str, Any]:
        return {
            "analysed": "host by host",
            "sources": [h.source for h in self.hosts],
            "hosts": [h.host for h in self.hosts],
            "events": self.event_count,
            "framework": self.framework.name,
            "pod": self.pod.to_json(),
            "top_ops": self.op_rows(top_ops),
            "top_findings": self.findings()[:5],
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
    summaries = [_shifted(r.summary, (r.origin_ns - origin) * 1000) for r in results]
    pod = analyze_pod(summaries)
    framework = _most_common_framework([r.framework for r in results])
    ctx = Context(Trace(hosts=[r.host for r in results]), framework=framework)
    ctx.__dict__["pod"] = pod  # the rules ask the context for the pod table: hand them this one
    findings: list[dict[str, Any]] = []
    checked: list[dict[str, str]] = []
    for rule_id in POD_RULES:
        outcome = rules_package.RULES[rule_id](ctx)
        found = outcome.findings if hasattr(outcome, "findings") else list(outcome)
        findings.extend(f.to_json() for f in found)
        checked.append({"rule": rule_id, "summary": getattr(outcome, "checked", "")})
    return PodRun(results, pod, framework, findings, checked)


def _renamed(result: HostResult, host: str) -> HostResult:
    def items(evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [dict(e, host=host) if "host" in e else e for e in evidence]

    summary = replace(
        result.summary, host=host, evidence={k: items(v) for k, v in result.summary.evidence.items()}
    )
    report = dict(result.report)
    report["findings"] = [dict(f, evidence=items(f.get("evidence", []))) for f in report.get("findings", [])]
    return replace(result, host=host, summary=summary, report=report)


def _shifted(summary: HostSummary, offset_ps: int) -> HostSummary:
    """The summary on the run's time origin instead of its own file's."""
    if offset_ps == 0:
        return summary
    evidence = {
        kind: [_shift_item(item, offset_ps) for item in items] for kind, items in summary.evidence.items()
    }
    return replace(
        summary, start_ps=summary.start_ps + offset_ps, end_ps=summary.end_ps + offset_ps, evidence=evidence
    )


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
        row["flop_rate_gflops"] = row["flops"] / seconds / 1e9 if row["flops"] and seconds > 0 else None
        row["bandwidth_gbps"] = (
            row["bytes_accessed"] / seconds / 1e9 if row["bytes_accessed"] and seconds > 0 else None
        )
        row["operational_intensity"] = (
            row["flops"] / row["bytes_accessed"] if row["flops"] and row["bytes_accessed"] else None
        )
        row["bound_by"] = BOUND_NAMES[int(bounds[index])] if bounds is not None else "unknown"
        out.append(row)
    return out
