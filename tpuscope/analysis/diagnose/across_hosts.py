"""A pod's per-host findings and "what was checked" lines grouped across its hosts.

A per-host rule (input-bound, recompilation, low utilization...) is computed on each host alone,
whichever way the run was read (one trace of every host, host by host, on Dask): a host's
devices wait for that host's loader, not for another's. Its findings are then grouped here, so a
problem every host has is one finding naming them ("On 4 of 4 hosts (worker1 worst): ...") with
each host's figures in its evidence and `metrics["per_host"]`, and a problem of one host says
which ("worker2: ..."). The "checked" lines merge the same way: one line per rule, each figure
that differs between hosts given as its range over them.

Findings are grouped as JSON (`Finding.to_json`), the form a host's diagnosis travels in from a
Dask worker; `finding_from_json` turns the grouped ones back into `Finding`s for a `Report`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import Any

from tpuscope.analysis.diagnose import clock_offset, collective_bound, exposed_communication, straggler
from tpuscope.analysis.diagnose.finding import Finding, Impact, RuleOutcome, Severity
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.facts.evidence import MAX_EVIDENCE
from tpuscope.model.records import record

# Rules that compare hosts: they run once over the pod table (it and the framework are all they
# read), not on each host alone; every other rule runs on each host alone.
POD_RULES = (straggler.RULE_ID, collective_bound.RULE_ID, exposed_communication.RULE_ID, clock_offset.RULE_ID)

# The hosts a finding concerns, in pod order (a metric, so it survives the trip through `Finding`).
HOSTS_METRIC = "on_hosts"
# Hosts named in one line of text before "and N more".
NAMED_HOSTS = 8
_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


@record
class PodDiagnosis:
    """A pod's findings (JSON, worst first), its "what was checked" lines and rule errors."""

    findings: list[dict[str, Any]]
    checked: list[dict[str, str]]
    rule_errors: dict[str, str] = field(default_factory=dict)
    pod_findings: list[dict[str, Any]] = field(default_factory=list)  # the cross-host rules' alone
    pod_checked: list[dict[str, str]] = field(default_factory=list)
    # Each cross-host rule that ran: its wall seconds and the facts it computed first (--timings).
    pod_timings: list[tuple[str, float, tuple[str, ...]]] = field(default_factory=list)


def host_rules(rules: dict[str, Any]) -> dict[str, Any]:
    """The rules of `rules` that run on each host alone."""
    return {k: v for k, v in rules.items() if k not in POD_RULES}


def diagnose_pod(
    ctx: Context,
    host_reports: Sequence[tuple[str, dict[str, Any]]],
    rules: dict[str, Callable[[Context], Any]],
    wanted: Sequence[str] | None = None,
) -> PodDiagnosis:
    """The pod's diagnosis: the cross-host rules (of `wanted`, default all) run once on `ctx` (whose
    pod table and framework are the pod's), each host's own report (host, `Report.to_json()` with
    its evidence in run time, hosts in pod order) grouped across hosts. `rules`: every rule, in
    the engine's order (findings of equal cost tie-break by it)."""
    hosts = [host for host, _ in host_reports]
    every = list(rules)
    chosen = set(every if wanted is None else wanted)
    pod_findings: list[dict[str, Any]] = []
    pod_checked: list[dict[str, str]] = []
    errors: dict[str, str] = {}
    timings: list[tuple[str, float, tuple[str, ...]]] = []
    for rule_id in POD_RULES:
        if rule_id not in chosen:
            continue
        facts_before = set(ctx.facts_in_hand())
        started = time.perf_counter()
        try:
            outcome = rules[rule_id](ctx)
        except Exception as error:  # noqa: BLE001 - as engine.diagnose: one broken rule hides nothing else
            errors[rule_id] = f"{type(error).__name__}: {error}"
            continue
        finally:
            new_facts = tuple(f for f in ctx.facts_in_hand() if f not in facts_before)
            timings.append((rule_id, time.perf_counter() - started, new_facts))
        found = outcome.findings if isinstance(outcome, RuleOutcome) else outcome
        pod_findings.extend(_naming_hosts(f.to_json(), hosts) for f in found)
        summary = outcome.checked if isinstance(outcome, RuleOutcome) else ""
        pod_checked.append({"rule": rule_id, "summary": summary})
    reports = [(host, report.get("findings", [])) for host, report in host_reports]
    findings = pod_findings + group_host_findings(reports, hosts)
    host_lines = merge_checked(
        [(host, report.get("checked", []), report.get("findings", [])) for host, report in host_reports],
        hosts,
    )
    place = {rule: k for k, rule in enumerate(every)}
    checked = sorted(pod_checked + host_lines, key=lambda c: place.get(c["rule"], len(place)))
    failed: dict[str, list[tuple[str, str]]] = {}
    for host, report in host_reports:
        for rule, message in report.get("rule_errors", {}).items():
            failed.setdefault(rule, []).append((host, message))
    errors.update({rule: merge_texts(texts, len(hosts)) for rule, texts in failed.items()})
    return PodDiagnosis(sort_findings(findings, every), checked, errors, pod_findings, pod_checked, timings)


def _naming_hosts(finding: dict[str, Any], hosts: list[str]) -> dict[str, Any]:
    """A cross-host finding with the hosts it is about: the one it names, else those of its evidence."""
    metrics = finding.get("metrics", {})
    if isinstance(metrics.get("host"), str) and metrics["host"]:
        named = [metrics["host"]]
    else:
        seen = {e.get("host") for e in finding.get("evidence", [])}
        named = [h for h in hosts if h in seen] or list(hosts)
    return dict(finding, metrics={**metrics, HOSTS_METRIC: named})


def host_list(hosts: Sequence[str]) -> str:
    """ "worker0, worker1 and worker2"; past NAMED_HOSTS hosts, "... and 56 more"."""
    hosts = list(hosts)
    if len(hosts) > NAMED_HOSTS:
        return f"{', '.join(hosts[:NAMED_HOSTS])} and {len(hosts) - NAMED_HOSTS} more"
    if len(hosts) <= 1:
        return "".join(hosts)
    return f"{', '.join(hosts[:-1])} and {hosts[-1]}"


def _impact_percent(finding: dict[str, Any]) -> float:
    impact = finding.get("impact") or {}
    value = impact.get("percent_of_step_time")
    if value is None:
        value = impact.get("percent_of_capacity")
    return float(value) if value is not None else -1.0


def _rank(finding: dict[str, Any]) -> tuple[int, float]:
    return (_SEVERITY_ORDER.get(finding["severity"], 3), -_impact_percent(finding))


def _subject(finding: dict[str, Any]) -> tuple[str, str]:
    """What makes two hosts' findings the same finding: the rule and its title with the figures
    masked ("device waits for the host #% of step time")."""
    return finding["id"], _NUMBER.sub("#", finding["title"])


def group_host_findings(
    reports: Sequence[tuple[str, list[dict[str, Any]]]], hosts: Sequence[str]
) -> list[dict[str, Any]]:
    """Each host's findings (host, findings as JSON with evidence in run time) grouped across
    `hosts` (every host of the pod, in pod order): one finding per rule and subject."""
    order = {h: k for k, h in enumerate(hosts)}
    groups: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
    for host, findings in reports:
        for finding in findings:
            groups.setdefault(_subject(finding), []).append((host, finding))
    grouped = []
    for members in groups.values():
        members.sort(key=lambda m: order.get(m[0], len(order)))
        grouped.append(
            _one_host(*members[0], len(hosts)) if len(members) == 1 else _grouped(members, len(hosts))
        )
    return grouped


def _one_host(host: str, finding: dict[str, Any], total: int) -> dict[str, Any]:
    one = dict(finding)
    one["title"] = f"{host}: {finding['title']}" if total > 1 else finding["title"]
    one["metrics"] = {**finding.get("metrics", {}), HOSTS_METRIC: [host]}
    return one


def _grouped(members: list[tuple[str, dict[str, Any]]], total: int) -> dict[str, Any]:
    """One finding for a problem several hosts have: the most affected host's words and figures,
    every host's in its evidence and per_host metrics."""
    names = [host for host, _ in members]
    worst_host, worst = min(members, key=lambda m: _rank(m[1]))  # ties: the first host in pod order
    where = f"On {len(names)} of {total} hosts"
    per_host = {host: _host_figures(finding) for host, finding in members}
    impact = worst.get("impact")
    if impact is not None:
        impact = dict(impact, basis=f"{impact.get('basis', '')} (on {worst_host}, the most affected host)")
    evidence = [_host_item(host, finding) for host, finding in members]
    rest = [e for e in worst.get("evidence", [])]
    rest += [e for host, f in members if host != worst_host for e in f.get("evidence", [])]
    evidence += rest[:MAX_EVIDENCE]
    explanation = (
        f"{where} ({host_list(names)}). The figures below are {worst_host}'s, the most affected; each "
        f"host's are in the evidence and per_host. {worst['explanation']}"
    )
    return {
        **worst,
        "severity": worst["severity"],
        "title": f"{where} ({worst_host} worst): {worst['title']}",
        "impact": impact,
        "explanation": explanation,
        "metrics": {**worst.get("metrics", {}), HOSTS_METRIC: names, "per_host": per_host},
        "evidence": evidence,
    }


def _host_figures(finding: dict[str, Any]) -> dict[str, Any]:
    """One host's severity, cost and scalar metrics, for a grouped finding's per_host."""
    impact = finding.get("impact") or {}
    figures: dict[str, Any] = {"severity": finding["severity"]}
    for key in ("percent_of_step_time", "ms_per_step", "bytes", "percent_of_capacity"):
        if impact.get(key) is not None:
            figures[key] = impact[key]
    for key, value in finding.get("metrics", {}).items():
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            figures[key] = value
    return figures


def _host_item(host: str, finding: dict[str, Any]) -> dict[str, Any]:
    """An evidence item with one host's figures, at that host's first place to look."""
    evidence = finding.get("evidence", [])
    first = next((e for e in evidence if e.get("focus")), evidence[0] if evidence else None)
    impact = finding.get("impact")
    cost = Impact.from_json(impact).words() if impact else (finding.get("impact_note") or "cost not measured")
    item: dict[str, Any] = dict(first) if first is not None else {"start_ps": 0, "end_ps": 0}
    item.pop("focus", None)
    item.update(label=f"{host}: {finding['severity']}, {cost}", host=host)
    return item


def merge_checked(
    reports: Sequence[tuple[str, list[dict[str, str]], list[dict[str, Any]]]], hosts: Sequence[str]
) -> list[dict[str, str]]:
    """One "what was checked" line per rule from each host's (host, checked, findings): hosts whose
    lines read alike but for their figures share one line, each differing figure as its range."""
    by_rule: dict[str, list[tuple[str, str]]] = {}
    flagged: dict[str, list[str]] = {}
    for host, checked, findings in reports:
        for item in checked:
            by_rule.setdefault(item["rule"], []).append((host, item.get("summary", "")))
        for rule in dict.fromkeys(f["id"] for f in findings):
            flagged.setdefault(rule, []).append(host)
    lines = []
    for rule, summaries in by_rule.items():
        text = merge_texts(summaries, len(hosts))
        hit = flagged.get(rule, [])
        if hit and len(hosts) > 1:
            every_host = len(hit) == len(hosts)
            text += "; findings on every host" if every_host else f"; findings on {host_list(hit)}"
        lines.append({"rule": rule, "summary": text})
    return lines


def merge_texts(texts: Sequence[tuple[str, str]], total: int) -> str:
    """(host, text) pairs as one text: texts alike but for their figures merge, each figure that
    differs shown as "min-max"; texts of different shape are listed with their hosts."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for host, text in texts:
        groups.setdefault(_NUMBER.sub("#", text), []).append((host, text))
    parts = []
    for template, members in groups.items():
        merged = _ranges(template, [text for _, text in members])
        names = [host for host, _ in members]
        if total <= 1:
            parts.append(merged)
        elif len(names) == total:
            parts.append(f"{merged} (each of {total} hosts)" if len(groups) == 1 else f"all hosts: {merged}")
        else:
            parts.append(f"{host_list(names)}: {merged}")
    return "; ".join(parts)


def _ranges(template: str, texts: list[str]) -> str:
    columns = list(zip(*(_NUMBER.findall(t) for t in texts), strict=True))
    pieces = template.split("#")
    out = [pieces[0]]
    for column, piece in zip(columns, pieces[1:], strict=True):
        low, high = min(column, key=float), max(column, key=float)
        joiner = " to " if low.startswith("-") or high.startswith("-") else "-"
        out.append(low if float(low) == float(high) else f"{low}{joiner}{high}")
        out.append(piece)
    return "".join(out)


def sort_findings(findings: list[dict[str, Any]], rule_order: Sequence[str]) -> list[dict[str, Any]]:
    """Worst first, then the largest cost, then rule order (as `engine.diagnose` sorts), then title."""
    order = {rule: k for k, rule in enumerate(rule_order)}
    return sorted(findings, key=lambda f: (*_rank(f), order.get(f["id"], len(order)), f["title"]))


def finding_from_json(data: dict[str, Any]) -> Finding:
    """The `Finding` whose `to_json` is `data` (a grouped finding goes into a `Report`)."""
    impact = data.get("impact")
    return Finding(
        id=data["id"],
        severity=Severity.parse(data["severity"]),
        title=data["title"],
        explanation=data.get("explanation", ""),
        metrics=dict(data.get("metrics", {})),
        evidence=[dict(e) for e in data.get("evidence", [])],
        advice=list(data.get("advice", [])),
        impact=Impact.from_json(impact) if impact else None,
        impact_note=data.get("impact_note", ""),
    )
