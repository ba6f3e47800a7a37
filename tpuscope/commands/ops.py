"""`tpuscope ops PATH`: where the device time goes, by HLO op, category, program, framework op or
source line."""

from __future__ import annotations

import csv
import sys

from tpuscope.analysis.ops import GROUPINGS
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.payloads import RequestError, ops_json, ops_rows
from tpuscope.commands import UserFacingError
from tpuscope.commands._console import add_path_argument, load_for_cli, print_json
from tpuscope.commands._per_host import add_per_host_arguments, per_host_run
from tpuscope.model.units import format_duration, format_duration_column

CSV_FIELDS = (
    "name",
    "category",
    "program",
    "occurrences",
    "total_time_us",
    "avg_time_us",
    "self_time_us",
    "percent",
    "cumulative_percent",
    "flops",
    "flop_rate_gflops",
    "bytes_accessed",
    "bandwidth_gbps",
    "operational_intensity",
    "bound_by",
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "ops", help="op-level breakdown of device time (agrees with XProf hlo_stats)"
    )
    add_path_argument(parser)
    parser.add_argument(
        "--device",
        default="all",
        help="'all' (default), a device number N (position in the device list), or a kind: TPU, GPU, CPU",
    )
    parser.add_argument(
        "--by",
        choices=(*GROUPINGS, "scope"),
        default="op",
        help="group by HLO op (default), category, program, framework op, source line (file:line), "
        "or framework scope path (`tpuscope flame --by scope` as a table, --depth levels)",
    )
    parser.add_argument(
        "--depth", type=int, default=None, help="with --by scope: the scope levels shown (default 3)"
    )
    parser.add_argument("--top", type=int, default=None, help="show only the N rows with most self time")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print machine-readable JSON")
    output.add_argument("--csv", action="store_true", help="print CSV")
    add_per_host_arguments(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    if args.top is not None and args.top < 1:
        raise UserFacingError(f"--top must be a positive number of rows, not {args.top}.")
    if args.by == "scope":  # the scope tree as a table (tpuscope.commands._scope_table)
        from tpuscope.commands import _scope_table

        return _scope_table.run(args)
    pod = per_host_run(args)
    if pod is not None:
        return _print_per_host(args, pod)
    analysis = TraceAnalysis(load_for_cli(args))
    try:
        rows = ops_rows(analysis, args.by, args.device, args.top, args.path)
    except RequestError as error:
        raise UserFacingError(str(error)) from None
    if args.csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return 0
    payload = ops_json(analysis, args.by, args.device, args.top, args.path, rows)
    if args.json:
        print_json(payload)
        return 0
    table = analysis.op_table(args.by, args.device)
    breakdown = analysis.step_breakdown(args.device)
    device_label = payload["device"]
    _print_text(device_label, args.by, table, rows, breakdown)
    return 0


def _print_text(device_label, by, table, rows, breakdown) -> None:
    print(f"Devices:  {device_label}  ({len(table.devices)} device{'s' if len(table.devices) != 1 else ''})")
    print(
        f"Busy:     {format_duration(table.busy_ps / max(len(table.devices), 1))} per device, "
        f"duty cycle {breakdown.duty_cycle * 100:.1f}% of the profile"
    )
    if table.peaks:
        p = table.peaks
        print(
            f"Roofline: {p.teraflops_per_second:g} TFLOP/s, {p.hbm_gigabytes_per_second:g} GB/s ({p.source})"
        )
    if len(breakdown):
        print(
            f"Steps:    {len(breakdown)} ({breakdown.steps.description}); "
            f"busy {breakdown.step_duty_cycle * 100:.1f}% of step time"
        )
    print()
    if by == "source":
        _print_source_rows(rows)
        return
    width = max([len(by)] + [min(len(r["name"]), 60) for r in rows])
    totals, selves = _time_column(rows, "total_time_us"), _time_column(rows, "self_time_us")
    print(f"{by:<{width}}  {'count':>7}  {'total':>12}  {'self':>12}  {'self %':>6}  {'cum %':>6}  bound by")
    for r, total, self_time in zip(rows, totals, selves, strict=True):
        print(
            f"{r['name'][:60]:<{width}}  {r['occurrences']:>7}  {total:>12}  {self_time:>12}  "
            f"{r['percent']:>6.2f}  {r['cumulative_percent']:>6.2f}  {r['bound_by']}"
        )


def _time_column(rows, key: str) -> list[str]:
    """A column of the rows' times (microseconds under `key`), all in one unit (issue 33)."""
    return format_duration_column([r[key] * 1e6 for r in rows])


# The longest source path shown whole; longer ones keep their end (the file name and line).
SOURCE_WIDTH = 60
FOLDED_OPS_SHOWN = 3  # ops named per source line; the rest are counted


def _print_source_rows(rows) -> None:
    """By source: one line per `file:line`, with its function, self time, share and ops."""
    names = [
        r["name"] if len(r["name"]) <= SOURCE_WIDTH else "…" + r["name"][-SOURCE_WIDTH + 1 :] for r in rows
    ]
    width = max([len("source")] + [len(n) for n in names])
    fwidth = max([len("function")] + [min(len(r.get("function") or ""), 30) for r in rows])
    print(f"{'source':<{width}}  {'function':<{fwidth}}  {'self':>12}  {'self %':>6}  ops")
    for name, r, self_time in zip(names, rows, _time_column(rows, "self_time_us"), strict=True):
        ops = r.get("ops") or []
        shown = ", ".join(ops[:FOLDED_OPS_SHOWN]) + (
            f" (+{len(ops) - FOLDED_OPS_SHOWN})" if len(ops) > FOLDED_OPS_SHOWN else ""
        )
        print(
            f"{name:<{width}}  {(r.get('function') or '')[:30]:<{fwidth}}  "
            f"{self_time:>12}  {r['percent']:>6.2f}  {shown}"
        )


def _print_per_host(args, pod) -> int:
    """The op table of a run analysed host by host: every host's rows of one op added up."""
    if args.by != "op" or args.device != "all":
        raise UserFacingError("a run analysed host by host has its op table by op over all devices only.")
    rows = pod.op_rows(args.top)
    if args.csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    elif args.json:
        print_json({"device": "all", "analysed": "host by host", "hosts": [h.host for h in pod.hosts],
                    "by": "op", "rows": rows})  # fmt: skip
    else:
        print(f"Ops of {len(pod.hosts)} hosts, analysed host by host (self time, all devices):")
        for row, self_time in zip(rows, _time_column(rows, "self_time_us"), strict=True):
            print(f"  {row['percent']:5.1f}%  {self_time:>10}  "
                  f"{row['occurrences']:>8,}  {row['name'][:70]}")  # fmt: skip
    return 0
