"""The `tpuscope` command line: a GUI launcher and headless subcommands.

Each subcommand lives in its own module under tpuscope/commands/ and exposes
`register(subparsers)`, which adds its parser and sets `handler(args) -> int`.
Errors a user can cause (bad paths, bad files, unreachable hosts) are raised
as ProfileError / UserFacingError and printed as one line on stderr with exit
code 2; no traceback ever reaches the user.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from tpuscope.errors import LoadCancelled, ProfileError

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
_COMMAND_ORDER = ["info", "ops", "diagnose", "capture", "screenshot"]


class UserFacingError(Exception):
    """Any other failure whose message is already one clear sentence for the user."""


def _command_modules() -> list[str]:
    import tpuscope.commands as package

    found = [m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")]
    ordered = [name for name in _COMMAND_ORDER if name in found]
    return ordered + sorted(set(found) - set(ordered))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tpuscope",
        description="Profile viewer for JAX, TensorFlow and PyTorch/XLA runs (XPlane profiles). "
        "With no command, opens the desktop app on PATH (a .xplane.pb file, a run folder or a logdir).",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _command_modules():
        importlib.import_module(f"tpuscope.commands.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    commands = set(parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    if not argv or (argv[0] not in commands and not argv[0].startswith("-")):
        return gui_main(argv)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_OK
    try:
        return int(args.handler(args) or EXIT_OK)
    except (ProfileError, UserFacingError) as error:
        print(f"tpuscope: {error}", file=sys.stderr)
        return EXIT_ERROR
    except LoadCancelled:
        print("tpuscope: cancelled.", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("tpuscope: interrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


def gui_main(argv: list[str] | None = None) -> int:
    """Opens the desktop app, optionally on a profile path."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        from tpuscope.ui.app import run_app
    except ImportError as error:
        print(f"tpuscope: the desktop app cannot start ({error}).", file=sys.stderr)
        return EXIT_ERROR
    return run_app(argv)
