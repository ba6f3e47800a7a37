"""One module per `tpuscope` subcommand; each exposes register(subparsers)."""
