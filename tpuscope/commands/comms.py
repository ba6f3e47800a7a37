"""`tpuscope comms PATH`: does communication hide behind compute? Per collective op, per host, per step.

The overlapped share of communication time (`overlap_percent`, HTA's communication/computation
overlap), each collective op with its count, bytes, time, exposed and overlapped time, nccl-tests'
algorithm and bus bandwidths and the code that issued it, and each host's communication; the text
lists the ops by exposed time, what costs the steps first. A pod of many hosts (or `--per-host`) goes
through the host-by-host engine's light pass (`tpuscope.app.hosts`), as `overview` does.
"""

from __future__ import annotations

from typing import Any

from tpuscope.analysis.pod.comms_report import CommsReport
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.commands._console import add_path_argument, load_for_cli, print_json
from tpuscope.commands._per_host import add_per_host_arguments, per_host_run
from tpuscope.model.units import format_bytes, format_percent_value

NAME_CHARS = 44  # op names are cut to this many characters in the text table
TOP_ROWS = 30  # ops in the text table (all of them are in --json)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "comms",
        help="communication: collective time per op, host and step, exposed vs overlapped with compute",
    )
    add_path_argument(parser)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    add_per_host_arguments(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    pod_run = per_host_run(args, light=True)  # the hosts' summaries hold every number shown
    pod = pod_run.pod if pod_run is not None else TraceAnalysis(load_for_cli(args)).pod
    report = CommsReport.of(pod)
    if args.json:
        print_json(report.to_json())
    else:
        print_text(report)
    return 0


def print_text(report: CommsReport) -> None:
    s = report.summary()
    if not report.rows and not report.communication_total_ps:
        print("No collectives: no device (or host) spent time in a collective in this profile.")
        return
    print(f"Hosts:         {s['hosts']}, {s['steps']} steps aligned by {s['aligned_by']}")
    if s["steps"] and not report.communication_total_ps:
        print(f"Communication: none inside the {s['steps']} steps (the ops below ran outside them)")
    elif s["steps"]:
        summed = " (summed over the hosts)" if s["hosts"] > 1 else ""
        print(
            f"Communication: {_ms(s['communication_us'])} ms in the steps{summed}, "
            f"{_ms(s['overlapped_us'])} ms overlapped with compute ({_pct(s['overlap_percent'])}), "
            f"{_ms(s['exposed_us'])} ms exposed "
            f"({_pct(s['exposed_percent_of_step_time'])} of step time)"
        )
    else:
        print("Communication: no steps to measure it in (the ops below are over the whole profile)")
    if s["waits_least"]:
        print(f"Waits least:   {s['waits_least']} (the others wait for it when it arrives late)")
    print("\nCollectives by exposed time (whole profile; ms, GB/s):")
    header = f"  {'op':<{NAME_CHARS}} {'kind':<22} {'count':>6} {'bytes/op':>10} {'time':>10} {'exposed':>10}"
    print(header + f" {'overlap':>8} {'algbw':>8} {'busbw':>8}  source")
    for row in report.rows[:TOP_ROWS]:
        r = row.to_json()
        name = r["name"] if len(r["name"]) <= NAME_CHARS else r["name"][: NAME_CHARS - 1] + "…"
        print(
            f"  {name:<{NAME_CHARS}} {r['kind'][:22]:<22} {r['count']:>6} {_bytes(r['bytes_per_op']):>10} "
            f"{_ms(r['time_us']):>10} {_ms(r['exposed_us']):>10} "
            f"{_pct(_percent(r['overlapped_us'], r['time_us'])):>8} {_gbps(r['algbw_gbps']):>8} "
            f"{_gbps(r['busbw_gbps']):>8}  {r['source'] or '-'}"
        )
        if "async_pairs" in r:
            print(
                f"  {'':<{NAME_CHARS}} {r['async_pairs']} async pairs: in flight {_ms(r['in_flight_us'])}, "
                f"waited {_ms(r['waited_us'])}, slack {_ms(r['slack_us'])}"
            )
    if len(report.rows) > TOP_ROWS:
        print(f"  ... {len(report.rows) - TOP_ROWS} more in --json")
    if len(report.hosts) > 1:
        print("\nPer host (over the aligned steps, ms):")
        print(f"  {'host':<24} {'communication':>14} {'overlapped':>11} {'exposed':>10} {'of step':>8}")
        for h in sorted(report.per_host(), key=lambda h: -h["exposed_us"]):
            print(
                f"  {h['host'][:24]:<24} {_ms(h['communication_us']):>14} {_ms(h['overlapped_us']):>11} "
                f"{_ms(h['exposed_us']):>10} {_pct(h['exposed_percent_of_step_time']):>8}"
            )


def _percent(part: float, whole: float) -> float | None:
    return 100.0 * part / whole if whole else None


def _ms(us: Any) -> str:
    return "-" if us is None else f"{float(us) / 1e3:,.2f}"


def _pct(value: Any) -> str:
    return "-" if value is None else format_percent_value(value)


def _gbps(value: Any) -> str:
    if value is None:
        return "-"
    return f"{float(value):,.1f}" if value >= 10 else f"{float(value):.3g}"


def _bytes(value: Any) -> str:
    return "-" if value is None else format_bytes(value, ".1f")
