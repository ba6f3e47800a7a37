"""Writing a Trace (or a time range of it) as Chrome trace-event JSON, which Perfetto and tpuscope open.

One process per plane (`process_name` = the plane's name, `host` in its label), one thread per
track, every event a complete (`X`) record with `ts`/`dur` in microseconds (Perfetto's JSON
importer: docs/getting-started/other-formats.md), and each flow an `s`/`f` pair bound to the
enclosing slices (`"bp": "e"`). Events of a range are those overlapping it, whole.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import msgspec
import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.trace import Trace

# The save dialog's suggestion and filter: gzip unless the user names a plain `.json` file.
DEFAULT_FILE_NAME = "trace.json.gz"
FILE_FILTER = "Chrome trace JSON (*.json.gz *.json)"


def export_chrome_trace(trace: Trace, path: Path, t0_ps: int | None = None, t1_ps: int | None = None) -> int:
    """Writes the trace (events overlapping [t0, t1) if given) to `path` (.gz: compressed); returns events."""
    lo = 0 if t0_ps is None else int(t0_ps)
    hi = trace.duration_ps + 1 if t1_ps is None else int(t1_ps)
    origin_us = trace.origin_ns / 1000.0
    records: list[dict] = []
    kept: dict[int, np.ndarray] = {}  # track number -> exported event indices (sorted)
    written = 0
    for number, track in enumerate(trace.track_list()):
        plane = track.plane
        pid = trace.planes.index(plane) + 1
        tid = plane.tracks.index(track) + 1
        if tid == 1:
            records.append(
                {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": plane.name}}
            )
            records.append(
                {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": plane.host}}
            )
        records.append(
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": track.name}}
        )
        if len(track) == 0:
            continue
        idx = track.overlapping(lo, hi) if (t0_ps is not None or t1_ps is not None) else np.arange(len(track))
        kept[number] = idx
        ts = (track.start_ps[idx] / 1e6 + origin_us).tolist()
        dur = (track.duration_ps[idx] / 1e6).tolist()
        names = [trace.strings[int(i)] for i in track.name_id[idx]]
        cat = track.kind.name.lower()
        records.extend(
            {"ph": "X", "name": n, "cat": cat, "pid": pid, "tid": tid, "ts": t, "dur": d}
            for n, t, d in zip(names, ts, dur, strict=True)
        )
        written += len(idx)
    records.extend(_flow_records(trace, kept, origin_us))
    document = {"displayTimeUnit": "ns", "traceEvents": records, "otherData": {"exported_by": "tpuscope"}}
    data = msgspec.json.encode(document)
    path.write_bytes(gzip.compress(data, compresslevel=3) if path.name.endswith(".gz") else data)
    return written


def _meta(name: str, pid: int, tid: int, args: dict) -> dict:
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "args": args}


def _flow_records(trace: Trace, kept: dict[int, np.ndarray], origin_us: float) -> list[dict]:
    flows = trace.flows
    if len(flows) == 0:
        return []
    tracks = trace.track_list()
    out = []
    for k in range(len(flows)):
        ends = []
        for number, event in ((flows.source_track[k], flows.source_event[k]),
                              (flows.target_track[k], flows.target_event[k])):  # fmt: skip
            exported = kept.get(int(number))
            if exported is None or not order_statistics.isin(event, exported):
                break
            ends.append((tracks[int(number)], int(event)))
        if len(ends) < 2:
            continue
        category = trace.strings[int(flows.category[k])] or "flow"
        for phase, (track, event) in zip(("s", "f"), ends, strict=True):
            record = {
                "ph": phase, "id": k + 1, "cat": category, "name": category,
                "pid": trace.planes.index(track.plane) + 1, "tid": track.plane.tracks.index(track) + 1,
                "ts": float(track.start_ps[event]) / 1e6 + origin_us, "bp": "e",
            }  # fmt: skip
            out.append(record)
    return out
