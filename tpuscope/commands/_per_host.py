"""`--per-host`, `--workers N`, `--scheduler ADDRESS`: pods analysed host by host, here or on Dask.

`diagnose`, `overview` and `ops` take these options. A run folder of MANY_HOSTS files or more is
analysed host by host without being asked, so a 64-host run never needs every host in memory at
once; the output says "analysed host by host" then.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpuscope.model.units import format_duration

if TYPE_CHECKING:
    from tpuscope.analysis.pod_run import PodRun

_MARK = {"critical": "[CRITICAL]", "warning": "[WARNING] ", "info": "[info]    "}


def add_per_host_arguments(parser) -> None:
    from tpuscope.analysis.pod_run import MANY_HOSTS

    group = parser.add_argument_group("pods (run folders with one file per host)")
    group.add_argument(
        "--per-host",
        action="store_true",
        help=f"analyse the run host by host, one host in memory at a time (automatic from {MANY_HOSTS})",
    )
    group.add_argument(
        "--workers", type=int, default=0, metavar="N",
        help="analyse the hosts on N local Dask worker processes (implies --per-host; needs tpuscope[pods])",
    )  # fmt: skip
    group.add_argument(
        "--scheduler", metavar="ADDRESS",
        help="analyse the hosts on an existing Dask cluster, e.g. tcp://10.0.0.5:8786 (implies --per-host)",
    )  # fmt: skip


def per_host_run(args, force: bool = False) -> PodRun | None:
    """The host-by-host analysis when asked for (or `force`d, or when the run has many hosts), else None.

    A host file that cannot be read is left out with one warning on stderr naming it (an error,
    exit 2, with --strict), and the other hosts are analysed; so is a host the pod table treats
    apart (no steps, fewer steps, no device plane): one note on stderr naming it."""
    from tpuscope.analysis.pod_run import MANY_HOSTS
    from tpuscope.app.per_host import analyze_hosts
    from tpuscope.commands import UserFacingError

    if args.workers < 0:
        raise UserFacingError(f"--workers must be 0 or a positive number of processes, not {args.workers}.")
    asked = force or args.per_host or args.workers > 0 or bool(args.scheduler)
    if not asked and _file_count(args) < MANY_HOSTS:
        return None
    files = _profile_files(args)
    started = time.monotonic()
    show = sys.stderr.isatty()

    def progress(done: float, total: int, name: str) -> None:
        if show and time.monotonic() - started > 0.5:
            sys.stderr.write(f"\ranalysing hosts: {int(done)}/{total} {Path(name).name[:40]:<40}")
            sys.stderr.flush()

    unreadable: list[str] | None = None if getattr(args, "strict", False) else []
    try:
        run = analyze_hosts(
            files, workers=args.workers, scheduler=args.scheduler, progress=progress, unreadable=unreadable
        )
    except OSError as error:  # a scheduler that cannot be reached
        raise UserFacingError(f"the Dask scheduler {args.scheduler} cannot be reached ({error}).") from None
    finally:
        if show and time.monotonic() - started > 0.5:
            sys.stderr.write("\r" + " " * 70 + "\r")
    left = len(run.hosts)
    for sentence in run.unreadable:
        print(
            f"tpuscope: warning: {sentence} It is left out; the other {left} hosts are analysed.",
            file=sys.stderr,
        )
    warn_about_pod(run.pod.notes())
    return run


def warn_about_pod(notes: list[str]) -> None:
    """Each host the pod table treats apart from the others, named in one note on stderr."""
    for note in notes:
        print(f"tpuscope: note: {note}", file=sys.stderr)


def _file_count(args) -> int:
    """How many host files the run has, from the listing alone: a bucket's run is not downloaded
    to decide that (the load that follows fetches it, with its progress bar)."""
    from tpuscope.app.runs import host_file_count

    return host_file_count(args.path, args.run)


def _profile_files(args) -> list[str]:
    from tpuscope.app.runs import host_files

    return [str(f) for f in host_files(args.path, args.run)]


def print_pod_header(run: PodRun) -> None:
    """What `diagnose --per-host` says before its findings (printed as for one trace: `diagnose`)."""
    print(f"Framework: {run.framework.name} ({run.framework.evidence})")
    print(f"Hosts:     {len(run.hosts)}, analysed host by host")
    print(f"Steps:     {run.pod.step_count} aligned by {run.pod.alignment}")


def print_overview(run: PodRun, top_ops: int) -> None:
    print(f"Hosts:       {len(run.hosts)}, analysed host by host ({run.event_count:,} events)")
    print(f"Framework:   {run.framework.name}")
    print(f"Steps:       {run.pod.step_count} aligned by {run.pod.alignment}")
    print("\nPer host (mean per aligned step):")
    print(f"  {'host':<24} {'step':>10} {'input':>10} {'collective':>11}  busiest op")
    for row in run.pod.rows():
        data: dict[str, Any] = row.to_json()
        print(
            f"  {data['host'][:24]:<24} {_ms(data.get('step_time_us')):>10} {_ms(data.get('input_us')):>10} "
            f"{_ms(data.get('collective_us')):>11}  {data.get('busiest_op') or '-'}"
        )
    print(f"\nTop {top_ops} ops (all hosts):")
    for op in run.op_rows(top_ops):
        self_ps = op["self_time_us"] * 1e6
        print(f"  {op['percent']:5.1f}%  {format_duration(self_ps):>10}  {op['name'][:60]}")
    findings = run.findings()[:5]
    print("\nTop findings:" if findings else "\nNo problems found.")
    for finding in findings:
        print(f"  {_MARK.get(finding['severity'], '')} {finding['title']}")


def _ms(microseconds: Any) -> str:
    return "-" if microseconds is None else f"{float(microseconds) / 1e3:.2f} ms"
