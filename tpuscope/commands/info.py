"""`tpuscope info PATH`: hosts, planes, tracks with event counts, span, device type and peaks."""

from __future__ import annotations

from tpuscope.app.payloads import trace_summary
from tpuscope.commands._console import add_path_argument, load_for_cli, print_json
from tpuscope.model.units import format_duration


def register(subparsers) -> None:
    parser = subparsers.add_parser("info", help="summarize a profile: hosts, planes, tracks, event counts")
    add_path_argument(parser)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--all-lines", action="store_true", help="also list tracks with no events")
    parser.set_defaults(handler=run)


def run(args) -> int:
    trace = load_for_cli(args)
    summary = trace_summary(trace)
    if args.json:
        print_json(summary)
        return 0
    print(f"Profile:  {', '.join(summary['sources'])}")
    print(f"Hosts:    {', '.join(trace.hosts) or '-'}")
    print(f"Span:     {format_duration(trace.duration_ps)}")
    print(f"Events:   {trace.event_count:,}")
    for message in trace.errors:
        print(f"Error recorded by the profiler: {message}")
    for plane in summary["planes"]:
        extra = []
        if plane["device_type"]:
            extra.append(plane["device_type"])
        if plane["peak_teraflops_per_second"]:
            extra.append(f"peak {plane['peak_teraflops_per_second']:g} TFLOP/s")
        if plane["peak_hbm_bw_gigabytes_per_second"]:
            extra.append(f"HBM {plane['peak_hbm_bw_gigabytes_per_second']:g} GB/s")
        tail = f"  ({', '.join(extra)})" if extra else ""
        print(f"\n{plane['host']}  {plane['name']}  [{plane['kind']}]  {plane['events']:,} events{tail}")
        for line in plane["lines"]:
            if line["events"] or args.all_lines:
                print(f"    {line['events']:>10,}  {line['name']}")
    return 0
