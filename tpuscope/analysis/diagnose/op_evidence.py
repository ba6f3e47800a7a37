"""Evidence for op-level findings: the longest events of an op table row, across its tracks."""

from __future__ import annotations

from typing import Any

import numpy as np

from tpuscope.analysis.facts.evidence import event_evidence
from tpuscope.analysis.ops import OpTable

EVIDENCE_PER_OP = 10


def longest_op_events(
    table: OpTable, row: int, label: str, limit: int = EVIDENCE_PER_OP
) -> list[dict[str, Any]]:
    """Evidence items for the `limit` longest events of one op row (all devices and lines together)."""
    found = table.events_of_row(row)
    if not found:
        return []
    which = np.concatenate([np.full(len(idx), k) for k, (_, idx) in enumerate(found)])
    index = np.concatenate([idx for _, idx in found])
    lengths = np.concatenate([t.duration_ps[idx] for t, idx in found])
    top = np.argsort(-lengths, kind="stable")[:limit]
    return [event_evidence(label, found[int(which[k])][0], int(index[k])) for k in top]


def intervals_per_device(table: OpTable, rows: list[int]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per device (position in table.devices), the merged time intervals of the rows' events."""
    from tpuscope.analysis.facts.intervals import merge_intervals

    if not rows:
        return {}
    mask = np.isin(table.row_of_event, np.asarray(rows, dtype=np.int64))
    events = table.events
    found: dict[int, tuple[list, list]] = {}
    planes = {id(d.plane): k for k, d in enumerate(table.devices)}
    for track, idx in events.events_of(mask):
        device = planes.get(id(track.plane))
        if device is None:
            continue
        starts, ends = found.setdefault(device, ([], []))
        starts.append(track.start_ps[idx])
        ends.append(track.end_ps[idx])
    return {k: merge_intervals(np.concatenate(s), np.concatenate(e)) for k, (s, e) in found.items()}
