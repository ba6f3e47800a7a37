"""Why a step time changed: the code, the machine, the input pipeline, or compilation.

A comparison that says "NEW is 1.7x slower" is read as "my change made it slower", and a CI gate
fails on it, even when nothing in the program changed and the machine was slower. A change has a
cause, and a profile pair holds the evidence for it:

- **machine**: the same programs (each program's code fingerprint equal: its instructions as the
  compiler prints them, names and ids stripped, `program_fingerprint`) whose ops all moved by a
  similar factor; or devices the profiles describe differently (device type, peak FLOP/s or
  memory bandwidth). The factor is measured from the ops the change did not touch (`machine_factor`);
- **code**: programs whose code differs, ops that appeared, disappeared or run a different number
  of times per step (the change's share, net of the machine factor, is what they carry), and host
  work between device ops that the machine factor does not explain;
- **input** and **compilation**: the per-step split's waiting for input and waiting for compilation;
- **mixed**: no one of these carries `DOMINANT_SHARE` of the change.

The change of each part of the step (the per-step split, mean ms per step) is attributed as
follows: waiting for input to input, waiting for compilation to compilation; device busy time to
the code as far as the touched ops changed net of `m` (and, unless every program's fingerprint is
equal in both runs or the devices differ, as far as the untouched ops departed from `m`), the
rest to the machine; the host's part (waiting after syncs, other idle) to the machine as far as
`m ** HOST_LOAD_EXPONENT` explains it when the device is the host's own CPU (one machine runs both:
a loaded CPU also wakes the host late), the rest to code.

**The noise floor net of the machine.** The host-CPU floor (`NOISE_FLOOR_HOST_CPU_PERCENT`, 50%)
exists because two recordings of one program on a shared CPU differ as a whole by up to 40%. When
the machine factor is measured (at least `MIN_MACHINE_OPS` untouched ops carrying at least
`MIN_MACHINE_COVERAGE` of the op time), that drift is measured rather than guessed, and what is left
of the change net of it is held to a lower floor: the spread of the untouched ops around the
factor (the weighted 10th to 90th percentile of their NEW/BASE ratios, as a factor, `spread`), and
never below the accelerators' `NOISE_FLOOR_PERCENT` nor above the host-CPU floor. Ops that move
alike leave little room for a code change to hide in; ops scattered by a busy machine leave the
floor where it was. The false-alarm rate, measured as tests/compare measures it (the healthy JAX
program recorded five times at once, `recordings.record_healthy_in_subprocesses`; here four such
batches a minute apart, on this project's 2-core virtual machines shared with other jobs): of 190
pairs (40 recorded together, 150 minutes apart), 31 got a lower floor (10% to 49%), and none was
called changed net of the machine (the largest change left net of it was 10% against a 35% floor,
at most 0.3 of the floor in any pair); without the machine factor none was called either. Same
programs leave only the host's part to the code, so the net change of a healthy pair is small.
A code change is found below the 50% floor when the untouched ops moved alike: the healthy program
plus a sort (`small_extra`) came out +9% per step (interval excluding zero) and +18% net of a 0.87x
machine, against a 10% floor. The factor assumes the untouched ops are untouched: a change that
slows the ops it did not replace (a sort evicting the cache) is counted as the machine's.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Any

import numpy as np

from tpuscope.analysis.compare.ops import ONLY_BASE, ONLY_NEW, MatchedTable, OpDelta, computation_key
from tpuscope.analysis.compare.statistics import NOISE_FLOOR_HOST_CPU_PERCENT, NOISE_FLOOR_PERCENT
from tpuscope.model.records import record
from tpuscope.model.units import format_duration

CAUSE_CODE = "code"
CAUSE_MACHINE = "machine"
CAUSE_INPUT = "input"
CAUSE_COMPILATION = "compilation"
CAUSE_MIXED = "mixed"
CAUSES = (CAUSE_CODE, CAUSE_MACHINE, CAUSE_INPUT, CAUSE_COMPILATION)

# One cause must carry this share of the change (summed over the parts moving its way) to be the
# cause; below, the change is `mixed` and each part is named. Our heuristic: two thirds leaves a
# third for the rest, which a user still reads as "mostly".
DOMINANT_SHARE = 2 / 3
# A cause carrying at least this share of the change is named beside the dominant one (or among
# those of a mixed change). Our heuristic: a tenth of a change is worth a look.
MINOR_SHARE = 0.1
# An op enters the machine factor when it holds at least this share of either run's op time: the
# ops below are a few microseconds, whose ratios a single preemption decides. Our heuristic.
MIN_OP_SHARE = 0.01
# The machine factor lowers the noise floor only from at least this many untouched ops holding at
# least this share of BASE's op time (one or two ops are no evidence of "every op alike").
MIN_MACHINE_OPS = 3
MIN_MACHINE_COVERAGE = 0.5
# Occurrences per step differing by more than this fraction: the op runs a different number of
# times, which is the program's doing (a loop count, a new call), not the machine's.
OCCURRENCE_TOLERANCE = 0.01
# On XLA:CPU a machine slowed by m stretches the host's waits by up to m ** this: a loaded CPU wakes
# the host late after each sync as well as running it slower. Our heuristic, measured on the loaded
# pairs of tests/compare: the wait after syncs grew 2.9x to 5.6x where the ops moved 2.7x to 5.8x;
# under a scheduler that runs a short op in one time slice and delays the wake-up after it (Linux's
# EEVDF, https://docs.kernel.org/scheduler/sched-eevdf.html) it grew 4.8x where the ops moved 1.74x.
HOST_LOAD_EXPONENT = 3.0
# The spread is the weighted 10th..90th percentile of the untouched ops' ratios.
SPREAD_QUANTILES = (0.1, 0.9)
# Ops named in a cause's summary and evidence.
NAMED_OPS = 3
# A program's code is fingerprinted from its instructions' text up to this many instructions in a
# profile (decoding and printing each costs about 80 us, tpuscope.model.code: 5k, 0.4 s); beyond,
# from their names with instance numbers stripped (opcodes and fusion kinds: a weaker identity).
FINGERPRINT_MAX_INSTRUCTIONS = 5_000
# The device facts that say the hardware differs (each device plane's, where the profile has them).
DEVICE_FACTS = ("device_type", "peak_teraflops_per_second", "peak_hbm_bw_gigabytes_per_second")


def program_fingerprint(texts: Iterable[str]) -> str:
    """A program's code identity: its instructions' text with names, instance numbers and ids
    stripped (`computation_key`), sorted, hashed; equal for the same program compiled in two
    processes, whatever order XLA numbered its instructions in."""
    keys = sorted(computation_key(t)[0] for t in texts)
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]


@record
class MachineFactor:
    """How much the ops the change did not touch moved, NEW / BASE."""

    factor: float  # the untouched ops' NEW time over their BASE time (all of them together)
    low: float  # weighted 10th percentile of the ratios
    high: float  # weighted 90th percentile
    ops: int  # untouched ops weighed
    moved_with: int  # of those, ratios on the factor's side of 1 (all of them for "every op alike")
    coverage: float  # their share of BASE's op time

    @property
    def spread(self) -> float:
        """The factor between the high and the low ratio: how unlike the untouched ops moved."""
        return self.high / self.low if self.low > 0 else math.inf

    @property
    def measured(self) -> bool:
        """Enough untouched ops, holding enough of the time, to stand for the machine."""
        return self.ops >= MIN_MACHINE_OPS and self.coverage >= MIN_MACHINE_COVERAGE

    def describe(self) -> str:
        """ "8 of 8 ops 2.8-3.5x slower" (the middle of their time)."""
        if abs(self.factor - 1.0) < 1e-9:
            return f"{self.ops} ops unchanged"
        slower = self.factor > 1
        lo, hi = (self.low, self.high) if slower else (1 / self.high, 1 / self.low)
        word = "slower" if slower else "faster"
        band = f"{lo:.1f}x" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}-{hi:.1f}x"
        return f"{self.moved_with} of {self.ops} ops {band} {word}"

    def to_json(self) -> dict[str, Any]:
        return {
            "factor": round(self.factor, 4),
            "spread": [round(self.low, 4), round(self.high, 4)],
            "ops": self.ops,
            "ops_moved_with_it": self.moved_with,
            "coverage": round(self.coverage, 4),
            "measured": self.measured,
        }


@record
class Cause:
    """Why the step time changed: `kind`, one sentence, and the numbers behind it."""

    kind: str
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)
    shares: dict[str, float] = field(default_factory=dict)  # each cause's share of the change
    net_change_percent: float | None = None  # the step change net of the machine, % of BASE
    net_noise_floor_percent: float | None = None  # the floor that net change is held to

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "summary": self.summary, "evidence": self.evidence}


def regression_exceeds(
    change_percent: float, cause: Cause | None, net_decided: bool, percent: float, ignore_machine: bool
) -> bool:
    """The regression gate once a change is known to be significantly slower: by more than `percent`,
    judged net of the machine where the net change decided the verdict or `ignore_machine` asks for it
    (a machine-caused change then never fails)."""
    if ignore_machine and cause is not None:
        if cause.kind == CAUSE_MACHINE:
            return False
        if cause.net_change_percent is not None:
            return cause.net_change_percent > percent
    if net_decided and cause is not None and cause.net_change_percent is not None:
        return cause.net_change_percent > percent
    return change_percent > percent


def _weighted_quantiles(values: np.ndarray, weights: np.ndarray, qs: Iterable[float]) -> list[float]:
    order = np.argsort(values)
    cumulative = np.cumsum(weights[order])
    cumulative = cumulative / cumulative[-1]
    at = np.minimum(np.searchsorted(cumulative, np.asarray(list(qs), dtype=np.float64)), len(values) - 1)
    return [float(v) for v in values[order][at]]


def _touched(row: OpDelta) -> bool:
    """The change reached this op: it is in one run only, or runs a different number of times."""
    if row.match in (ONLY_BASE, ONLY_NEW) or row.base_self_ps <= 0 or row.new_self_ps <= 0:
        return True
    occurrences = max(row.base_occurrences, row.new_occurrences, 1e-12)
    return abs(row.new_occurrences - row.base_occurrences) / occurrences > OCCURRENCE_TOLERANCE


def machine_factor(ops: MatchedTable) -> MachineFactor | None:
    """The factor by which the untouched ops (in both runs, as often per step, holding at least
    `MIN_OP_SHARE` of either run's op time) moved, all of them together (the ratio of their summed
    times: a median of a few ops' ratios would be one op's); None without any."""
    least_base, least_new = MIN_OP_SHARE * ops.base_total_ps, MIN_OP_SHARE * ops.new_total_ps
    rows = [
        r
        for r in ops.rows
        if not _touched(r) and (r.base_self_ps >= least_base or r.new_self_ps >= least_new)
    ]
    if not rows:
        return None
    base = np.array([r.base_self_ps for r in rows])
    new = np.array([r.new_self_ps for r in rows])
    logs, weights = np.log(new / base), base + new
    low, high = (math.exp(v) for v in _weighted_quantiles(logs, weights, SPREAD_QUANTILES))
    factor = float(new.sum() / base.sum())
    side = np.sign(logs) == np.sign(math.log(factor)) if factor != 1.0 else np.abs(logs) < 1e-12
    coverage = float(base.sum() / ops.base_total_ps) if ops.base_total_ps > 0 else 0.0
    return MachineFactor(factor, min(low, factor), max(high, factor), len(rows), int(side.sum()), coverage)


def same_programs(base: Mapping[str, tuple[str, ...]], new: Mapping[str, tuple[str, ...]]) -> bool | None:
    """Both runs ran the same programs with the same code; None when a run has no fingerprints."""
    if not base or not new:
        return None
    return dict(base) == dict(new)


def changed_programs(base: Mapping[str, tuple[str, ...]], new: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Programs whose code differs, that only one run has (named `+name` / `-name`)."""
    found = [name for name in sorted(set(base) & set(new)) if base[name] != new[name]]
    found += [f"+{name}" for name in sorted(set(new) - set(base))]
    found += [f"-{name}" for name in sorted(set(base) - set(new))]
    return found


def _fmt_ms(ps: float) -> str:
    return format_duration(abs(ps))


def explain(
    change_percent: float,
    base_step_ps: float,
    base_parts: Mapping[str, float],
    new_parts: Mapping[str, float],
    ops: MatchedTable,
    base_programs: Mapping[str, tuple[str, ...]],
    new_programs: Mapping[str, tuple[str, ...]],
    device_differences: list[tuple[str, str, str]],
    host_is_device: bool,
    compiled_steps: tuple[int, int] = (0, 0),
    noise_floor_percent: float = NOISE_FLOOR_HOST_CPU_PERCENT,
) -> Cause:
    """The cause of a step-time change of `change_percent` (the deciding statistic's), from the
    per-step split of both runs (`*_parts`: mean ps per step of busy, input, compile, sync, idle),
    the matched op table, each run's program fingerprints (program name -> fingerprints), the
    device facts that differ ((what, base, new)), and whether the device is the host's CPU;
    `noise_floor_percent`, the floor in force, caps the lower floor net of the machine."""
    sign = 1.0 if change_percent >= 0 else -1.0
    delta = {p: new_parts[p] - base_parts[p] for p in base_parts}
    factor = machine_factor(ops)
    m = factor.factor if factor is not None else 1.0
    same = same_programs(base_programs, new_programs)
    changed = changed_programs(base_programs, new_programs)
    touched = [r for r in ops.rows if _touched(r) and r.delta_ps]
    contributions = dict.fromkeys(CAUSES, 0.0)
    contributions[CAUSE_INPUT] = delta.get("input", 0.0)
    contributions[CAUSE_COMPILATION] = delta.get("compile", 0.0)
    # Device busy time: the touched ops' change net of m is the code's; so is the untouched ops'
    # departure from m unless every program's code is the same (or the devices differ); the rest is
    # the machine's. Op time converts to busy time at the runs' busy / op-time ratio.
    busy = delta.get("busy", 0.0)
    code_ops = sum(r.new_self_ps - m * r.base_self_ps for r in ops.rows if _touched(r))
    if not same and not device_differences:  # on other hardware the same ops compile differently
        untouched = [r for r in ops.rows if not _touched(r)]
        code_ops += sum(r.new_self_ps for r in untouched) - m * sum(r.base_self_ps for r in untouched)
    op_time = ops.base_total_ps + ops.new_total_ps
    busy_time = base_parts.get("busy", 0.0) + new_parts.get("busy", 0.0)
    code_busy = code_ops * busy_time / op_time if op_time > 0 else 0.0
    contributions[CAUSE_MACHINE] += busy - code_busy
    contributions[CAUSE_CODE] += code_busy
    # The host's part: one machine runs host and device on XLA:CPU, so m stretches the host's work.
    host = delta.get("sync", 0.0) + delta.get("idle", 0.0)
    host_base = base_parts.get("sync", 0.0) + base_parts.get("idle", 0.0)
    machine_host = (m**HOST_LOAD_EXPONENT - 1.0) * host_base if host_is_device and factor is not None else 0.0
    if machine_host * host <= 0:
        machine_host = 0.0
    elif abs(machine_host) > abs(host):
        machine_host = host
    contributions[CAUSE_MACHINE] += machine_host
    contributions[CAUSE_CODE] += host - machine_host

    toward = {k: max(sign * v, 0.0) for k, v in contributions.items()}
    total = sum(toward.values())
    shares = {k: (v / total if total > 0 else 0.0) for k, v in toward.items()}
    ranked = sorted(CAUSES, key=lambda k: -shares[k])
    kind = ranked[0] if total > 0 and shares[ranked[0]] >= DOMINANT_SHARE else CAUSE_MIXED
    if total <= 0:
        kind = CAUSE_MIXED

    named_ops = sorted(touched, key=lambda r: -sign * r.delta_ps)[:NAMED_OPS]
    net_change = None
    net_floor = None
    if factor is not None and base_step_ps > 0:
        net_change = 100.0 * sum(v for k, v in contributions.items() if k != CAUSE_MACHINE) / base_step_ps
        if factor.measured:
            floor_from_spread = 100.0 * (factor.spread - 1.0)
            lowest = min(NOISE_FLOOR_PERCENT, noise_floor_percent)
            net_floor = min(max(floor_from_spread, lowest), noise_floor_percent)
    evidence: dict[str, Any] = {
        "same_programs": same,
        "changed_programs": changed,
        "machine_factor": None if factor is None else factor.to_json(),
        "device_differences": [{"what": w, "base": b, "new": n} for w, b, n in device_differences],
        "shares": {k: round(v, 4) for k, v in shares.items()},
        "ms_per_step": {k: round(v / 1e9, 4) for k, v in contributions.items()},
        "changed_ops": [
            {"name": r.name, "program": r.program, "match": r.match, "delta_us": round(r.delta_ps / 1e6, 3)}
            for r in named_ops
        ],
        "net_change_percent": None if net_change is None else round(net_change, 3),
        "net_noise_floor_percent": None if net_floor is None else round(net_floor, 3),
    }
    summary = _summary(kind, sign, shares, factor, same, changed, named_ops, device_differences,
                       delta, compiled_steps)  # fmt: skip
    return Cause(kind, summary, evidence, shares, net_change, net_floor)


def _summary(
    kind: str,
    sign: float,
    shares: dict[str, float],
    factor: MachineFactor | None,
    same: bool | None,
    changed: list[str],
    named_ops: list[OpDelta],
    device_differences: list[tuple[str, str, str]],
    delta: dict[str, float],
    compiled_steps: tuple[int, int],
) -> str:
    """One sentence: the cause, and the evidence a user can check."""
    word = "slower" if sign > 0 else "faster"
    moved = "rose" if sign > 0 else "fell"
    parts = {
        CAUSE_MACHINE: _machine_words(factor, same, device_differences),
        CAUSE_CODE: _code_words(changed, named_ops, same),
        CAUSE_INPUT: f"waiting for input {moved} by {_fmt_ms(delta.get('input', 0.0))} per step",
        CAUSE_COMPILATION: f"waiting for compilation {moved} by "
        f"{_fmt_ms(delta.get('compile', 0.0))} per step ({compiled_steps[0]} -> {compiled_steps[1]} steps "
        "compiled)",
    }
    label = {
        CAUSE_MACHINE: "the machine",
        CAUSE_CODE: "the code",
        CAUSE_INPUT: "the input pipeline",
        CAUSE_COMPILATION: "compilation",
    }
    if kind != CAUSE_MIXED:
        others = [
            k for k in sorted(CAUSES, key=lambda k: -shares[k]) if k != kind and shares[k] >= MINOR_SHARE
        ]
        also = "".join(f"; also {label[k]} ({shares[k] * 100:.0f}%: {parts[k]})" for k in others)
        return f"Cause: {label[kind]} ({shares[kind] * 100:.0f}% of the change): {parts[kind]}{also}."
    listed = [k for k in sorted(CAUSES, key=lambda k: -shares[k]) if shares[k] >= MINOR_SHARE]
    if not listed:
        return f"Cause: mixed; no part of the step got {word} by itself."
    listing = "; ".join(f"{label[k]} {shares[k] * 100:.0f}% ({parts[k]})" for k in listed)
    return f"Cause: mixed: {listing}."


def _machine_words(factor: MachineFactor | None, same: bool | None, differences: list) -> str:
    words = []
    if differences:
        words.append(", ".join(f"{what} {b} vs {n}" for what, b, n in differences))
    if factor is not None:
        words.append(factor.describe())
    if same:
        words.append("same HLO")
    elif same is None:
        words.append("the same ops")
    return ", ".join(words) or "the same ops"


def _code_words(changed: list[str], named_ops: list[OpDelta], same: bool | None) -> str:
    words = []
    if changed:
        words.append("program code changed: " + ", ".join(changed[:NAMED_OPS]))
    if named_ops:
        listed = []
        for r in named_ops:
            how = {ONLY_NEW: "new", ONLY_BASE: "gone"}.get(r.match, "runs a different number of times")
            signed = ("+" if r.delta_ps >= 0 else "-") + format_duration(abs(r.delta_ps))
            listed.append(f"`{r.name}` ({how}, {signed} per step)")
        words.append("ops " + ", ".join(listed))
    if words:
        return "; ".join(words)
    if same:
        return "the host's work between device ops changed (same HLO)"
    return "ops moved unevenly and the host's work between them changed"
