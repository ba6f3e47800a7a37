"""The `tpuscope` command line: a GUI launcher and headless subcommands.

Each subcommand lives in its own module under tpuscope/commands/ and exposes
`register(subparsers)`, which adds its parser and sets `handler(args) -> int`;
tpuscope.commands.COMMANDS names it. Only the chosen command's module is imported
(the others appear in `--help` from that table), so a command starts without the
imports of the others. A first word that is not a command is the path to open in
the desktop app; one that is not an existing path either is a typo, answered
with the closest command. Errors a user can cause (bad paths, bad files,
unreachable hosts) are raised as ProfileError / UserFacingError and printed as
one line on stderr with exit code 2; no traceback ever reaches the user.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from tpuscope import gc_policy
from tpuscope.commands import COMMANDS, EXIT_ERROR, EXIT_OK, OPEN_AFTER, UserFacingError
from tpuscope.errors import LoadCancelled, ProfileError
from tpuscope.readers import path_help
from tpuscope.urls import is_url

# How alike a mistyped word and a command must be to suggest it (difflib's ratio; its default, our heuristic).
SUGGESTION_CUTOFF = 0.6
# numpy's OpenBLAS starts one thread per core, with its buffers, when numpy is imported: 60-90 ms of
# every start on a 2-core machine, more with more cores (numpy/numpy#29193). tpuscope does no BLAS
# work (no matrix products), so one thread costs nothing; a value the user set is kept.
BLAS_THREADS = {"OPENBLAS_NUM_THREADS": "1"}


def command_names() -> list[str]:
    """The commands, in the order `tpuscope --help` lists them."""
    return list(COMMANDS)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only `command`'s module is imported and registers its options, the rest are named."""
    parser = argparse.ArgumentParser(
        prog="tpuscope",
        description="Profile viewer for JAX, TensorFlow and PyTorch/XLA runs. "
        f"With no command, opens the desktop app on PATH ({path_help()}).",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in command_names():
        if name == command:
            importlib.import_module(f"tpuscope.commands.{name}").register(subparsers)
        else:
            subparsers.add_parser(name, help=COMMANDS[name], add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _limit_blas_threads()
    commands = command_names()
    if not argv:
        return gui_main(argv)
    first = argv[0]
    if first == "--compare":  # the desktop app's Compare view on two runs
        return gui_main(argv)
    if first not in commands and not first.startswith("-"):
        if not os.path.exists(first) and not is_url(first):  # gs://... opens like a path
            print(f"tpuscope: {not_a_command_message(first, commands)}", file=sys.stderr)
            return EXIT_ERROR
        return gui_main(argv)
    return _run_command(argv, first if first in commands else None)


def console_main() -> int:
    """The `tpuscope` script and `python -m tpuscope`: main() in a process that runs one command
    (what is made while the collector is paused gets frozen: tpuscope.gc_policy), then an exit
    without final collections."""
    gc_policy.one_command_process()
    status = main()
    gc_policy.skip_exit_collections()
    return status


def _run_command(argv: list[str], command: str | None) -> int:
    gc_policy.pause()  # the command module's imports (see tpuscope.gc_policy)
    try:
        parser = build_parser(command)
        args = parser.parse_args(argv)
    except KeyboardInterrupt:  # Ctrl-C while the command's modules import: the same sentence
        print("tpuscope: interrupted.", file=sys.stderr)
        return 130
    finally:
        gc_policy.resume()
    if args.command is None:
        parser.print_help()
        return EXIT_OK
    try:
        status = int(args.handler(args) or EXIT_OK)
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
    then_open = getattr(args, OPEN_AFTER, None)
    if then_open is not None:  # `capture --open`: the app on what the command saved
        code = gui_main(then_open)
        return status or code
    return status


def _limit_blas_threads() -> None:
    """Before any command imports numpy (the environment is read when OpenBLAS loads)."""
    for name, value in BLAS_THREADS.items():
        os.environ.setdefault(name, value)


def not_a_command_message(word: str, commands: list[str]) -> str:
    """One sentence for a first word that is neither a command nor an existing path."""
    import difflib

    close = difflib.get_close_matches(word.lower(), commands, n=1, cutoff=SUGGESTION_CUTOFF)
    if close:
        return f"{word!r} is neither a command nor an existing path; did you mean {close[0]}?"
    if os.sep in word or "." in word or (os.altsep and os.altsep in word):
        return f"Cannot open {word}: the path does not exist."
    return f"{word!r} is neither a command nor an existing path; the commands are {', '.join(commands)}."


def gui_main(argv: list[str] | None = None) -> int:
    """Opens the desktop app, optionally on a profile path."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _limit_blas_threads()
    from tpuscope.ui.platform_check import check_platform_plugin

    problem = check_platform_plugin(argv)  # before Qt starts: Qt's own failure is an abort
    if problem is not None:
        print(f"tpuscope: {problem.sentence()}", file=sys.stderr)
        return EXIT_ERROR
    try:
        from tpuscope.ui.app import run_app
    except ImportError as error:
        print(f"tpuscope: the desktop app cannot start ({error}).", file=sys.stderr)
        return EXIT_ERROR
    return run_app(argv)
