"""A small reader that exists only in the tests: registered through `tpuscope.readers.READERS`
alone, it must open from every path that opens a profile (the CLI, a run folder, the app).

Its format: `<host>.events.csv`, a header line `thread,name,start_us,dur_us` and one event a line.
Parsing is numpy's (`np.loadtxt`), one call per file: no per-event Python.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from tpuscope.errors import ProfileError
from tpuscope.model.build import add_plane, add_track, finish
from tpuscope.model.trace import Trace
from tpuscope.model.vocabulary import ROLE_HOST, PlaneIdentity, TrackKind
from tpuscope.readers import READERS, Reader, host_from_filename, register
from tpuscope.readers.registry import ProgressCallback

HEADER = b"thread,name,start_us,dur_us"
SUFFIX = ".events.csv"


def looks_like_event_csv(head: bytes) -> bool:
    return head.startswith(HEADER)


def load_event_csv(
    files: list[Path], progress: ProgressCallback | None = None, strict: bool = False
) -> Trace:
    trace = Trace(sources=list(files))
    for number, file in enumerate(files):
        try:
            rows = np.loadtxt(file, delimiter=",", skiprows=1, dtype=str, ndmin=2)
        except (OSError, ValueError) as error:
            raise ProfileError(file, f"it is not an event CSV file ({error})") from None
        names, name_rows = np.unique(rows[:, 1], return_inverse=True)
        plane = add_plane(trace, number, "/events", host_from_filename(file),
                          PlaneIdentity(ROLE_HOST, "", None), [str(n) for n in names])  # fmt: skip
        threads, thread_rows = np.unique(rows[:, 0], return_inverse=True)
        start_ps = (rows[:, 2].astype(np.float64) * 1e6).astype(np.int64)
        duration_ps = (rows[:, 3].astype(np.float64) * 1e6).astype(np.int64)
        for line_id, thread in enumerate(threads):
            chosen = thread_rows == line_id
            add_track(plane, line_id, str(thread), TrackKind.HOST_THREAD, start_ps[chosen],
                      duration_ps[chosen], name_rows[chosen])  # fmt: skip
        if progress is not None:
            progress((number + 1) / len(files), f"read {file.name}")
    return finish(trace)


EVENT_CSV_READER = Reader(
    name="event_csv",
    title="Event CSV",
    suffixes=(SUFFIX,),
    sniff=looks_like_event_csv,
    load=f"{__name__}:load_event_csv",
)


@contextlib.contextmanager
def event_csv_registered() -> Iterator[Reader]:
    """The reader in the table for the duration of a test, the table as it was afterwards."""
    before = dict(READERS)
    register(EVENT_CSV_READER)
    try:
        yield EVENT_CSV_READER
    finally:
        READERS.clear()
        READERS.update(before)


def write_event_csv(path: Path, events: list[tuple[str, str, float, float]]) -> Path:
    lines = [HEADER.decode()] + [f"{t},{n},{s},{d}" for t, n, s, d in events]
    path.write_text("\n".join(lines) + "\n")
    return path


EVENTS = [
    ("main", "step", 0.0, 100.0),
    ("main", "forward", 10.0, 40.0),
    ("main", "backward", 55.0, 40.0),
    ("loader", "next_batch", 0.0, 8.0),
    ("loader", "next_batch", 100.0, 8.0),
]
