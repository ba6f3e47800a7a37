"""From memory figures back to the timeline: a program's runs, the events of the op that made a buffer.

A program's runs are the events named like it (`jit_f(12190760917235803885)`, the device's XLA
Modules line). A buffer's defining instruction (`copy-start`, `broadcast_add_fusion`) runs as op
events named by it: on TPU and GPU the device's XLA Ops carry the instruction's HLO text
(`%copy-start = (...) copy-start(...)`), on the CPU the XLA thunks carry the bare name; both carry
the program id as a stat, which keeps ops of other programs with the same name out.
"""

from __future__ import annotations

import re

import numpy as np

from tpuscope.model.trace import Trace, Track
from tpuscope.model.vocabulary import Stat

PROGRAM_ID_STAT = Stat.PROGRAM_ID


def program_runs(trace: Trace, program_name: str) -> list[tuple[Track, np.ndarray]]:
    """Events named exactly `program_name` (each a run of the program), per track."""
    return trace.events_named(program_name)


def defining_op_events(
    trace: Trace, instruction: str, program_id: int | None = None
) -> list[tuple[Track, np.ndarray]]:
    """The events of HLO instruction `instruction` (of program `program_id` when given), per track."""
    if not instruction:
        return []
    pattern = rf"^(%?{re.escape(instruction)}(\s=\s.*)?)$"
    ids = trace.strings.ids_matching(pattern, regex=True, ignore_case=False)
    found = []
    for track, rows in trace.events_with_name_ids(ids):
        if program_id is not None:
            present, values = _program_ids(track, rows)
            if present is not None:
                rows = rows[present & (values == np.uint64(program_id % 2**64))]
        if len(rows):
            found.append((track, rows))
    return found


def _program_ids(track: Track, rows: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """Whether each event at `rows` has a program id, and the id as uint64 (exact for fingerprints)."""
    own = track.stats.column(PROGRAM_ID_STAT)
    if own is not None and own.kind in ("int", "uint"):
        n = len(track)
        return own.present(n)[rows], own.dense(n, 0)[rows].astype(np.uint64)
    meta = track.plane.metadata.stats.column(PROGRAM_ID_STAT)
    if meta is not None and meta.kind in ("int", "uint"):
        n = len(track.plane.metadata)
        where = track.meta_index[rows]
        return meta.present(n)[where], meta.dense(n, 0)[where].astype(np.uint64)
    return None, np.empty(0, np.uint64)
