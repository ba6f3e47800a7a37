"""`tpuscope mcp`: the Model Context Protocol server over stdio, for coding agents (`tpuscope.agents`).

A client (Claude Desktop, VS Code, Cursor...) starts it as a subprocess and speaks JSON-RPC on its
stdin and stdout; nothing else is written to stdout. Needs the extra `tpuscope[agents]`.
"""

from __future__ import annotations

from tpuscope.commands import COMMANDS, UserFacingError


def register(subparsers) -> None:
    parser = subparsers.add_parser("mcp", help=COMMANDS["mcp"])
    parser.add_argument(
        "--skill",
        action="store_true",
        help="print the agent skill (SKILL.md: which tool answers what) and exit",
    )
    parser.set_defaults(handler=run)


def run(args) -> int:
    if args.skill:
        from tpuscope.agents.skill import skill_text

        print(skill_text(), end="")
        return 0
    try:
        from tpuscope.agents.server import serve
    except ImportError as error:
        raise UserFacingError(
            f"tpuscope mcp needs the MCP SDK ({error.name or error}): pip install 'tpuscope[agents]'."
        ) from None
    serve()
    return 0
