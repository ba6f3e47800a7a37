"""One module per `tpuscope` subcommand; each exposes register(subparsers).

COMMANDS is the registration: the command's name (its module's name) and the one line
`tpuscope --help` shows for it (an argparse help string: a literal % is written %%). The
command line is parsed from this table alone, and only the chosen command's module is
imported, so `tpuscope info` never pays for what `capture` (SSH, gRPC) or `screenshot` (Qt)
import. A new command is one module plus one line here. What a command may end with (its exit
codes, `UserFacingError`) is here too, so that the commands and `tpuscope.cli`, which runs them,
both take it from below.
"""

from __future__ import annotations

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# A command that sets this attribute of its parsed arguments to an argv asks the command line to
# open the desktop app on it once the command is done (`capture --open`): no command imports the app.
OPEN_AFTER = "open_after"


class UserFacingError(Exception):
    """Any other failure whose message is already one clear sentence for the user."""


COMMANDS: dict[str, str] = {
    "info": "summarize a profile: hosts, planes, tracks, event counts",
    "overview": "the first look at a profile: devices, steps, step time, duty cycle, top ops, findings",
    "ops": "op-level breakdown of device time (agrees with XProf hlo_stats)",
    "metrics": "the headline metrics (step time, duty cycle, shares, memory peaks), each with its definition",
    "flame": "device time as a flame graph by named scope, Python stack or op (folded, speedscope, JSON)",
    "diagnose": "find integration problems: input-bound, recompilation, host syncs, idle devices",
    "graph": "the HLO graph around an op: its operands and users, N hops out, with device time",
    "memory": "program memory at its peak and allocator memory over time (agrees with XProf)",
    "comms": "communication: collective time per op, host and step, exposed vs overlapped with compute",
    "compare": "compare two runs: did step time change beyond the noise, where it came from, finding changes",
    "history": "every run of a logdir in order: step time, the change from the run before and its cause",
    "sql": "SQL over the profile's tables (events, tracks, ops, steps, findings, ...), read-only",
    "capture": "record a live trace from running programs (profiler servers), locally or over SSH",
    "screenshot": "render the app window on a profile to a PNG",
    "cache": "every cache (traces, pod results, run summaries, downloads); `cache clear` empties them",
    "mcp": "a Model Context Protocol server over stdio: the --json answers as tools for coding agents",
    "report": "one self-contained HTML page of a profile to share: overview, steps, findings, ops, memory",
}
