"""`--per-host` and `--workers WHERE`: pods analysed host by host (`tpuscope.app.hosts`).

`diagnose`, `overview` and `ops` take these options. A run folder of MANY_HOSTS files or more is
analysed host by host without being asked, so a 64-host run never needs every host in memory at
once; the output says "analysed host by host" then. `overview` asks the engine for the light pass
(each host's summary, the pod rules over them: what the app's pod page shows first), `diagnose`
and `ops` for the full one (each host's own rules and op rows too).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tpuscope.analysis.pod_run import PodRun

TOP_FINDINGS = 5  # findings in an overview, worst first
_MARK = {"critical": "[CRITICAL]", "warning": "[WARNING] ", "info": "[info]    "}


def add_per_host_arguments(parser) -> None:
    from tpuscope.app.where import MANY_HOSTS, WHERE_HELP, WORKERS_ENV

    group = parser.add_argument_group("pods (run folders with one file per host)")
    group.add_argument(
        "--per-host",
        action="store_true",
        help=f"analyse the run host by host, one host per worker at a time (automatic from {MANY_HOSTS})",
    )
    group.add_argument(
        "--workers", metavar="WHERE",
        help=f"where the hosts are analysed (implies --per-host): {WHERE_HELP}; "
        f"default ${WORKERS_ENV}, else one process per core",
    )  # fmt: skip


def per_host_run(args, force: bool = False, light: bool = False) -> PodRun | None:
    """The host-by-host analysis when asked for (or `force`d, or when the run has many hosts), else None;
    `light`: each host's summary only, the pod rules over them (`overview`).

    A host file that cannot be read is left out with one warning on stderr naming it (an error,
    exit 2, with --strict), and the other hosts are analysed; so is a host the pod table treats
    apart (no steps, fewer steps, no device plane): one note on stderr naming it."""
    from tpuscope.app.where import MANY_HOSTS, parse_where  # not the engine: one trace is not a pod
    from tpuscope.commands import UserFacingError

    try:
        where = parse_where(args.workers)
    except ValueError as error:
        raise UserFacingError(f"--workers: {error}.") from None
    asked = force or args.per_host or args.workers is not None
    if not asked and _file_count(args) < MANY_HOSTS:
        return None
    from tpuscope.app.hosts import FULL, LIGHT, analyze_run  # the engine, for a pod only

    files = _profile_files(args)
    started = time.monotonic()
    show = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if show and time.monotonic() - started > 0.5:
            sys.stderr.write(f"\ranalysing hosts on {where}: {done}/{total}")
            sys.stderr.flush()

    unreadable: list[str] | None = None if getattr(args, "strict", False) else []
    try:
        run = analyze_run(
            files,
            LIGHT if light else FULL,
            where,
            progress=progress,
            unreadable=unreadable,
            # `diagnose --timings` measures every host now: a stored result's costs were another run's.
            use_cache=not getattr(args, "no_cache", False) and not getattr(args, "timings", False),
            fork=True,  # a command runs no thread a forked worker could inherit locked
        )
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


def overview_json(run: PodRun) -> dict[str, Any]:
    """`overview --json` of a pod analysed host by host: the light pass's answer, as the pod page's
    first picture (each host's row and busiest op, the host x step table, the pod rules' findings);
    the run's op table and each host's own findings are `ops` and `diagnose`."""
    return {
        "analysed": "host by host",
        "sources": [h.source for h in run.hosts],
        "hosts": [h.host for h in run.hosts],
        "events": run.event_count,
        "framework": run.framework.name,
        "pod": run.pod.to_json(),
        **_pod_headline(run),
        "top_findings": run.findings()[:TOP_FINDINGS],
        "findings_of": "the pod rules (tpuscope diagnose runs each host's rules too)",
        "unreadable": list(run.unreadable),
        **run.completeness().to_json(),
    }


def _pod_headline(run: PodRun) -> dict[str, Any]:
    """The pod's step time, duty cycles and split (the mean over hosts, each host's beside it), as
    `overview --json` of the run read as one trace prints them (`tpuscope.analysis.metrics.pod`)."""
    from tpuscope.analysis.metrics.pod import pod_metrics
    from tpuscope.analysis.overview import pod_headline_json

    return pod_headline_json(run.pod, pod_metrics(run.pod))


def print_overview(run: PodRun) -> None:
    print(f"Hosts:       {len(run.hosts)}, analysed host by host ({run.event_count:,} events)")
    print(f"Framework:   {run.framework.name}")
    print(f"Steps:       {run.pod.step_count} aligned by {run.pod.alignment}")
    complete = run.completeness()
    if not complete.complete:  # a host left out or cut: the pod below is the part read
        print(f"Incomplete:  {complete.reason}")
    print("\nPer host (mean per aligned step):")
    print(f"  {'host':<24} {'step':>12} {'input':>12} {'collective':>12}  busiest op")
    rows: list[dict[str, Any]] = [row.to_json() for row in run.pod.rows()]
    # Each column in one unit for all its hosts, rounded as every other time (issue 33).
    step, wait, collective = (
        _time_column(rows, key) for key in ("step_time_us", "input_us", "collective_us")
    )
    for data, step_text, input_text, collective_text in zip(rows, step, wait, collective, strict=True):
        print(
            f"  {data['host'][:24]:<24} {step_text:>12} {input_text:>12} {collective_text:>12}  "
            f"{data.get('busiest_op') or '-'}"
        )
    findings = run.findings()[:TOP_FINDINGS]
    all_clear = (
        "No problem between hosts"
        if complete.complete
        else f"No problem between hosts in {complete.part_read()} ({complete.summary}: the rest not judged)"
    )
    print("\nBetween hosts:" if findings else f"\n{all_clear}.")
    for finding in findings:
        print(f"  {_MARK.get(finding['severity'], '')} {finding['title']}")
    print("\nThe run's ops: tpuscope ops; each host's own findings too: tpuscope diagnose.")


def _time_column(rows: list[dict[str, Any]], key: str) -> list[str]:
    """The rows' times (microseconds under `key`, None: not measured) in the column's one unit."""
    from tpuscope.model.units import duration_column_unit, format_duration_in

    unit = duration_column_unit([float(r[key]) * 1e6 for r in rows if r.get(key) is not None])
    return ["-" if r.get(key) is None else format_duration_in(float(r[key]) * 1e6, unit) for r in rows]
