"""Which device ops are halves of an asynchronous XLA instruction, whose own time is not their work's.

XLA splits copies, collectives and sends into a `-start` op that launches the work and a `-done` op
that waits for it (`copy-start`/`copy-done`, `all-reduce-start`/`all-reduce-done`, `send`/`send-done`,
`async-start`/`async-update`/`async-done` around any wrapped op). The start's own duration is the
launch (nanoseconds), the done's the wait: neither is the transfer's time, so bytes or FLOPs over
either is no rate (the TPU sample's copy-start ops would "move" 5 GiB in 6 ns: 3e9 GB/s). The op
table (`tpuscope.analysis.ops`), the pod's merged op rows and the app read this one predicate.
"""

from __future__ import annotations

import re

# XLA's asynchronous opcodes (openxla/xla, xla/hlo/ir/hlo_opcode.h: kAllGatherStart ... kSendDone):
# the names XLA gives these instructions on every backend and in every format that carries HLO ops.
ASYNC_OPCODES = frozenset(
    {
        "all-gather-start",
        "all-gather-done",
        "all-reduce-start",
        "all-reduce-done",
        "async-start",
        "async-update",
        "async-done",
        "collective-permute-start",
        "collective-permute-done",
        "copy-start",
        "copy-done",
        "recv",
        "recv-done",
        "send",
        "send-done",
        # reduce-scatter, all-to-all and collective-broadcast run asynchronously wrapped in async-start/-done;
        # their halves by the names of the wrapped op, as the async wait rule has matched them.
        "reduce-scatter-start",
        "reduce-scatter-done",
        "all-to-all-start",
        "all-to-all-done",
        "collective-broadcast-start",
        "collective-broadcast-done",
    }
)
# The halves that wait: the time in them is time the core waited for the work its start launched.
ASYNC_DONE_OPCODES = frozenset(code for code in ASYNC_OPCODES if code.endswith("-done"))
# An instruction's name is its opcode with XLA's uniquifying suffixes: `copy-start.4`, `send.1.clone`.
_SUFFIX = re.compile(r"(\.\d+|\.clone)+$")

NO_RATE_REASON = (
    "an async start or done op: its own time is the launch or the wait, not the transfer's or the "
    "work's, so no FLOP/s or GB/s"
)


def is_async_half(name: str) -> bool:
    """Whether an op name (`copy-start.4`, `%send-done.1`) or HLO category (`copy-done`) is the start,
    update or done of an asynchronous XLA instruction."""
    return _opcode(name) in ASYNC_OPCODES


def is_async_done(name: str) -> bool:
    """Whether an op name or category is the done of an asynchronous XLA instruction (its wait)."""
    return _opcode(name) in ASYNC_DONE_OPCODES


def _opcode(name: str) -> str:
    return _SUFFIX.sub("", name.strip().lstrip("%"))
