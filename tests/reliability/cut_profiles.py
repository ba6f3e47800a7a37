"""Real profiles cut short for the incomplete-profile tests: the TPU sample cut after its first
15 events (the issue's case: 15 of its 26,723 events), found by decoding prefixes of the file."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import TPU_TRACE
from tpuscope.readers.xplane.decode import decode_xspace

CUT_EVENTS = 15


def shortest_prefix_with(data: bytes, events: int) -> int:
    """The fewest bytes of `data` whose decode keeps `events` events (a bisection: the events a
    prefix keeps only grow with its length)."""
    low, high = 1, len(data)
    while low < high:
        middle = (low + high) // 2
        if decode_xspace(data[:middle], threads=1).event_count >= events:
            high = middle
        else:
            low = middle + 1
    return low


def write_cut_tpu_profile(folder: Path, events: int = CUT_EVENTS) -> Path:
    """The TPU sample's first bytes up to its `events`-th complete event, as `cut.xplane.pb` in `folder`."""
    data = TPU_TRACE.read_bytes()
    path = folder / "cut.xplane.pb"
    path.write_bytes(data[: shortest_prefix_with(data, events)])
    return path
