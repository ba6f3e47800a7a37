"""Rule `cpu_fallback`: PyTorch/XLA ops that ran on the CPU because XLA has no lowering for them.

PyTorch/XLA's own analysis reports any `aten::` counter other than
`aten::_local_scalar_dense` (which `.item()` produces) as an unlowered op
(torch_xla/csrc/runtime/metrics_analysis.cpp `UnloweredOp`; research/integration.md 1.4).
In a profile those ops show as host events named `aten::<op>`.
"""

from __future__ import annotations

import numpy as np

from tpuscope.analysis.diagnose.context import Context
from tpuscope.analysis.diagnose.finding import Finding, Severity, event_evidence, largest_first, ms

RULE_ID = "cpu_fallback"
FALLBACK_PATTERN = r"^aten::(?!_local_scalar_dense$)\w+$"

ADVICE = [
    "Replace the listed ops with ones XLA can lower, or move them out of the step; data-dependent ops "
    "such as nonzero or masked indexing have static-shape alternatives (torch.where with a fixed size).",
    "Check torch_xla.debug.metrics.executed_fallback_ops() and the aten:: counters in metrics_report().",
]


def run(ctx: Context) -> list[Finding]:
    found = ctx.host_events(FALLBACK_PATTERN)
    if not found:
        return []
    counts: dict[str, list[int]] = {}
    items = []
    for track, idx in found:
        names = track.name_id[idx]
        for name_id in np.unique(names):
            sel = idx[names == name_id]
            entry = counts.setdefault(ctx.trace.strings[int(name_id)], [0, 0])
            entry[0] += len(sel)
            entry[1] += int(track.duration_ps[sel].sum())
            items.extend(
                event_evidence(f"CPU fallback: {ctx.trace.strings[int(name_id)]}", track, int(i))
                for i in sel[:50]
            )
    ops = {
        name: {"count": c, "ms": ms(t)} for name, (c, t) in sorted(counts.items(), key=lambda kv: -kv[1][1])
    }
    total_ms = round(sum(v["ms"] for v in ops.values()), 3)
    title = f"CPU fallback: {len(ops)} op type(s) ran on the CPU ({', '.join(list(ops)[:3])})"
    explanation = (
        f"{sum(v['count'] for v in ops.values())} executions of aten:: ops ran on the CPU instead of the "
        f"device ({total_ms} ms). Each one copies its inputs to the host and the result back, and cuts "
        "the XLA graph."
    )
    metrics = {"ops": ops, "total_ms": total_ms}
    return [
        Finding(RULE_ID, Severity.WARNING, title, explanation, metrics, largest_first(items), list(ADVICE))
    ]
