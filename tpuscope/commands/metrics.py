"""`tpuscope metrics PATH`: the headline metrics, each with its unit, definition and scope.

The rows are `tpuscope.analysis.metrics`' (the same ones the SQL table `metrics`, `overview --json` and
the findings read), so a number here is the number everywhere. A pod analysed host by host (`--per-host`,
`--workers`, or a run of many hosts: `tpuscope.app.hosts`, the one engine) gives the pod's rows (the
mean over hosts) and each host's; a run folder read as one trace gives the trace's rows, the pod's in
place of those a pod has, and each host's.
"""

from __future__ import annotations

from typing import Any

from tpuscope.commands._console import add_path_argument, load_for_cli, print_json
from tpuscope.commands._per_host import add_per_host_arguments, per_host_run

DEFINITION_CHARS = 90  # the definition column of the text table is cut to this many characters


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "metrics",
        help="the headline metrics (step time, duty cycle, shares, memory peaks), each with its definition",
    )
    add_path_argument(parser)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    add_per_host_arguments(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    from tpuscope.analysis.metrics import Metrics

    pod = per_host_run(args, light=True)
    if pod is not None:
        from tpuscope.analysis.metrics import pod_metrics

        metrics = Metrics(tuple(pod_metrics(pod.pod)))
        payload: dict[str, Any] = {"analysed": "host by host", "hosts": [h.host for h in pod.hosts]}
    else:
        from tpuscope.analysis.metrics import METRICS
        from tpuscope.analysis.session import TraceAnalysis
        from tpuscope.app.payloads import metrics_json

        analysis = TraceAnalysis(load_for_cli(args))
        if args.json:
            print_json(metrics_json(analysis))  # what the MCP server's metrics tool returns too
            return 0
        metrics = analysis.get(METRICS)
        payload = {"analysed": "as one trace", "hosts": list(analysis.trace.hosts)}
    if args.json:
        print_json({"metrics": metrics.to_json(), **payload})
    else:
        print_table(metrics)
    return 0


def print_table(metrics) -> None:
    """One aligned row per metric: name, value (formatted by its unit), scope, definition; a pod's
    hosts after it, each under its name."""
    from tpuscope.analysis.metrics import format_metric

    rows = []
    for m in metrics:
        scope = m.scope if m.host is None else f"host {m.host}"
        if m.over:
            scope += f" ({m.over})"
        text = format_metric(m.value, m.unit)
        note = m.definition if m.value is not None else f"({m.reason}) {m.definition}"
        rows.append(
            (
                m.name,
                text,
                scope,
                note if len(note) <= DEFINITION_CHARS else note[: DEFINITION_CHARS - 1] + "…",
            )
        )
    widths = [
        max(len(header), *(len(r[i]) for r in rows)) for i, header in enumerate(("metric", "value", "scope"))
    ]
    print(f"{'metric':<{widths[0]}}  {'value':>{widths[1]}}  {'scope':<{widths[2]}}  definition")
    for name, value, scope, note in rows:
        print(f"{name:<{widths[0]}}  {value:>{widths[1]}}  {scope:<{widths[2]}}  {note}")
