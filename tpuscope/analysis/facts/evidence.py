"""Evidence items: where in a trace to look (an event, or a time range), as small JSON-ready dicts.

Findings carry them, and so do the pod's host summaries (what a late host was doing), so both
point at the timeline the same way. An item is {label, start_ps, end_ps, host, plane?, track?,
event_index?, focus?}; an item with `focus` true is where a view jumps when its finding is opened.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.trace import Track

# At most this many evidence items per finding (largest first): enough to jump to, small enough for JSON.
MAX_EVIDENCE = 50


def event_evidence(label: str, track: Track, index: int) -> dict[str, Any]:
    """Evidence pointing at one event of a track."""
    start = int(track.start_ps[index])
    return {
        "label": label,
        "start_ps": start,
        "end_ps": start + int(track.duration_ps[index]),
        "host": track.plane.host,
        "plane": track.plane.name,
        "track": track.name,
        "event_index": int(index),
    }


def range_evidence(
    label: str, start_ps: int, end_ps: int, host: str, plane: str | None = None
) -> dict[str, Any]:
    """Evidence pointing at a time range (e.g. an idle gap) rather than an event."""
    item: dict[str, Any] = {"label": label, "start_ps": int(start_ps), "end_ps": int(end_ps), "host": host}
    if plane is not None:
        item["plane"] = plane
    return item


def largest_first(items: list[dict[str, Any]], limit: int = MAX_EVIDENCE) -> list[dict[str, Any]]:
    """The `limit` longest evidence items, returned in time order."""
    chosen = sorted(items, key=lambda e: e["end_ps"] - e["start_ps"], reverse=True)[:limit]
    return sorted(chosen, key=lambda e: e["start_ps"])


def evidence_events(trace, evidence: list[dict[str, Any]]) -> list[tuple[Track, np.ndarray]]:
    """The events that evidence items point at, grouped per track (what a timeline highlights).

    Items without an event (time ranges) are skipped; items naming a plane or track the trace
    does not have are ignored rather than failing, since evidence may come from a saved report.
    """
    per_track: dict[tuple[str, str, str], list[int]] = {}
    for item in evidence:
        if item.get("event_index") is None or not item.get("plane") or not item.get("track"):
            continue
        key = (item["host"], item["plane"], item["track"])
        per_track.setdefault(key, []).append(int(item["event_index"]))
    found = []
    for (host, plane_name, track_name), indices in per_track.items():
        plane = trace.find_plane(plane_name, host)
        track = plane.track(track_name) if plane is not None else None
        if track is None:
            continue
        idx = order_statistics.sorted_distinct(np.array(indices, dtype=np.int64))
        found.append((track, idx[idx < len(track)]))
    return found
