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
    }
)
# An instruction's name is its opcode with XLA's uniquifying suffixes: `copy-start.4`, `send.1.clone`.
_SUFFIX = re.compile(r"(\.\d+|\.clone)+$")

NO_RATE_REASON = (
    "an async start or done op: its own time is the launch or the wait, not the transfer's or the "
    "work's, so no FLOP/s or GB/s"
)


def is_async_half(name: str) -> bool:
    """Whether an op name (`copy-start.4`, `%send-done.1`) or HLO category (`copy-done`) is the start,
    update or done of an asynchronous XLA instruction."""
    return _SUFFIX.sub("", name.strip().lstrip("%")) in ASYNC_OPCODES
