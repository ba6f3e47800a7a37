"""`tpuscope screenshot PATH OUT.png`: render the window offscreen on a profile, save a PNG, exit.

For docs, tests and bug reports: the same window a user sees, without a
display (Qt's offscreen platform unless QT_QPA_PLATFORM says otherwise).
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, cast

from tpuscope.commands._console import add_path_argument, warn_about_missing_parts
from tpuscope.ui.registry import VIEW_KEYS

if TYPE_CHECKING:
    from tpuscope.analysis.session import TraceAnalysis
    from tpuscope.model.trace import Trace
    from tpuscope.ui.timeline.lod import TimelineLod

_SIZE = re.compile(r"^(\d{2,5})x(\d{2,5})$")
MAX_SIDE_PX = 8000  # a larger image is almost surely a typo, and would take gigabytes to render


def register(subparsers) -> None:
    parser = subparsers.add_parser("screenshot", help="render the app window on a profile to a PNG")
    add_path_argument(parser)
    parser.add_argument("out", help="the PNG file to write")
    parser.add_argument("--size", default="1600x1000", help="window size WIDTHxHEIGHT (default 1600x1000)")
    parser.add_argument(
        "--view", default="timeline", choices=VIEW_KEYS, help="the tab to show (default timeline)"
    )
    parser.add_argument(
        "--window-ms",
        metavar="START:END",
        help="show this time window, in ms from the trace start (default: the whole trace)",
    )
    parser.add_argument(
        "--query", metavar="SQL", help="with --view query: run this query first and show its rows"
    )
    parser.set_defaults(handler=run)


def parse_size(text: str) -> tuple[int, int]:
    from tpuscope.commands import UserFacingError

    match = _SIZE.match(text.strip())
    if not match:
        raise UserFacingError(f"The size {text!r} is not WIDTHxHEIGHT in pixels, such as 1600x1000.")
    width, height = int(match.group(1)), int(match.group(2))
    if not (100 <= width <= MAX_SIDE_PX and 100 <= height <= MAX_SIDE_PX):
        raise UserFacingError(
            f"The size {text} is out of range: each side must be 100 to {MAX_SIDE_PX} pixels."
        )
    return width, height


def parse_window(text: str | None) -> tuple[float, float] | None:
    """`START:END` in ms from the trace start, as picoseconds; None when not given."""
    from tpuscope.commands import UserFacingError

    if text is None:
        return None
    try:
        start, end = (float(part) * 1e9 for part in text.split(":"))
    except ValueError:
        raise UserFacingError(
            f"The window {text!r} is not START:END in milliseconds, such as 40.5:41.8."
        ) from None
    if not end > start:
        raise UserFacingError(f"The window {text} ends before it starts.")
    return start, end


def run(args) -> int:
    from tpuscope.commands import UserFacingError

    size = parse_size(args.size)
    window_ps = parse_window(args.window_ms)
    out = Path(args.out)
    if not out.parent.is_dir():
        raise UserFacingError(f"Cannot write {out}: the folder {out.parent} does not exist.")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from tpuscope.ui.platform_check import check_platform_plugin

    problem = check_platform_plugin()
    if problem is not None:
        raise UserFacingError(problem.sentence())
    from PySide6.QtCore import QSettings

    from tpuscope.ui.app import application
    from tpuscope.ui.loader import LoadResult
    from tpuscope.ui.main_window import MainWindow

    # The profile loads and is indexed for the timeline in a thread (the decoder's threads release the
    # GIL) while this one makes the window and the one view shown (the window makes no other view).
    loaded: dict[str, object] = {}
    loader = threading.Thread(target=_load, args=(args, loaded), name="load", daemon=True)
    loader.start()
    app = application()
    # Throwaway settings: a screenshot neither depends on nor changes the user's window state and recents.
    scratch = tempfile.TemporaryDirectory(prefix="tpuscope-screenshot-")
    settings = QSettings(str(Path(scratch.name) / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings)
    try:
        if not window.show_view(args.view):
            raise UserFacingError(f"The {args.view} view does not exist in this version of tpuscope yet.")
        loader.join()
        if "error" in loaded:
            raise cast(BaseException, loaded["error"])
        trace = cast("Trace", loaded["trace"])
        warn_about_missing_parts(trace)
        lod, analysis = cast("TimelineLod", loaded["lod"]), cast("TraceAnalysis", loaded["analysis"])
        window.set_result(LoadResult(Path(args.path), trace, lod, analysis), args.view)
        window.resize(*size)
        window.show()
        if window_ps is not None:
            window.timeline.zoom_to_range(*window_ps, margin=0.0)
        app.processEvents()
        # The analyses the views show are computed in the background: the picture waits for all of them.
        window.hub.wait()
        if args.query is not None:
            _run_query(window, args.view, args.query)
        for _ in range(3):
            app.processEvents()
        image = window.grab()
        if not image.save(str(out), "PNG"):
            raise UserFacingError(f"Cannot write {out}: Qt could not save the PNG there.")
    finally:
        window.close()
        window.deleteLater()
        del settings
        scratch.cleanup()
    print(f"wrote {out} ({size[0]}x{size[1]}, {args.view} view)")
    return 0


def _load(args, loaded: dict[str, object]) -> None:
    """In the loader thread: the trace, its analysis (as the app loads it: hosts' clocks aligned
    before the index) and the timeline's index, or the error, into `loaded`."""
    try:
        from tpuscope.app.opener import open_trace
        from tpuscope.ui.loader import analysis_for
        from tpuscope.ui.timeline.lod import TimelineLod

        trace = open_trace(args.path, run=args.run, use_cache=not args.no_cache, strict=args.strict)
        loaded["analysis"] = analysis_for(trace)
        loaded["lod"] = TimelineLod(trace)
        loaded["trace"] = trace
    except BaseException as error:  # noqa: BLE001 - raised again on the main thread
        loaded["error"] = error


def _run_query(window, view_key: str, query: str) -> None:
    """Runs the query in the Query tab and waits for its rows; a failing query is one sentence."""
    from tpuscope.commands import UserFacingError

    view = window.views.get("query")
    if view_key != "query" or view is None:
        raise UserFacingError("--query needs --view query.")
    outcome: list[object] = []
    view.queryFinished.connect(outcome.append)
    view.run_query(query)
    view.wait()
    if outcome and isinstance(outcome[0], str):
        raise UserFacingError(f"The query failed: {outcome[0]}")
