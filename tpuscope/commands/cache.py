"""`tpuscope cache`: where the store keeps its caches, how much each kind holds, the one cap and switch,
and the trace entries; `tpuscope cache clear` empties every kind."""

from __future__ import annotations

from tpuscope.commands import COMMANDS
from tpuscope.commands._console import print_json
from tpuscope.model.units import format_bytes
from tpuscope.store import bound, cache_limit, inventory, layout, traces


def register(subparsers) -> None:
    parser = subparsers.add_parser("cache", help=COMMANDS["cache"])
    parser.add_argument("action", nargs="?", choices=["show", "clear"], default="show",
                        help="show (the default) or clear")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(handler=run)


def summary() -> dict:
    folder = traces.cache_dir()
    limit, source = traces.configured_limit()
    if limit is None:
        share = f"{bound.FREE_DISK_SHARE:.0%} of free disk"
        source = f"default: min({format_bytes(bound.DEFAULT_MAX_BYTES)}, {share})"
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
    kinds = [
        {"kind": k.kind, "folder": str(k.folder), "files": k.files, "bytes": k.bytes,
         "bounded": k.kind in bound.BOUNDED_KINDS}
        for k in inventory.usage()
    ]  # fmt: skip
    return {
        "root": str(layout.root()),
        "caching": cache_limit.caching_on(),
        "bytes": sum(k["bytes"] for k in kinds),
        "limit_bytes": traces.size_limit(),
        "limit_source": source,
        "kinds": kinds,
        "folder": str(folder),
        "entry_bytes": sum(e["bytes"] for e in listed),
        "format_version": traces.FORMAT_VERSION,
        "entries": listed,
    }


def run(args) -> int:
    if args.action == "clear":
        removed = inventory.clear()
        files, freed = sum(r.files for r in removed), sum(r.bytes for r in removed)
        if args.json:
            print_json({
                "root": str(layout.root()), "removed_files": files, "freed_bytes": freed,
                "kinds": [{"kind": r.kind, "folder": str(r.folder), "removed_files": r.files,
                           "freed_bytes": r.bytes} for r in removed],
            })  # fmt: skip
        else:
            print(f"Removed {files:,} files ({format_bytes(freed)}) from {layout.root()}.")
        return 0
    payload = summary()
    if args.json:
        print_json(payload)
        return 0
    state = "" if payload["caching"] else " (caching is off: nothing is read or kept)"
    print(f"Folder:   {payload['root']}{state}")
    print(f"Size:     {format_bytes(payload['bytes'])}")
    print(f"Limit:    {format_bytes(payload['limit_bytes'])} ({payload['limit_source']}; "
          "traces, pod results and run summaries)")  # fmt: skip
    for kind in payload["kinds"]:
        print(f"  {kind['kind'] + ':':<15} {format_bytes(kind['bytes']):>10}  {kind['files']:,} files")
    print(f"Trace entries ({len(payload['entries'])}, {format_bytes(payload['entry_bytes'])}):")
    for entry in payload["entries"]:
        what = ", ".join(entry["sources"]) or entry["name"]
        events = f"{entry['events']:,} events, " if entry["events"] is not None else ""
        state = "" if entry["state"] == "current" else f" [{entry['state']}]"
        print(f"  {format_bytes(entry['bytes']):>10}  {traces.age_words(entry['last_used']):>12}  "
              f"{events}{what}{state}")  # fmt: skip
    return 0
