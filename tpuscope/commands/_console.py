"""A command's console: its PATH argument, loading the profile with a progress line on stderr, the
loader's warnings, and JSON on stdout."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import msgspec

from tpuscope import gc_policy
from tpuscope.app.opener import open_trace
from tpuscope.commands._json_text import python_json_text
from tpuscope.model.plain import plain
from tpuscope.model.trace import Trace
from tpuscope.readers import path_help


def add_path_argument(parser) -> None:
    parser.add_argument("path", help=path_help())
    parser.add_argument("--run", help="with a logdir: the run (folder name) to open instead of the newest")
    parser.add_argument("--no-cache", action="store_true", help="ignore and do not write the trace cache")
    parser.add_argument(
        "--strict", action="store_true",
        help="a file cut short, or records dropped as unreadable, is an error (exit 2) instead of a "
        "warning on what is missing",
    )  # fmt: skip


def load_for_cli(args) -> Trace:
    """Loads args.path, drawing a progress bar on stderr when it is a terminal and the load is slow."""
    started = time.monotonic()
    show = sys.stderr.isatty()

    def progress(fraction: float, message: str) -> None:
        if show and time.monotonic() - started > 0.5:
            bar = "#" * int(fraction * 30)
            sys.stderr.write(f"\r[{bar:<30}] {fraction * 100:5.1f}% {message[:40]:<40}")
            sys.stderr.flush()

    gc_policy.pause()  # see tpuscope.gc_policy
    try:
        trace = open_trace(args.path, run=getattr(args, "run", None), progress=progress,
                           use_cache=not getattr(args, "no_cache", False),
                           strict=getattr(args, "strict", False))  # fmt: skip
    finally:
        gc_policy.resume()
        if show and time.monotonic() - started > 0.5:
            sys.stderr.write("\r" + " " * 80 + "\r")
    warn_about_missing_parts(trace)
    return trace


def warn_about_missing_parts(trace: Trace) -> None:
    """Never silent: each part of the profile the loader could not read is one warning line on stderr."""
    for message in trace.load_warnings:
        print(f"tpuscope: warning: {message}", file=sys.stderr)


def print_json(payload: Any) -> None:
    """The payload as indented JSON (2 spaces), in one write: `json.dump` writes each token on its own,
    a system call apiece where stdout is unbuffered (PYTHONUNBUFFERED, a pipe to a CI log).

    msgspec encodes and indents it (numpy values through `_json_default`), in the text Python's `json`
    gives (`_json_text`): the 2.4 MB overview of the 1M-event JAX CPU recording in 9 ms, where `json`
    took 50 ms. NaN or infinity, which JSON has no word for, are written as null. A payload msgspec
    cannot write (dictionary keys that are not text or numbers) is written by Python's `json`."""
    try:
        compact = msgspec.json.encode(payload, enc_hook=_json_default)
        text = python_json_text(msgspec.json.format(compact, indent=2))
    except (TypeError, ValueError, msgspec.EncodeError):
        text = json.dumps(payload, indent=2, default=_json_default)
    sys.stdout.write(text + "\n")


def _json_default(value: Any) -> Any:
    """What `json` cannot write itself: numpy values (as plain Python) and bytes (as text)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    converted = plain(value)
    if converted is value:
        raise TypeError(f"not JSON serializable: {type(value).__name__}")
    return converted


def cost_line(impact: dict | None, note: str) -> str:
    """One line on what a finding costs, from its JSON impact: "Costs 12% of each step (4 ms per step):
    <basis>", or why its cost is unknown."""
    from tpuscope.analysis.diagnose.finding import Impact, sentence_case  # only commands that print findings

    if impact is None:
        return sentence_case(note or "cost not measured")
    return f"{sentence_case(Impact.from_json(impact).words())}: {impact['basis']}"
