"""What `tpuscope [PATH] [--compare NEW] [--at T0[:T1]] [--op NAME]` asks the app to open, and the
command line that opens the app where the user is now (View > Copy Link).

A deep link, as Perfetto's `?visStart=...&visEnd=...` and its "Share" link: a profile and a time
range, or an op, so a colleague or a bug report lands on the same place. Times are from the start of
the trace, as the timeline's ruler shows them, with a unit (12.3ms, 450us, 1.5s; a bare number is
milliseconds, as `tpuscope screenshot --window-ms` takes it).
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

from tpuscope.model.records import record
from tpuscope.readers import path_help

# Picoseconds per unit, as the timeline and `tpuscope.model.units` write them.
TIME_UNITS_PS = {"s": 1e12, "ms": 1e9, "us": 1e6, "\u00b5s": 1e6, "ns": 1e3, "ps": 1.0}
DEFAULT_UNIT = "ms"
_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-z\u00b5]*)\s*$")


class LaunchError(ValueError):
    """A command line the app cannot follow, as one sentence."""


@record(frozen=True)
class LaunchRequest:
    """What to open: `path`, compared with `compare` when given, at time range `at_ps` (t1 None: a
    point, shown with a little around it) or at op `op`."""

    path: str | None = None
    compare: tuple[str, str] | None = None  # (BASE, NEW)
    at_ps: tuple[float, float | None] | None = None
    op: str | None = None


def parse_time_ps(text: str) -> float:
    """`text` ("12.3ms", "450 us", "2") in picoseconds; a bare number is milliseconds."""
    match = _TIME.match(text)
    if match is None or (match.group(2) and match.group(2) not in TIME_UNITS_PS):
        units = ", ".join(u for u in TIME_UNITS_PS if u != "\u00b5s")
        raise LaunchError(f"{text!r} is not a time: write a number with a unit ({units}), like 12.3ms.")
    return float(match.group(1)) * TIME_UNITS_PS[match.group(2) or DEFAULT_UNIT]


def parse_range_ps(text: str) -> tuple[float, float | None]:
    """ "T0" or "T0:T1" in picoseconds (T1 None for a point)."""
    first, _, second = text.partition(":")
    t0 = parse_time_ps(first)
    if not second:
        return t0, None
    t1 = parse_time_ps(second)
    if t1 <= t0:
        raise LaunchError(f"--at {text}: the range ends before it starts.")
    return t0, t1


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tpuscope", description="Opens the tpuscope desktop app.")
    parser.add_argument("path", nargs="?", help=path_help())
    parser.add_argument(
        "--compare",
        nargs="+",
        metavar="RUN",
        help="open the Compare view: PATH --compare NEW, or --compare BASE NEW",
    )
    parser.add_argument(
        "--at",
        metavar="T0[:T1]",
        help="open the timeline at this time or range from the trace start (12.3ms:45.6ms)",
    )
    parser.add_argument("--op", metavar="NAME", help="open the timeline on the longest event of this op")
    return parser


def parse(argv: list[str]) -> LaunchRequest:
    """The request `argv` makes; LaunchError (one sentence) when it makes none."""
    args, _ = parser().parse_known_args(argv)
    compare = None
    if args.compare is not None:
        runs = ([args.path] if args.path else []) + list(args.compare)
        if len(runs) != 2:
            raise LaunchError(
                "--compare takes two runs: tpuscope BASE --compare NEW, or tpuscope --compare BASE NEW."
            )
        compare = (runs[0], runs[1])
    at_ps = parse_range_ps(args.at) if args.at else None
    if (at_ps is not None or args.op) and args.path is None and compare is None:
        raise LaunchError("--at and --op need a profile to open: tpuscope PATH --at 12.3ms.")
    path = compare[0] if compare is not None else args.path
    return LaunchRequest(path, compare, at_ps, args.op or None)


def format_time(ps: float) -> str:
    """A time for a deep link: milliseconds to the nanosecond, no trailing zeros ("12.3ms")."""
    text = f"{ps / TIME_UNITS_PS['ms']:.6f}".rstrip("0").rstrip(".")
    return f"{text}ms"


def command_line(
    path: str | Path, t0_ps: float | None = None, t1_ps: float | None = None, op: str | None = None
) -> str:
    """The shell command that opens `path` at [t0, t1] (or op `op`), quoted for a POSIX shell."""
    words = ["tpuscope", str(path)]
    if t0_ps is not None:
        words += ["--at", format_time(t0_ps) + (f":{format_time(t1_ps)}" if t1_ps is not None else "")]
    if op:
        words += ["--op", op]
    return shlex.join(words)
