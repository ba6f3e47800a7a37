"""`tpuscope cache`: where the trace cache is, how much it holds and of what; `tpuscope cache clear`."""

from __future__ import annotations

from tpuscope.commands._console import print_json
from tpuscope.model.units import format_bytes
from tpuscope.store import traces


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "cache", help="the trace cache: its folder, size, limit and entries; `cache clear` empties it"
    )
    parser.add_argument("action", nargs="?", choices=["show", "clear"], default="show",
                        help="show (the default) or clear")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(handler=run)


def summary() -> dict:
    folder = traces.cache_dir()
    limit, source = traces.configured_limit()
    if limit is None:
        share = f"{traces.FREE_DISK_SHARE:.0%} of free disk"
        source = f"default: min({format_bytes(traces.DEFAULT_MAX_BYTES)}, {share})"
    listed = []
    for entry in sorted(traces.entries(folder), key=lambda e: e.last_used, reverse=True):
        label = traces.read_label(entry.path) if entry.current else None
        listed.append({
            "name": entry.path.name,
            "bytes": entry.size,
            "last_used": entry.last_used,
            "state": "partial" if entry.version is None else "current" if entry.current else "older format",
            "sources": (label[1].get("sources", []) if label else []),
            "events": (label[1].get("events") if label else None),
        })  # fmt: skip
    return {
        "folder": str(folder),
        "bytes": traces.folder_size(folder),
        "entry_bytes": sum(e["bytes"] for e in listed),
        "limit_bytes": traces.size_limit(folder),
        "limit_source": source,
        "format_version": traces.FORMAT_VERSION,
        "entries": listed,
    }


def run(args) -> int:
    if args.action == "clear":
        folder = traces.cache_dir()
        removed, freed = traces.clear(folder)
        if args.json:
            print_json({"folder": str(folder), "removed_files": removed, "freed_bytes": freed})
        else:
            print(f"Removed {removed:,} files ({format_bytes(freed)}) from {folder}.")
        return 0
    payload = summary()
    if args.json:
        print_json(payload)
        return 0
    print(f"Folder:   {payload['folder']}")
    print(f"Size:     {format_bytes(payload['bytes'])} ({len(payload['entries'])} entries, "
          f"{format_bytes(payload['entry_bytes'])})")  # fmt: skip
    print(f"Limit:    {format_bytes(payload['limit_bytes'])} ({payload['limit_source']})")
    for entry in payload["entries"]:
        what = ", ".join(entry["sources"]) or entry["name"]
        events = f"{entry['events']:,} events, " if entry["events"] is not None else ""
        state = "" if entry["state"] == "current" else f" [{entry['state']}]"
        print(f"  {format_bytes(entry['bytes']):>10}  {traces.age_words(entry['last_used']):>12}  "
              f"{events}{what}{state}")  # fmt: skip
    return 0
