"""A run history: every run of a logdir in order, each against the previous, with the change's cause.

Users watch many runs, not two. Each run is reduced once to a `RunSummary`, small enough to keep
(a few kilobytes: its step durations, the per-step split's means, its op entries as the comparison
matches them, with keys hashed, its programs' code fingerprints and device facts), and a pair of
summaries is compared as `compare_runs` compares two analysed runs: the same step-time statistics
(`runs.step_changes`), op matching (`ops.match_sides`) and cause (`cause.explain`), so the history's
verdict on two runs is the verdict `tpuscope compare` gives them (tests check it is).

No verdict is called across a change of program: runs of another trace format or framework, or
that share no program name with the run before, start a new segment, and the entry says where the
program changed. A run with no steps has no step time and is compared with nothing; the next run
is compared with the last run that had steps.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import field
from typing import Any

import numpy as np

from tpuscope.analysis.compare.cause import Cause, regression_exceeds
from tpuscope.analysis.compare.ops import MatchedTable, OpEntries, match_sides, op_entries
from tpuscope.analysis.compare.runs import (
    BASIS_WITH_COMPILATION,
    SPLIT_PARTS,
    VERDICT_FASTER,
    VERDICT_NO_CHANGE,
    VERDICT_SLOWER,
    RunAnalysis,
    explain_parts,
    split_means,
    step_changes,
)
from tpuscope.analysis.compare.statistics import (
    NOISE_FLOOR_HOST_CPU_PERCENT,
    NOISE_FLOOR_PERCENT,
    Change,
    median_interval,
)
from tpuscope.model import order_statistics
from tpuscope.model.records import record

SUMMARY_VERSION = 1
# Op entries kept per run, largest self time first; the rest are one entry, `OTHER_OPS`. A history
# names the few ops that changed most, and the machine factor weighs ops of at least 1% of the time.
SUMMARY_OPS = 300
OTHER_OPS = "(other ops)"
TOP_CHANGED_OPS = 5  # changed ops listed per run

VERDICTS = (VERDICT_SLOWER, VERDICT_FASTER, VERDICT_NO_CHANGE)


@record
class RunSummary:
    """What a history needs of one run, kept between histories (`to_json` / `from_json`)."""

    run: str
    sources: list[str]
    trace_format: str
    framework: str
    device_kind: str
    step_source: str
    durations_ps: np.ndarray  # every step, in order
    compiled: np.ndarray  # bool per step: a compilation ran inside it
    parts_steady: dict[str, float]  # mean ps per step of each split part, steps without compilation
    step_steady_ps: float
    parts_all: dict[str, float]  # the same over all steps
    step_all_ps: float
    ops: OpEntries | None
    programs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    device_facts: dict[str, str] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return len(self.durations_ps)

    @property
    def steady_ps(self) -> np.ndarray:
        steady = self.durations_ps[~self.compiled]
        return steady if len(steady) else self.durations_ps

    @property
    def program_names(self) -> set[str]:
        names = set(self.programs)
        if self.ops is not None:
            names |= {p for p in self.ops.programs if p}
        return names

    def median_ms(self) -> float | None:
        steady = self.steady_ps
        return float(order_statistics.median(steady)) / 1e9 if len(steady) else None

    def median_interval_ms(self) -> tuple[float, float] | None:
        found = median_interval(self.steady_ps)
        return None if found is None else (found[0] / 1e9, found[1] / 1e9)

    def to_json(self) -> dict[str, Any]:
        ops = self.ops
        return {
            "version": SUMMARY_VERSION,
            "run": self.run,
            "sources": self.sources,
            "trace_format": self.trace_format,
            "framework": self.framework,
            "device_kind": self.device_kind,
            "step_source": self.step_source,
            "durations_ps": [float(v) for v in self.durations_ps],
            "compiled": [bool(v) for v in self.compiled],
            "parts_steady": self.parts_steady,
            "step_steady_ps": self.step_steady_ps,
            "parts_all": self.parts_all,
            "step_all_ps": self.step_all_ps,
            "ops": None
            if ops is None
            else {
                "names": ops.names,
                "categories": ops.categories,
                "programs": ops.programs,
                "keys": [list(k) for k in ops.match_keys()],
                "self_ps": ops.self_ps,
                "occurrences": ops.occurrences,
            },
            "programs": {k: list(v) for k, v in self.programs.items()},
            "device_facts": self.device_facts,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSummary | None:
        """The summary `to_json` wrote; None when it is of another version or not one."""
        try:
            if data.get("version") != SUMMARY_VERSION:
                return None
            raw = data["ops"]
            ops = None
            if raw is not None:
                names = list(raw["names"])
                ops = OpEntries(
                    names,
                    list(raw["categories"]),
                    list(raw["programs"]),
                    ["" for _ in names],
                    [float(v) for v in raw["self_ps"]],
                    [float(v) for v in raw["occurrences"]],
                    [[] for _ in names],
                    keys=[(str(k), bool(h)) for k, h in raw["keys"]],
                )
            return cls(
                run=str(data["run"]),
                sources=[str(s) for s in data["sources"]],
                trace_format=str(data["trace_format"]),
                framework=str(data["framework"]),
                device_kind=str(data["device_kind"]),
                step_source=str(data["step_source"]),
                durations_ps=np.asarray(data["durations_ps"], dtype=np.float64),
                compiled=np.asarray(data["compiled"], dtype=bool),
                parts_steady={str(k): float(v) for k, v in data["parts_steady"].items()},
                step_steady_ps=float(data["step_steady_ps"]),
                parts_all={str(k): float(v) for k, v in data["parts_all"].items()},
                step_all_ps=float(data["step_all_ps"]),
                ops=ops,
                programs={str(k): tuple(v) for k, v in data["programs"].items()},
                device_facts={str(k): str(v) for k, v in data["device_facts"].items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


def _hashed(key: tuple[str, bool]) -> tuple[str, bool]:
    """An op's match key, hashed: an HLO instruction's text can be kilobytes."""
    text, is_hlo = key
    return (hashlib.sha256(text.encode()).hexdigest()[:16] if is_hlo else text), is_hlo


def summarize(run: str, analysed: RunAnalysis) -> RunSummary:
    """The summary of one analysed run."""
    overview = analysed.overview
    steps = analysed.steps
    entries = None
    if overview.ops is not None:
        full = op_entries(overview.ops, steps)
        entries = _kept(full)
    parts_steady, step_steady = (
        split_means(analysed, False) if steps else (dict.fromkeys(SPLIT_PARTS, 0.0), 0.0)
    )
    parts_all, step_all = split_means(analysed, True) if steps else (dict.fromkeys(SPLIT_PARTS, 0.0), 0.0)
    return RunSummary(
        run=run,
        sources=list(overview.sources),
        trace_format=analysed.trace_format,
        framework=overview.framework.name,
        device_kind=overview.devices.kind or "",
        step_source=overview.steps.source,
        durations_ps=np.asarray(analysed.durations_ps, dtype=np.float64),
        compiled=np.asarray(analysed.compiled, dtype=bool),
        parts_steady=parts_steady,
        step_steady_ps=step_steady,
        parts_all=parts_all,
        step_all_ps=step_all,
        ops=entries,
        programs=dict(analysed.programs),
        device_facts=dict(analysed.device_facts),
    )


def _kept(full: OpEntries) -> OpEntries:
    """The largest `SUMMARY_OPS` entries, the rest summed into one `OTHER_OPS` entry."""
    order = sorted(range(len(full.names)), key=lambda r: -full.self_ps[r])
    keep, rest = order[:SUMMARY_OPS], order[SUMMARY_OPS:]
    keys = full.match_keys()
    kept = OpEntries(
        [full.names[r] for r in keep],
        [full.categories[r] for r in keep],
        [full.programs[r] for r in keep],
        ["" for _ in keep],
        [full.self_ps[r] for r in keep],
        [full.occurrences[r] for r in keep],
        [[] for _ in keep],
        keys=[_hashed(keys[r]) for r in keep],
    )
    if rest:
        kept.names.append(OTHER_OPS)
        kept.categories.append("")
        kept.programs.append("")
        kept.texts.append("")
        kept.self_ps.append(sum(full.self_ps[r] for r in rest))
        kept.occurrences.append(sum(full.occurrences[r] for r in rest))
        kept.table_rows.append([])
        assert kept.keys is not None
        kept.keys.append((OTHER_OPS, False))
    return kept


@record
class SummaryComparison:
    """Two summaries compared: the deciding change, its verdict, cause and matched ops."""

    typical: Change | None
    with_compilation: Change | None
    basis: str
    verdict: str
    cause: Cause | None
    ops: MatchedTable
    net_decided: bool = False

    @property
    def deciding(self) -> Change | None:
        return self.with_compilation if self.basis == BASIS_WITH_COMPILATION else self.typical

    def regressed_by_more_than(self, percent: float, ignore_machine: bool = False) -> bool:
        """As `Comparison.regressed_by_more_than`."""
        change = self.deciding
        if change is None or self.verdict != VERDICT_SLOWER:
            return False
        return regression_exceeds(
            change.change_percent, self.cause, self.net_decided, percent, ignore_machine
        )


def summary_floor(base: RunSummary, new: RunSummary) -> float:
    """`runs.noise_floor` of two summaries."""
    if "CPU" in (base.device_kind, new.device_kind):
        return NOISE_FLOOR_HOST_CPU_PERCENT
    return NOISE_FLOOR_PERCENT


def compare_summaries(
    base: RunSummary, new: RunSummary, noise_floor_percent: float | None = None
) -> SummaryComparison:
    """BASE against NEW as `compare_runs` compares them (both must have steps)."""
    floor = summary_floor(base, new) if noise_floor_percent is None else float(noise_floor_percent)
    typical, with_compilation, basis = step_changes(
        base.durations_ps, base.compiled, new.durations_ps, new.compiled, floor
    )
    deciding = with_compilation if basis == BASIS_WITH_COMPILATION else typical
    ops = match_sides(base.ops, new.ops, base.steps > 0 and new.steps > 0)
    verdict = VERDICT_NO_CHANGE if deciding is None else deciding.direction
    cause, net_decided = None, False
    if deciding is not None and deciding.ci_excludes_zero:
        every = basis == BASIS_WITH_COMPILATION
        cause, net_decided = explain_parts(
            deciding,
            (base.step_all_ps if every else base.step_steady_ps),
            (base.parts_all if every else base.parts_steady),
            (new.parts_all if every else new.parts_steady),
            ops,
            (base.programs, new.programs),
            (base.device_kind, new.device_kind),
            (base.device_facts, new.device_facts),
            (int(base.compiled.sum()), int(new.compiled.sum())),
            floor,
        )
        if net_decided:
            verdict = VERDICT_SLOWER if deciding.change_percent > 0 else VERDICT_FASTER
    return SummaryComparison(typical, with_compilation, basis, verdict, cause, ops, net_decided)


def program_break(previous: RunSummary, run: RunSummary) -> str | None:
    """Why no verdict is called from `previous` to `run` (another format, framework or program), or
    None when they compare."""
    if previous.trace_format != run.trace_format:
        return f"the trace format changed ({previous.trace_format} -> {run.trace_format})"
    if previous.framework != run.framework:
        return f"the framework changed ({previous.framework} -> {run.framework})"
    before, after = previous.program_names, run.program_names
    if before and after and not before & after:
        return f"the program changed ({', '.join(sorted(before))} -> {', '.join(sorted(after))})"
    return None


@record
class HistoryEntry:
    """One run of the history; `summary` None when it could not be read (`error` says why)."""

    run: str
    summary: RunSummary | None
    error: str | None = None
    previous: str | None = None  # the run this one was compared with
    comparison: SummaryComparison | None = None
    program_changed: str | None = None  # no verdict: the program changed from the previous run
    note: str | None = None  # e.g. "no steps"

    @property
    def change(self) -> str | None:
        return None if self.comparison is None else self.comparison.verdict

    def to_json(self, top_ops: int = TOP_CHANGED_OPS) -> dict[str, Any]:
        s = self.summary
        interval = None if s is None else s.median_interval_ms()
        median = None if s is None else s.median_ms()
        c = self.comparison
        deciding = None if c is None else c.deciding
        return {
            "run": self.run,
            "sources": [] if s is None else s.sources,
            "steps": 0 if s is None else s.steps,
            "median_step_ms": None if median is None else round(median, 4),
            "ci_ms": None if interval is None else [round(interval[0], 4), round(interval[1], 4)],
            "previous": self.previous,
            "change_from_previous": self.change,
            "change_percent": None if deciding is None else round(deciding.change_percent, 3),
            "ci95_percent": None if deciding is None else deciding.to_json()["ci95_percent"],
            "basis": None if c is None else c.basis,
            "net_of_machine": None if c is None else c.net_decided,
            "cause": None if c is None or c.cause is None else c.cause.to_json(),
            "top_changed_ops": [] if c is None else _changed_ops(c.ops, top_ops),
            "program_changed": self.program_changed,
            "note": self.note,
            "error": self.error,
        }


# The fields of compare's op rows (MatchedTable.row_json) a history keeps per changed op.
CHANGED_OP_FIELDS = ("name", "program", "match", "base_self_us", "new_self_us", "delta_us")


def _changed_ops(ops: MatchedTable, top: int) -> list[dict[str, Any]]:
    return [
        {key: row[key] for key in CHANGED_OP_FIELDS}
        for row in (ops.row_json(r) for r in ops.rows[:top] if r.delta_ps and r.name != OTHER_OPS)
    ]


def build_history(
    runs: Iterable[tuple[str, RunSummary | None, str | None]], noise_floor_percent: float | None = None
) -> list[HistoryEntry]:
    """The entries of (run, summary or None, error) in the order given: each run with steps against
    the last earlier run with steps, unless the program changed between them."""
    entries: list[HistoryEntry] = []
    last_read: RunSummary | None = None  # where a change of program shows
    last_with_steps: RunSummary | None = None  # what the next run is compared with
    for name, summary, error in runs:
        entry = HistoryEntry(name, summary, error)
        entries.append(entry)
        if summary is None:
            continue
        if last_read is not None:
            entry.program_changed = program_break(last_read, summary)
            if entry.program_changed:
                last_with_steps = None
        last_read = summary
        if summary.steps == 0:
            entry.note = "no steps: no step time to compare"
            continue
        if last_with_steps is not None:
            entry.previous = last_with_steps.run
            entry.comparison = compare_summaries(last_with_steps, summary, noise_floor_percent)
        last_with_steps = summary
    return entries
