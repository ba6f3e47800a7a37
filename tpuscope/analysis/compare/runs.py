"""Compare two runs of a program: did the change help, where, and is it larger than the noise?

Built on the analyses a single profile already has (the overview's per-step split, the op table, the
diagnose report); what is added is what only a pair has:

- configuration parity (trace format, framework and version, devices, hosts, programs, step source),
  listed before any number: a TPU run against a GPU run is allowed, and says so; so is a PyTorch
  profiler trace of a GPU run against an XPlane profile of a TPU run (the question of a team moving
  from GPU to TPU): their op names share nothing, so ops are matched by neutral op family
  (`compare_ops`, MATCH_CATEGORY), and when the runs define their steps differently the verdict
  paragraph says so before the step time;
- step time of both runs, steps that compiled left out (`compare_stats.median_change`: the typical
  step), and the time per step with compilation included (`compare_stats.mean_change`), each with a 95%
  confidence interval; the verdict comes from the typical step unless the runs compiled in a
  different number of steps and the time with compilation changed significantly, since that is then
  what the user pays (the same warm-up compilation in both runs is no change of the program);
- where the change came from: the per-step split (device busy, waiting for input, waiting for
  compilation, host-device syncs, other idle) of both runs and its delta, the op tables matched op by
  op (`compare_ops`), per category and per program;
- findings that are new, resolved, or changed in severity;
- memory: each program's peak heap and each allocator's peak in the profile, before and after (from
  `memory_report`, the same report `tpuscope memory` prints);
- the cause of the change (`cause.explain`): the code, the machine, the input pipeline or
  compilation, with the machine factor measured from the ops the change did not touch and the
  change net of it; a change below the noise floor is still called when, net of a well-measured
  machine factor, it passes the lower floor that factor allows (`Comparison.net_decided`);
- a short verdict paragraph, in words with the numbers.
"""

from __future__ import annotations

import math
from dataclasses import field
from typing import Any

import numpy as np

from tpuscope.analysis.compare import statistics as compare_stats
from tpuscope.analysis.compare.cause import (
    CAUSE_MACHINE,
    DEVICE_FACTS,
    FINGERPRINT_MAX_INSTRUCTIONS,
    Cause,
    explain,
    program_fingerprint,
    regression_exceeds,
)
from tpuscope.analysis.compare.ops import (
    ONLY_NEW,
    Families,
    MatchedTable,
    match_groups,
    match_ops,
    program_key,
)
from tpuscope.analysis.compare.statistics import Change
from tpuscope.analysis.diagnose.finding import Finding
from tpuscope.analysis.facts.context import Context, intervals_of
from tpuscope.analysis.facts.intervals import Intervals, difference, empty, merge_intervals, window_total
from tpuscope.analysis.facts.waits import compile_wait_intervals, input_wait_intervals
from tpuscope.analysis.memory.report import MEMORY_REPORT, MemoryReport
from tpuscope.analysis.overview import STEP_SOURCE_LABELS, Overview
from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.analysis.results import Result, ResultSource
from tpuscope.analysis.session import CONTEXT, OVERVIEW, TraceAnalysis
from tpuscope.analysis.steps import (
    SOURCE_DEVICE_STEPS,
    SOURCE_HOST_ANNOTATION,
    SOURCE_STEP_MARKER,
    SOURCE_TF_MARKER,
)
from tpuscope.model import order_statistics
from tpuscope.model.records import record
from tpuscope.model.trace import Trace
from tpuscope.model.vocabulary import NEUTRAL_DIALECT, Dialect, OpFamily

VERDICT_FASTER = "faster"
VERDICT_SLOWER = "slower"
VERDICT_NO_CHANGE = "no_significant_change"
VERDICT_NOT_COMPARABLE = "not_comparable"  # a run has no steps: there is no step time to compare

BASIS_TYPICAL_STEP = "median_of_steps_without_compilation"
BASIS_WITH_COMPILATION = "mean_of_steps_with_compilation"

SPLIT_PARTS = ("busy", "input", "compile", "sync", "idle")
SPLIT_LABELS = {
    "busy": "device busy",
    "input": "waiting for input",
    "compile": "waiting for compilation",
    "sync": "waiting after host-device syncs",
    "idle": "other idle",
}
# The op named in the verdict paragraph must carry at least this share of the net change of device
# time, or the sentence would single out one op among many similar ones. Our heuristic.
NAMED_OP_MIN_SHARE = 0.5
TOP_OPS_JSON = 50

# Step sources that are iterations of the training loop as the program (or its runtime) marks them; the
# others are repetitions of one compiled program, which may be part of an iteration or several.
LOOP_STEP_SOURCES = frozenset(
    {SOURCE_HOST_ANNOTATION, SOURCE_STEP_MARKER, SOURCE_TF_MARKER, SOURCE_DEVICE_STEPS}
)

# How the op tables were matched (`Comparison.op_matching`).
OPS_BY_NAME = "name"  # one format and framework: HLO text, names (compare_ops)
OPS_BY_NAME_THEN_CATEGORY = "name_then_category"  # frameworks differ: names first, the rest by family
OPS_BY_CATEGORY = "category"  # formats differ: op names share nothing, every op by family


@record
class RunAnalysis:
    """One side of a comparison: its overview plus what the comparison needs per step."""

    overview: Overview
    compiled: np.ndarray  # bool per step: a compilation ran inside the step's period
    sync_ps: np.ndarray  # per step: device idle after host-device syncs (carved out of "idle")
    compilations: int  # compile events in the profile
    versions: dict[str, str]
    memory: MemoryReport | None = None
    dialect: Dialect = NEUTRAL_DIALECT  # the reader's names: its format, and its op families
    # Program name (id stripped) -> the code fingerprints of its compilations that ran (empty when
    # the profile keeps no programs' code): equal in two runs, the same programs ran.
    programs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # What the profile says of its devices (DEVICE_FACTS: type, peak FLOP/s, peak memory bandwidth).
    device_facts: dict[str, str] = field(default_factory=dict)

    @property
    def trace_format(self) -> str:
        return self.dialect.name

    @property
    def steps(self) -> int:
        return len(self.overview.series)

    @property
    def durations_ps(self) -> np.ndarray:
        return self.overview.series.duration_ps

    def part_ps(self, part: str) -> np.ndarray:
        series = self.overview.series
        if part == "sync":
            return self.sync_ps
        if part == "idle":
            return np.maximum(series.idle_ps - self.sync_ps, 0.0)
        return series.part(part)

    def median_step(self) -> int:
        """Position of the step closest to the median of the steps without compilation (-1: none)."""
        durations = self.durations_ps
        if len(durations) == 0:
            return -1
        candidates = np.flatnonzero(~self.compiled) if (~self.compiled).any() else np.arange(len(durations))
        median = order_statistics.median(durations[candidates])
        return int(candidates[np.argmin(np.abs(durations[candidates] - median))])


def analyze_run(analysis: TraceAnalysis) -> RunAnalysis:
    """One side of a comparison: the trace's overview and the per-step facts a comparison adds
    (`RUN_ANALYSIS`, computed once per trace)."""
    return analysis.get(RUN_ANALYSIS)


def _run_analysis(analysis: ResultSource) -> RunAnalysis:
    trace = analysis.trace
    overview, memory, ctx = analysis.get(OVERVIEW), analysis.get(MEMORY_REPORT), analysis.get(CONTEXT)
    p0, p1 = overview.series.start_ps, overview.series.end_ps
    compile_events = intervals_of(ctx.compiles)
    compiled = window_total(compile_events, p0, p1) > 0 if len(p0) else np.zeros(0, bool)
    sync_ps = np.zeros(len(p0), np.float64)
    if len(p0) and ctx.syncs and ctx.devices:
        waiting = input_wait_intervals(ctx)
        accounted = merge_intervals(*_concat(waiting, compile_wait_intervals(ctx, waiting)))
        sync_wait = difference(_idle_after_syncs(ctx), accounted)
        sync_ps = np.minimum(window_total(sync_wait, p0, p1).astype(np.float64), overview.series.idle_ps)
    compilations = sum(len(idx) for _, idx in ctx.compiles)
    return RunAnalysis(
        overview=overview,
        compiled=np.asarray(compiled, bool),
        sync_ps=sync_ps,
        compilations=compilations,
        versions=_versions(trace),
        memory=memory,
        dialect=trace.dialect,
        programs=_program_fingerprints(analysis, overview),
        device_facts=_device_facts(trace),
    )


def _program_fingerprints(analysis: ResultSource, overview: Overview) -> dict[str, tuple[str, ...]]:
    """Program name -> fingerprints of the compilations of it whose ops ran (`program_fingerprint`)."""
    ops = overview.ops
    if ops is None:
        return {}
    ran = {int(p) for p in order_statistics.sorted_distinct(ops.program) if p}
    ran_ids = {_program_id_of(ops.label(p)) for p in ran}
    codes = [c for pid, c in analysis.get(PROGRAM_CODE).items() if pid in ran_ids]
    by_text = sum(len(c.index.names()) for c in codes) <= FINGERPRINT_MAX_INSTRUCTIONS
    found: dict[str, set[str]] = {}
    for code in codes:
        if by_text:
            texts = [i.text for i in code.instructions.values()]
        else:  # too many to print: the instructions' names (opcodes and fusion kinds) stand for them
            texts = code.index.names()
        found.setdefault(program_key(code.module_name), set()).add(program_fingerprint(texts))
    return {name: tuple(sorted(fps)) for name, fps in sorted(found.items())}


def _program_id_of(label: str) -> int | None:
    """The id in an op table's program label (`jit_step(8)` -> 8)."""
    head, _, tail = label.rpartition("(")
    digits = tail.rstrip(")")
    return int(digits) if head and digits.isdigit() else None


def _device_facts(trace: Trace) -> dict[str, str]:
    """Each of DEVICE_FACTS the device planes state, their distinct values joined."""
    facts: dict[str, str] = {}
    devices = [plane for plane in trace.planes if plane.is_device]
    for fact in DEVICE_FACTS:
        values = sorted({str(v) for v in (getattr(plane, fact) for plane in devices) if v is not None})
        if values:
            facts[fact] = ", ".join(values)
    return facts


RUN_ANALYSIS: Result[RunAnalysis] = Result(
    "run_analysis", _run_analysis, reads_facts=True, first=(OVERVIEW, MEMORY_REPORT)
)


def _concat(a: Intervals, b: Intervals) -> Intervals:
    return np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]])


def _idle_after_syncs(ctx: Context) -> Intervals:
    """From the end of each blocking device-to-host read to the device's next op, where it sat idle."""
    ends = np.sort(np.concatenate([t.end_ps[idx] for t, idx in ctx.syncs]))
    b0, b1 = ctx.device_busy
    if len(b0) == 0 or len(ends) == 0:
        return empty()
    nxt = np.searchsorted(b0, ends, side="left")
    inside = np.searchsorted(b0, ends, side="right") - 1
    busy_now = (inside >= 0) & (b1[np.maximum(inside, 0)] > ends)
    keep = ~busy_now & (nxt < len(b0))
    return merge_intervals(ends[keep], b0[np.minimum(nxt, len(b0) - 1)][keep])


def _versions(trace: Trace) -> dict[str, str]:
    """The framework and runtime versions the plane stats carry (which stats: the reader's dialect)."""
    stats = [name for name, _ in trace.dialect.framework_version_stats]
    stats += [name for name in trace.dialect.runtime_version_stats if name not in stats]
    found: dict[str, str] = {}
    for plane in trace.planes:
        for stat in stats:
            value = plane.stats.get(stat)
            if isinstance(value, (str, bytes)) and stat not in found:
                found[stat] = value.decode(errors="replace") if isinstance(value, bytes) else value
    return found


@record
class ParityItem:
    aspect: str
    base: str
    new: str

    @property
    def same(self) -> bool:
        return self.base == self.new

    def to_json(self) -> dict[str, Any]:
        return {"aspect": self.aspect, "base": self.base, "new": self.new, "same": self.same}


@record
class Split:
    """Mean ms per step of each part, over the steps the verdict is based on."""

    steps: str  # "without_compilation" or "all"
    base_ps: dict[str, float]
    new_ps: dict[str, float]
    base_step_ps: float
    new_step_ps: float

    def delta_ps(self, part: str) -> float:
        return self.new_ps[part] - self.base_ps[part]

    def percent(self, side: str, part: str) -> float:
        values, step = (
            (self.base_ps, self.base_step_ps) if side == "base" else (self.new_ps, self.new_step_ps)
        )
        return 100.0 * values[part] / step if step > 0 else 0.0

    def cause(self, sign: float) -> str | None:
        """The part whose change per step goes the most in the direction `sign` (+1 slower, -1 faster)."""
        if sign == 0:
            return None
        best = max(SPLIT_PARTS, key=lambda p: sign * self.delta_ps(p))
        return best if sign * self.delta_ps(best) > 0 else None

    def to_json(self) -> dict[str, Any]:
        def side(values: dict[str, float], name: str) -> dict[str, dict[str, float]]:
            return {
                p: {"ms_per_step": round(values[p] / 1e9, 4), "percent": round(self.percent(name, p), 2)}
                for p in SPLIT_PARTS
            }

        return {
            "steps": self.steps,
            "parts": {p: SPLIT_LABELS[p] for p in SPLIT_PARTS},
            "base": side(self.base_ps, "base"),
            "new": side(self.new_ps, "new"),
            "delta_ms_per_step": {p: round(self.delta_ps(p) / 1e9, 4) for p in SPLIT_PARTS},
        }


@record
class FindingChanges:
    new: list[Finding] = field(default_factory=list)
    resolved: list[Finding] = field(default_factory=list)
    changed: list[tuple[Finding, Finding]] = field(default_factory=list)  # (base, new)

    def to_json(self) -> dict[str, list[dict[str, Any]]]:
        def brief(f: Finding) -> dict[str, Any]:
            return {"id": f.id, "severity": f.severity.label, "title": f.title}

        return {
            "new": [brief(f) for f in self.new],
            "resolved": [brief(f) for f in self.resolved],
            "changed": [
                {
                    "id": n.id,
                    "base_severity": b.severity.label,
                    "new_severity": n.severity.label,
                    "base_title": b.title,
                    "new_title": n.title,
                }
                for b, n in self.changed
            ],
        }


@record
class Comparison:
    """Everything `tpuscope compare` and the Compare view show, computed once."""

    base: RunAnalysis
    new: RunAnalysis
    parity: list[ParityItem]
    typical: Change | None  # median of the steps without compilation
    with_compilation: Change | None  # mean of all steps (only when a run compiled inside its steps)
    basis: str
    verdict: str
    split: Split | None
    ops: MatchedTable
    categories: MatchedTable
    programs: MatchedTable
    findings: FindingChanges
    summary: str
    memory: dict[str, Any] | None = None  # peaks per program and allocator, once memory analysis exists
    op_matching: str = OPS_BY_NAME
    cause: Cause | None = None  # why the step time changed (None: no significant change, or no steps)
    # The change is below the noise floor but, net of a measured machine factor, above the lower floor
    # that factor allows (`cause` module docstring): the verdict comes from the net change.
    net_decided: bool = False

    @property
    def across_formats(self) -> bool:
        return self.op_matching == OPS_BY_CATEGORY

    @property
    def step_definitions_differ(self) -> bool:
        """One run's steps are loop iterations, the other's repetitions of a program: the step times
        then compare only where one program execution is one iteration."""
        if not (self.base.steps and self.new.steps):
            return False
        kinds = {
            s in LOOP_STEP_SOURCES for s in (self.base.overview.steps.source, self.new.overview.steps.source)
        }
        return len(kinds) == 2

    @property
    def deciding(self) -> Change | None:
        return self.with_compilation if self.basis == BASIS_WITH_COMPILATION else self.typical

    @property
    def significant(self) -> bool:
        return self.deciding is not None and (self.deciding.significant or self.net_decided)

    def regressed_by_more_than(self, percent: float, ignore_machine: bool = False) -> bool:
        """The CI gate: NEW significantly slower than BASE by more than `percent`; with
        `ignore_machine`, the change net of the machine must be (a machine-caused one never is)."""
        change = self.deciding
        if change is None or not self.significant or change.change_percent <= 0:
            return False
        return regression_exceeds(
            change.change_percent, self.cause, self.net_decided, percent, ignore_machine
        )

    def to_json(self, top_ops: int | None = TOP_OPS_JSON) -> dict[str, Any]:
        typical = self.typical
        step_time: dict[str, Any] = {
            "base_median_ms": None if typical is None else round(typical.base_value_ps / 1e9, 4),
            "new_median_ms": None if typical is None else round(typical.new_value_ps / 1e9, 4),
            "change_percent": None if typical is None else round(typical.change_percent, 3),
            "ci95_percent": None if typical is None else typical.to_json()["ci95_percent"],
            "significant": None if typical is None else typical.significant,
            "method": compare_stats.METHOD_HODGES_LEHMANN,
            "basis": self.basis,
            "noise_floor_percent": None if typical is None else typical.noise_floor_percent,
            "base": _distribution_json(self.base),
            "new": _distribution_json(self.new),
            "with_compilation": None
            if self.with_compilation is None
            else {
                "base_mean_ms": round(self.with_compilation.base_value_ps / 1e9, 4),
                "new_mean_ms": round(self.with_compilation.new_value_ps / 1e9, 4),
                **self.with_compilation.to_json(),
            },
        }
        return {
            "verdict": self.verdict,
            "cause": None if self.cause is None else self.cause.to_json(),
            "net_of_machine": self.net_decided,
            "summary": self.summary,
            "base": self.base.overview.sources,
            "new": self.new.overview.sources,
            "parity": [p.to_json() for p in self.parity],
            "step_time": step_time,
            "split": None if self.split is None else self.split.to_json(),
            "across_formats": self.across_formats,
            "step_definitions_differ": self.step_definitions_differ,
            "op_matching": self.op_matching,
            "ops_per": self.ops.per,
            "ops": self.ops.to_json(top_ops),
            "ops_total": len(self.ops.rows),
            "op_matches": self.ops.match_counts(),
            "categories": self.categories.to_json(),
            "programs": self.programs.to_json(),
            "findings": self.findings.to_json(),
            "memory": self.memory,
        }


def _distribution_json(run: RunAnalysis) -> dict[str, Any]:
    durations = run.durations_ps[~run.compiled] if run.steps else np.zeros(0)
    return {
        "steps": run.steps,
        "count": int(len(durations)),
        "compiled_left_out": int(run.compiled.sum()),
        "median_ms": round(float(order_statistics.median(durations)) / 1e9, 4) if len(durations) else None,
        "p95_ms": round(float(order_statistics.percentile(durations, 95)) / 1e9, 4)
        if len(durations)
        else None,
        "step_source": run.overview.steps.source,
    }


def compare_traces(base: Trace, new: Trace, noise_floor_percent: float | None = None) -> Comparison:
    """BASE against NEW (loaded traces)."""
    runs = analyze_run(TraceAnalysis(base)), analyze_run(TraceAnalysis(new))
    return compare_runs(*runs, noise_floor_percent)


def noise_floor(base: RunAnalysis, new: RunAnalysis) -> float:
    """The smallest change reported: larger when either run's device is the host CPU."""
    kinds = {base.overview.devices.kind, new.overview.devices.kind}
    if "CPU" in kinds:
        return compare_stats.NOISE_FLOOR_HOST_CPU_PERCENT
    return compare_stats.NOISE_FLOOR_PERCENT


def compare_runs(base: RunAnalysis, new: RunAnalysis, noise_floor_percent: float | None = None) -> Comparison:
    """The comparison of two analyzed runs (`noise_floor_percent`: None for `noise_floor`'s)."""
    floor = noise_floor(base, new) if noise_floor_percent is None else float(noise_floor_percent)
    typical, with_compilation, basis = step_changes(
        base.durations_ps, base.compiled, new.durations_ps, new.compiled, floor
    )
    deciding = with_compilation if basis == BASIS_WITH_COMPILATION else typical
    verdict = VERDICT_NOT_COMPARABLE if deciding is None else deciding.direction
    split = _split(base, new, basis) if base.steps and new.steps else None
    base_ops, new_ops = base.overview.ops, new.overview.ops
    op_matching, families = _op_matching(base, new)
    ops = match_ops(base_ops, new_ops, base.steps, new.steps, families)
    categories = match_groups(base_ops, new_ops, "category", base.steps, new.steps, families)
    programs = match_groups(base_ops, new_ops, "program", base.steps, new.steps)
    parity = _parity(base, new)
    cause, net_decided = None, False
    if deciding is not None and split is not None and deciding.ci_excludes_zero:
        cause, net_decided = explain_parts(
            deciding,
            split.base_step_ps,
            split.base_ps,
            split.new_ps,
            ops,
            (base.programs, new.programs),
            (base.overview.devices.kind, new.overview.devices.kind),
            (base.device_facts, new.device_facts),
            (int(base.compiled.sum()), int(new.compiled.sum())),
            floor,
        )
        if net_decided:
            verdict = VERDICT_SLOWER if deciding.change_percent > 0 else VERDICT_FASTER
    findings = _finding_changes(base.overview.findings, new.overview.findings)
    comparison = Comparison(
        base,
        new,
        parity,
        typical,
        with_compilation,
        basis,
        verdict,
        split,
        ops,
        categories,
        programs,
        findings,
        summary="",
        op_matching=op_matching,
        cause=cause,
        net_decided=net_decided,
    )
    comparison.memory = compare_memory(base.memory, new.memory)
    comparison.summary = summarize(comparison)
    return comparison


def explain_parts(
    change: Change,
    base_step_ps: float,
    base_parts: dict[str, float],
    new_parts: dict[str, float],
    ops: MatchedTable,
    programs: tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]],
    device_kinds: tuple[str, str],
    device_facts: tuple[dict[str, str], dict[str, str]],
    compiled_steps: tuple[int, int],
    floor: float,
) -> tuple[Cause | None, bool]:
    """(cause, decided net of the machine) of a change whose interval excludes zero: the cause of a
    significant change, or of one below the floor that passes the lower floor net of the machine
    (`_passes_net_floor`); no cause for a change that is neither."""
    cause = explain(
        change.change_percent,
        base_step_ps,
        base_parts,
        new_parts,
        ops,
        programs[0],
        programs[1],
        device_differences(device_kinds, device_facts),
        host_is_device="CPU" in device_kinds,
        compiled_steps=compiled_steps,
        noise_floor_percent=floor,
    )
    if change.significant:
        return cause, False
    if _passes_net_floor(change, cause):
        return cause, True
    return None, False


def device_differences(
    kinds: tuple[str, str], facts: tuple[dict[str, str], dict[str, str]]
) -> list[tuple[str, str, str]]:
    """(what, BASE, NEW) of the device kind and of each device fact both profiles state differently."""
    found = []
    base_kind, new_kind = kinds[0] or "none", kinds[1] or "none"
    if base_kind != new_kind:
        found.append(("device kind", base_kind, new_kind))
    for fact in DEVICE_FACTS:
        b, n = facts[0].get(fact), facts[1].get(fact)
        if b is not None and n is not None and b != n:
            found.append((fact.replace("_", " "), b, n))
    return found


def _passes_net_floor(change: Change, cause: Cause) -> bool:
    """Net of the machine, the change is at least the floor the machine factor allows, the same way,
    and its interval (the change's, moved by the machine's part) still excludes zero."""
    net, floor = cause.net_change_percent, cause.net_noise_floor_percent
    if net is None or floor is None or cause.kind == CAUSE_MACHINE or net * change.change_percent <= 0:
        return False
    moved = change.change_percent - net
    low, high = change.ci_low_percent - moved, change.ci_high_percent - moved
    return abs(net) >= floor and (low > 0 or high < 0)


def step_changes(
    base_ps: np.ndarray, base_compiled: np.ndarray, new_ps: np.ndarray, new_compiled: np.ndarray, floor: float
) -> tuple[Change | None, Change | None, str]:
    """(change of the typical step, change with compilation or None, the basis of the verdict) of two
    runs' step durations and compiled-step masks: the typical step unless the runs compiled in a
    different number of steps and the time with compilation changed significantly."""
    typical = with_compilation = None
    if len(base_ps) and len(new_ps):
        typical = compare_stats.median_change(
            _steady_of(base_ps, base_compiled), _steady_of(new_ps, new_compiled), noise_floor_percent=floor
        )
        if int(base_compiled.sum()) != int(new_compiled.sum()):
            with_compilation = compare_stats.mean_change(
                base_ps, new_ps, base_compiled, new_compiled, noise_floor_percent=floor
            )
    if with_compilation is not None and (with_compilation.significant or typical is None):
        return typical, with_compilation, BASIS_WITH_COMPILATION
    return typical, with_compilation, BASIS_TYPICAL_STEP


def _steady_of(durations: np.ndarray, compiled: np.ndarray) -> np.ndarray:
    steady = durations[~compiled]
    return steady if len(steady) else durations[:0]


def _op_matching(base: RunAnalysis, new: RunAnalysis) -> tuple[str, Families | None]:
    """By name within one format and framework; by op family where names do not compare."""
    if base.trace_format != new.trace_format:
        return OPS_BY_CATEGORY, Families(base.dialect.op_family_of, new.dialect.op_family_of, False)
    if base.overview.framework.name != new.overview.framework.name:
        families = Families(base.dialect.op_family_of, new.dialect.op_family_of, True)
        return OPS_BY_NAME_THEN_CATEGORY, families
    return OPS_BY_NAME, None


def _peaks(report: MemoryReport | None) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
    """(program name without id, memory space) -> largest peak heap; allocator id -> peak in profile."""
    programs: dict[tuple[str, str], int] = {}
    allocators: dict[str, int] = {}
    if report is None:
        return programs, allocators
    for p in report.programs:
        key = (p.module_name or program_key(p.name), p.memory_space_name)
        programs[key] = max(programs.get(key, 0), int(p.peak_heap_bytes))
    for a in report.allocators:
        allocators[a.id] = max(allocators.get(a.id, 0), int(a.peak_in_profile_bytes))
    return programs, allocators


def compare_memory(base: MemoryReport | None, new: MemoryReport | None) -> dict[str, Any] | None:
    """Peak memory per program (and memory space) and per allocator, BASE -> NEW; None without any."""
    (bp, ba), (np_, na) = _peaks(base), _peaks(new)
    if not (bp or ba or np_ or na):
        return None

    def rows(b: dict, n: dict, label) -> list[dict[str, Any]]:
        found = []
        for key in sorted(set(b) | set(n), key=str):
            before, after = b.get(key), n.get(key)
            delta = None if before is None or after is None else after - before
            found.append(
                {**label(key), "base_peak_bytes": before, "new_peak_bytes": after, "delta_bytes": delta}
            )
        return sorted(found, key=lambda r: -abs(r["delta_bytes"] or 0))

    return {
        "programs": rows(bp, np_, lambda k: {"program": k[0], "memory_space": k[1]}),
        "allocators": rows(ba, na, lambda k: {"allocator": k}),
    }


def split_means(run: RunAnalysis, all_steps: bool) -> tuple[dict[str, float], float]:
    """Mean ps per step of each part of the split, and of the step, over all steps or those without
    compilation (all when every step compiled)."""
    mask = np.ones(run.steps, bool) if all_steps else ~run.compiled
    if not mask.any():
        mask = np.ones(run.steps, bool)
    values = {p: float(run.part_ps(p)[mask].mean()) for p in SPLIT_PARTS}
    return values, float(run.durations_ps[mask].mean())


def _split(base: RunAnalysis, new: RunAnalysis, basis: str) -> Split:
    every = basis == BASIS_WITH_COMPILATION
    (b, b_step), (n, n_step) = split_means(base, every), split_means(new, every)
    steps = "all" if every else "without_compilation"
    return Split(steps, b, n, b_step, n_step)


def _device_label(run: RunAnalysis) -> str:
    devices = run.overview.devices
    return devices.label if devices.kind else "none recorded"


def _framework_label(run: RunAnalysis) -> str:
    name = run.overview.framework.name
    versions = ", ".join(f"{k.removesuffix('_version')} {v}" for k, v in sorted(run.versions.items()))
    return f"{name} ({versions})" if versions else name


def _programs(run: RunAnalysis) -> list[str]:
    ops = run.overview.ops
    if ops is None:
        return []
    return sorted({program_key(ops.label(p)) for p in order_statistics.sorted_distinct(ops.program) if p})


def _parity(base: RunAnalysis, new: RunAnalysis) -> list[ParityItem]:
    """Configuration of both runs, differences first (each is a reason numbers may not compare)."""
    b, n = base.overview, new.overview
    items = [
        ParityItem("trace format", base.trace_format, new.trace_format),
        ParityItem("framework", _framework_label(base), _framework_label(new)),
        ParityItem("device kind", b.devices.kind or "none", n.devices.kind or "none"),
        ParityItem("device type", _device_label(base), _device_label(new)),
        ParityItem("device count", str(b.devices.count), str(n.devices.count)),
        ParityItem("host count", str(len(b.hosts)), str(len(n.hosts))),
        ParityItem("programs", ", ".join(_programs(base)) or "none", ", ".join(_programs(new)) or "none"),
        ParityItem(
            "step source",
            STEP_SOURCE_LABELS.get(b.steps.source, "no steps"),
            STEP_SOURCE_LABELS.get(n.steps.source, "no steps"),
        ),
    ]
    return sorted(items, key=lambda item: item.same)  # stable: differences first, in aspect order


def _worst_by_id(findings: list[Finding]) -> dict[str, Finding]:
    found: dict[str, Finding] = {}
    for f in findings:
        if f.id not in found or f.severity > found[f.id].severity:
            found[f.id] = f
    return found


def _finding_changes(base: list[Finding], new: list[Finding]) -> FindingChanges:
    b, n = _worst_by_id(base), _worst_by_id(new)
    return FindingChanges(
        new=[f for key, f in n.items() if key not in b],
        resolved=[f for key, f in b.items() if key not in n],
        changed=[(b[key], f) for key, f in n.items() if key in b and b[key].severity != f.severity],
    )


def _ms(ps: float) -> str:
    ms = ps / 1e9
    if ms >= 100:
        return f"{ms:.0f} ms"
    if ms >= 1:
        return f"{ms:.1f} ms"
    return f"{ms:.2f} ms"


def _signed(percent: float) -> str:
    if math.isinf(percent):
        return "-∞" if percent < 0 else "+∞"
    return "∞" if not math.isfinite(percent) else f"{percent:+.0f}%"


def _factor(change: Change) -> str:
    ratio = change.new_value_ps / change.base_value_ps if change.base_value_ps else 1.0
    if ratio >= 1.5:
        return f"{ratio:.1f}x slower"
    if ratio <= 1 / 1.5:
        return f"{1 / ratio:.1f}x faster"
    return f"{abs(change.change_percent):.0f}% {'slower' if ratio > 1 else 'faster'}"


def summarize(c: Comparison) -> str:
    """The verdict paragraph: what changed, by how much, how sure, and where it came from."""
    sentences = []
    differences = [p for p in c.parity if not p.same]
    if differences:
        listed = "; ".join(f"{p.aspect} {p.base} vs {p.new}" for p in differences)
        sentences.append(f"The runs differ in configuration ({listed}), so not all numbers compare.")
    if c.across_formats:
        families = ", ".join(f for f in OpFamily.ALL if f != OpFamily.OTHER)
        sentences.append(
            f"This comparison is across formats ({c.base.trace_format} vs {c.new.trace_format}): their "
            f"op names share nothing, so ops are matched by category ({families}), not by name."
        )
    if c.op_matching == OPS_BY_NAME_THEN_CATEGORY:
        sentences.append("The frameworks differ: ops no name matches are matched by category.")
    if c.step_definitions_differ:
        base_source, new_source = c.base.overview.steps.source, c.new.overview.steps.source
        sentences.append(
            "The runs define a step differently (BASE: "
            f"{STEP_SOURCE_LABELS.get(base_source, base_source)}; NEW: "
            f"{STEP_SOURCE_LABELS.get(new_source, new_source)}): a program execution may be part of a "
            "training iteration or several, so the step times compare only if each is one iteration."
        )
    change = c.deciding
    if change is None:
        missing = "BASE" if not c.base.steps else "NEW"
        sentences.append(f"{missing} has no steps, so step time is not compared.")
        return " ".join(sentences)
    what = "median" if c.basis == BASIS_TYPICAL_STEP else "mean"
    per = "per step" if c.basis == BASIS_TYPICAL_STEP else "per step including compilation"
    numbers = (
        f"{what} {_ms(change.base_value_ps)} -> {_ms(change.new_value_ps)}, "
        f"95% CI {_signed(change.ci_low_percent)}..{_signed(change.ci_high_percent)}"
    )
    if change.significant:
        sentences.append(f"NEW is {_factor(change)} {per} ({numbers}).")
    elif c.net_decided and c.cause is not None:
        net, floor = c.cause.net_change_percent or 0.0, c.cause.net_noise_floor_percent or 0.0
        way = "slower" if net > 0 else "faster"
        sentences.append(
            f"NEW is {abs(net):.0f}% {way} {per} net of the machine ({numbers}): the "
            f"{change.change_percent:+.0f}% change is below the {change.noise_floor_percent:.0f}% noise "
            "floor, but the ops it did not touch moved alike, so what is left of it is held to a "
            f"{floor:.0f}% floor."
        )
    else:
        if math.isinf(change.ci_low_percent) and math.isinf(change.ci_high_percent):
            reason = "too few steps for a 95% interval"
        elif not change.ci_excludes_zero:
            reason = "the interval includes zero"
        else:
            reason = f"below the {change.noise_floor_percent:.0f}% noise floor"
        sentences.append(
            f"No significant change in step time ({numbers}, {change.change_percent:+.1f}%: {reason})."
        )
    if c.basis == BASIS_WITH_COMPILATION and c.typical is not None:
        t = c.typical
        sentences.append(
            f"Steps without compilation: median {_ms(t.base_value_ps)} -> {_ms(t.new_value_ps)} "
            f"({t.change_percent:+.0f}%)."
        )
    if c.cause is not None:
        sentences.append(c.cause.summary)
    if c.significant and c.split is not None:
        sentences.extend(_cause_sentences(c, 1.0 if change.change_percent > 0 else -1.0))
    return " ".join(sentences)


def _cause_sentences(c: Comparison, sign: float) -> list[str]:
    split = c.split
    assert split is not None
    cause = split.cause(sign)
    if cause is None:
        return []
    verb = "rose" if sign > 0 else "fell"
    base_ms, new_ms = split.base_ps[cause], split.new_ps[cause]
    sentence = (
        f"{SPLIT_LABELS[cause].capitalize()} {verb} from {_ms(base_ms)} to {_ms(new_ms)} per step "
        f"({split.percent('base', cause):.0f}% -> {split.percent('new', cause):.0f}% of step time)"
    )
    if cause == "compile":
        sentence += f"; {int(c.base.compiled.sum())} -> {int(c.new.compiled.sum())} steps compiled"
    sentences = [sentence + "."]
    top = c.ops.rows[0] if c.ops.rows else None
    machine = c.cause is not None and c.cause.kind == CAUSE_MACHINE  # every op moved: none singled out
    if cause == "busy" and top is not None and c.ops.total_delta_ps * sign > 0 and not machine:
        share = c.ops.share_of_change(top)
        if share >= NAMED_OP_MIN_SHARE:
            extra = "extra" if sign > 0 else "saved"
            where = {
                ONLY_NEW: ", which BASE does not have",
                "only_base": ", which NEW does not have",
            }.get(top.match, "")
            what = f"`{top.name}`"
            if top.base_members or top.new_members:  # a family row: name its largest ops
                largest = [
                    f"{side} `{members[0]}`"
                    for side, members in (("BASE", top.base_members), ("NEW", top.new_members))
                    if members
                ]
                what = f"{top.name} ops (largest: {', '.join(largest)})"
            sentences.append(f"{share * 100:.0f}% of the {extra} device time is in {what}{where}.")
    return sentences
