"""Rule `async_wait`: the device spends its time waiting for asynchronous operations to finish.

XLA splits copies and collectives into a `-start` op that launches the transfer and a `-done`
op that blocks until it has arrived (`copy-start`/`copy-done`, `send`/`send-done`,
`all-reduce-start`/`all-reduce-done`, ...). Time in the `-done` ops is time the core waited:
the transfer was not hidden behind compute. What is waited for comes from the op's HLO text:
a copy whose source or destination lives in host memory (memory space 5) is host offloading;
other copies move buffers between memory spaces on the chip; the rest are collectives.
"""

from __future__ import annotations

from typing import Any

from tpuscope.analysis.async_ops import is_async_done
from tpuscope.analysis.diagnose.finding import (
    STEP_TIME_BANDS,
    RuleOutcome,
    costed_outcome,
    device_time_impact,
    ms,
    percent,
)
from tpuscope.analysis.diagnose.op_evidence import lines_words, longest_op_events, op_source
from tpuscope.analysis.diagnose.rule_results import ASYNC_WAIT
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW
from tpuscope.analysis.metrics.format import format_percent
from tpuscope.analysis.ops import OpTable
from tpuscope.model.records import record

RULE_ID = "async_wait"
IMPACT_THRESHOLDS = STEP_TIME_BANDS
# XProf smart suggestions flag async-done time above 10% (openxla/xprof
# xprof/convert/smart_suggestion/constants.h, the async-done threshold).
ASYNC_DONE_PERCENT = 10.0
# `copy-done`, `copy-done.4`, `all-reduce-done.1`, `send-done`, `async-done`: the waiting halves, as
# tpuscope.analysis.async_ops knows them (the op table's rates read the same opcodes).
EVIDENCE_PER_OP = 5  # per -done op
# -done ops holding less than this share of device time get no evidence or bandwidth: they did not wait.
# Our heuristic.
MIN_OP_PERCENT = 1.0

WAIT_HOST_TO_DEVICE = "copies from host memory into HBM (host offloading: buffers kept in host memory)"
WAIT_DEVICE_TO_HOST = "copies from HBM out to host memory (host offloading)"
WAIT_ON_CHIP = "copies between memory spaces on the chip (prefetches into faster memory)"

ADVICE_COPIES = {
    JAX: [
        "If these buffers were offloaded to host memory on purpose (memory_kind='pinned_host', "
        "jax.checkpoint offload policies, compute_on('device_host')), keep the ones that fit in HBM, or "
        "start their transfer earlier so it overlaps compute (e.g. in a scan, fetch the next layer's "
        "weights while computing this one).",
    ],
    PYTORCH_XLA: [
        "Keep the tensors on the XLA device instead of moving them to and from the host each step."
    ],
    TENSORFLOW: [
        "Keep variables and inputs on the TPU instead of moving them to and from the host each step."
    ],
    "": ["Keep data in device memory where it fits, or start its transfer earlier so compute hides it."],
}
ADVICE_COLLECTIVES = {
    JAX: [
        "Collectives waited for: let XLA overlap them with compute (--xla_tpu_enable_async_collective_fusion"
        "=true, the latency-hiding scheduler) or reduce their size (a sharding that communicates less).",
    ],
    "": ["Collectives waited for: overlap them with compute (async collective flags in XLA_FLAGS)."],
}


@record(frozen=True)
class AsyncWait:
    """Device time in async -done ops (the op table's rows by op, over all devices): what this rule
    and the `async_wait_share` metric (`tpuscope.analysis.metrics`) both read."""

    done_rows: tuple[int, ...]  # the op table's rows of -done ops
    done_ps: int  # their self time, summed over the devices
    total_self_ps: int  # every op's self time, summed over the devices
    devices: int
    reason: str = ""  # why there is no share (no device op time)

    @property
    def percent_of_device_time(self) -> float | None:
        """The -done ops' share of device op time (percent), None without device op time."""
        return 100.0 * self.done_ps / self.total_self_ps if self.total_self_ps > 0 else None

    def percent_of_step_time(self, periods: tuple[Any, Any]) -> float | None:
        """Time blocked in -done ops per device as a share of step time (the finding's cost)."""
        impact = device_time_impact(periods, self.done_ps, self.devices, "")
        return None if impact is None else impact.percent_of_step_time


def async_wait_of(table: OpTable | None) -> AsyncWait:
    if table is None or table.total_self_ps <= 0:
        return AsyncWait((), 0, 0, 0, "no device op time")
    rows = tuple(r for r, name in enumerate(table.names()) if is_async_done(name))
    done_ps = int(table.self_ps[list(rows)].sum()) if rows else 0
    return AsyncWait(rows, done_ps, int(table.total_self_ps), len(table.devices))


def run(ctx: Context) -> RuleOutcome:
    if not ctx.devices:
        return RuleOutcome([], "no device activity in the profile")
    table = ctx.op_table
    total_self = table.total_self_ps
    if total_self <= 0:
        return RuleOutcome([], "no device op time")
    names = table.names()
    wait = ctx.get(ASYNC_WAIT)
    done_rows = list(wait.done_rows)
    done_ps = wait.done_ps
    share = percent(done_ps, total_self)
    exact = wait.percent_of_device_time or 0.0
    checked = (
        f"{len(done_rows)} async -done op(s) hold {format_percent(exact)} of device self time, "
        f"{'at or above' if share >= ASYNC_DONE_PERCENT else 'below'} {ASYNC_DONE_PERCENT:g}%"
    )
    if share < ASYNC_DONE_PERCENT:
        return RuleOutcome([], checked)
    done_rows.sort(key=lambda r: -int(table.self_ps[r]))
    rows: list[dict[str, Any]] = []
    evidence: list[dict[str, Any]] = []
    kinds: dict[str, int] = {}
    for r in done_rows:
        waits_for, moved = _what_is_waited_for(ctx.op_text(r), names[r])
        self_ps = int(table.self_ps[r])
        kinds[waits_for] = kinds.get(waits_for, 0) + self_ps
        row: dict[str, Any] = {
            "op": names[r],
            "source": op_source(ctx, r),
            "waits_for": waits_for,
            "occurrences": int(table.occurrences[r]),
            "self_ms": ms(self_ps),
            "percent_of_device_time": percent(self_ps, total_self),
        }
        waited = row["percent_of_device_time"] >= MIN_OP_PERCENT
        if moved:
            row["bytes_per_transfer"] = moved
            per_op_s = self_ps / 1e12 / max(int(table.occurrences[r]), 1)
            if waited and per_op_s > 0:  # bytes over the wait: what the transfer achieved at most
                row["gb_per_s_over_the_wait"] = round(moved / per_op_s / 1e9, 2)
        rows.append(row)
        if waited:
            evidence += longest_op_events(table, r, f"waiting: {names[r]}", EVIDENCE_PER_OP)
    main_wait = max(kinds, key=lambda k: kinds[k])
    metrics = {
        "async_done_percent_of_device_time": share,
        "async_done_ms": ms(done_ps),
        "device_self_ms": ms(total_self),
        "ops": rows,
        "waiting_for_ms": {k: ms(v) for k, v in kinds.items()},  # device time per kind of wait
    }
    top = ", ".join(f"`{r['op']}` {format_percent(r['percent_of_device_time'])}" for r in rows[:4])
    top += lines_words([r["source"] for r in rows[:4]])
    explanation = (
        f"The devices spent {format_percent(exact)} of their op time ({ms(done_ps)} ms) in async -done ops, "
        f"which block until a transfer started earlier has finished: {top}. Mostly waited for: {main_wait}. "
        f"XProf suggests acting above {ASYNC_DONE_PERCENT:g}%: the transfers are not hidden behind compute."
    )
    first = rows[0]
    if "gb_per_s_over_the_wait" in first and first["waits_for"] != WAIT_ON_CHIP:
        explanation += (
            f" `{first['op']}` moves {first['bytes_per_transfer'] / 2**30:.2f} GiB per transfer, and the "
            f"core waits for each as long as {first['gb_per_s_over_the_wait']} GB/s would take: host "
            "transfers are far slower than HBM."
        )
    title = (
        f"Async wait: {format_percent(exact)} of device time waiting in {rows[0]['op']} and other -done ops"
    )
    advice = ctx.advice_for(ADVICE_COPIES) if any(r["op"].startswith("copy") for r in rows) else []
    if any(not r["op"].startswith("copy") for r in rows):
        advice += ctx.advice_for(ADVICE_COLLECTIVES)
    impact = device_time_impact(
        ctx.periods, done_ps, len(table.devices), "device time blocked in async -done ops, per device"
    )
    return costed_outcome(
        RULE_ID, title, explanation, metrics, evidence, advice, checked, impact, IMPACT_THRESHOLDS
    )


def _what_is_waited_for(text: str, name: str) -> tuple[str, int]:
    """What a -done op waits for, in words, and the bytes one transfer moves (0 when unknown)."""
    kind = name.split("-done")[0]
    if kind != "copy":
        return f"{kind} collective or transfer", 0
    from tpuscope.analysis.diagnose.hlo_text import HOST_MEMORY_SPACE, parse_instruction  # ~1.5 ms of import

    instruction = parse_instruction(text)
    if instruction is None or not instruction.results:
        return "copies (the profile has no HLO text to say which)", 0
    result = instruction.results[0]
    sources = [
        s for s in instruction.operands if s.dims == result.dims and s.element_type == result.element_type
    ]
    source_spaces = {s.memory_space for s in sources}
    if result.memory_space == HOST_MEMORY_SPACE:
        return WAIT_DEVICE_TO_HOST, result.bytes
    if HOST_MEMORY_SPACE in source_spaces:
        return WAIT_HOST_TO_DEVICE, result.bytes
    return WAIT_ON_CHIP, result.bytes
