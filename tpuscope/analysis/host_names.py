"""Host-thread events found by name pattern, with one index shared by many patterns.

Rules and detectors ask for host events by regex many times per diagnosis (launches, compiles,
syncs, input work, framework clues...). Matching each pattern against the whole string table and
then testing every host track with np.isin made that a fixed cost of tens of milliseconds on a
profile of any size (122 host threads on the TPU sample). This index keeps the host tracks'
distinct names, so a pattern costs one regex test per distinct host event name and one vectorized
lookup over the host events (over a joined copy of their names where they are few).

Results equal `trace.events_with_name_ids(trace.strings.ids_matching(pattern, regex=True,
ignore_case=False), tracks)`: the same tracks, in the same order, with the same indices.
"""

from __future__ import annotations

import re

import numpy as np

from tpuscope.model import id_columns, order_statistics
from tpuscope.model.trace import Trace, Track
from tpuscope.model.vocabulary import EventClass


class HostNameIndex:
    """The events of `tracks` (default: every non-empty host track), searchable by name pattern."""

    def __init__(self, trace: Trace, tracks: list[Track] | None = None):
        # Every host track's names are the names `Trace.name_classes` classifies: it reads them from here.
        self._every_host_track = tracks is None
        if tracks is None:
            tracks = [t for p in trace.host_planes() for t in p.tracks if len(t)]
        self.trace = trace
        self.tracks = [t for t in tracks if len(t)]
        # Names are counted, compared and looked up a slice at a time (`tpuscope.model.id_columns`).
        # Few host events (on however many threads): one joined copy of their names, in 16 bits where
        # the string table's ids fit, is looked up in one pass. Many (a million on a few threads):
        # each track's own column is, and no copy of every host event's name is made or kept.
        lengths = np.array([len(t) for t in self.tracks], dtype=np.int64)
        self._offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self._joined: np.ndarray | None = None
        if self._offsets[-1] <= JOINED_EVENTS:
            narrow = np.uint16 if len(trace.strings) <= np.iinfo(np.uint16).max + 1 else np.int32
            parts = [t.name_id for t in self.tracks]
            self._joined = (
                np.concatenate(parts, dtype=narrow, casting="unsafe") if parts else np.empty(0, narrow)
            )
        columns = [t.name_id for t in self.tracks] if self._joined is None else [self._joined]
        self._name_ids = id_columns.distinct(*columns)
        self._names = [trace.strings[int(i)] for i in self._name_ids]
        # The events of each set of names asked for: several lookups name the same events (a launch
        # class, a dispatch class and a pattern all find JAX's `PjitFunction(...)`), each a pass over
        # every host event. Two threads may both make one: the same arrays.
        self._found: dict[bytes, list[tuple[Track, np.ndarray]]] = {}

    def matching_class(self, event_class: EventClass) -> list[tuple[Track, np.ndarray]]:
        """Per track (with any), the indices of events whose name the reader classed as `event_class`."""
        if self._every_host_track:
            self.trace.name_classes(self._name_ids)  # classified from the distinct names found here
        hit = (self.trace.classes_of(self._name_ids) & np.uint32(event_class)) != 0
        return self._events_of_names(hit)

    def matching(self, pattern: str | re.Pattern) -> list[tuple[Track, np.ndarray]]:
        """Per track (with any), the indices of events whose name the regex finds (case-sensitive).

        Like `StringTable.ids_matching`, the empty name (id 0) never matches.
        """
        matcher = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern)
        hit = np.fromiter(
            (
                bool(i) and matcher.search(s) is not None
                for i, s in zip(self._name_ids, self._names, strict=True)
            ),
            dtype=bool,
            count=len(self._names),
        )
        return self._events_of_names(hit)

    def _events_of_names(self, hit: np.ndarray) -> list[tuple[Track, np.ndarray]]:
        """The events whose distinct name (position in `self._name_ids`) is flagged in `hit`."""
        if not hit.any():
            return []
        key = np.packbits(hit).tobytes()
        found = self._found.get(key)
        if found is not None:
            return list(found)
        wanted, id_count = self._name_ids[hit], len(self.trace.strings)
        if self._joined is None:
            found = []
            for track in self.tracks:
                events = np.flatnonzero(_is_one_of(track.name_id, wanted, id_count))
                if len(events):
                    found.append((track, _read_only(events)))
        else:
            events = np.flatnonzero(_is_one_of(self._joined, wanted, id_count))
            # Which track each hit lies on, and where each track's run of hits begins and ends.
            owner = np.searchsorted(self._offsets, events, side="right") - 1
            tracks_hit = order_statistics.sorted_distinct(owner)
            bounds = np.searchsorted(owner, np.append(tracks_hit, len(self.tracks)))
            found = [
                (self.tracks[k], _read_only(events[bounds[j] : bounds[j + 1]] - self._offsets[k]))
                for j, k in enumerate(tracks_hit.tolist())
            ]
        self._found[key] = found
        return list(found)


def _read_only(array: np.ndarray) -> np.ndarray:
    """`array`, which every asker of the same names shares, made read-only."""
    array.flags.writeable = False
    return array


# Host events up to this many are looked up in one joined copy of their names (16-bit: 512 kB);
# more are looked up track by track. A joined copy saves each lookup ~5 us per track (122 threads of
# the TPU sample: 0.6 ms a lookup), and costs its fresh pages once (~0.45 ms per MB). Our heuristic.
JOINED_EVENTS = 1 << 18
# Names found by comparing the ids with each name, up to this many names: one comparison of a million
# 16-bit ids takes ~0.04 ms, a gather through a table ~0.85 ms (measured). Our heuristic.
COMPARED_NAMES = 16


def distinct_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(ids, return_inverse=True)` for string-table ids, without its sort.

    The ids are small non-negative integers (positions in the trace's string table), so a count per
    id finds the distinct ones in order and a running count numbers them: O(events + strings) where
    the sort was O(events log events), the largest cost of indexing a million host events. The
    numbers come in the smallest type that holds them (16 bits below 65,536 distinct names): a
    quarter of the memory, written once and read by every lookup, of 64-bit ones."""
    if len(ids) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    present = np.bincount(ids) > 0
    distinct = np.flatnonzero(present)
    small = np.uint16 if len(distinct) <= np.iinfo(np.uint16).max + 1 else np.int32
    position = (np.cumsum(present) - 1).astype(small)  # an id's place among the distinct ids
    return distinct, position[ids]


def _is_one_of(ids: np.ndarray, wanted: np.ndarray, id_count: int) -> np.ndarray:
    """Per item of `ids`: whether it is one of `wanted` (distinct ids below `id_count`). A few ids are
    compared with each (`COMPARED_NAMES`); more are looked up in a table a slice at a time."""
    if 0 < len(wanted) <= COMPARED_NAMES:
        first, *others = wanted.tolist()
        found = ids == first
        for name in others:
            found |= ids == name
        return found
    table = np.zeros(id_count, bool)
    table[wanted] = True
    return id_columns.take(table, ids, np.empty(len(ids), bool))
