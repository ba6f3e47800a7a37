"""`tpuscope report PATH -o REPORT.html`: the profile as one self-contained HTML page to share
(`tpuscope.export.html_report`: overview, per-step chart, findings, top ops, memory, provenance)."""

from __future__ import annotations

import os
from pathlib import Path

from tpuscope.commands import COMMANDS, UserFacingError
from tpuscope.commands._console import add_path_argument, load_for_cli


def register(subparsers) -> None:
    parser = subparsers.add_parser("report", help=COMMANDS["report"])
    add_path_argument(parser)
    parser.add_argument("-o", "--output", required=True, metavar="REPORT.html", help="the HTML file to write")
    parser.add_argument("--title", help="the page's title (default: the profile's file names)")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from tpuscope.analysis.session import TraceAnalysis
    from tpuscope.export.html_report import report_html

    out = Path(args.output)
    if out.is_dir():
        raise UserFacingError(f"{out} is a folder; give the HTML file to write (-o REPORT.html).")
    page = report_html(TraceAnalysis(load_for_cli(args)), args.title)
    write_atomically(out, page)
    print(f"Wrote {out} ({len(page.encode()):,} bytes).")
    return 0


def write_atomically(out: Path, text: str) -> None:
    """Writes beside the target and renames, so a failure leaves no half-written page; one sentence on
    an unwritable place."""
    partial = out.with_name(out.name + ".partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, out)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise UserFacingError(f"Cannot write {out}: {error.strerror or error}.") from None
