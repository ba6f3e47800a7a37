"""The columnar trace: planes of tracks, each track's events held as numpy columns.

Times are int64 picoseconds relative to the trace start (the earliest event of
all loaded files), so ten-hour traces at picosecond precision never overflow.
Nothing here knows about protobuf or Qt; readers build a Trace, analysis and
the UI query it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import field
from pathlib import Path

import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.completeness import Completeness, Loss, completeness
from tpuscope.model.flows import Flows
from tpuscope.model.hosts import natural_key
from tpuscope.model.records import record
from tpuscope.model.stats import StatTable
from tpuscope.model.strings import StringTable
from tpuscope.model.vocabulary import (
    KIND_METADATA,
    NEUTRAL_DIALECT,
    OTHER_PLANE,
    ROLE_DEVICE,
    ROLE_HOST,
    Dialect,
    EventClass,
    PlaneIdentity,
    TrackKind,
    classify_names,
)

__all__ = ["EventMetadataTable", "NameAggregate", "Plane", "PlaneIdentity", "Trace", "Track", "TrackKind"]


class EventMetadataTable:
    """A plane's event metadata: one row per XEventMetadata, with its stats as columns.

    Events reference rows by `Track.meta_index`, so per-op constants such as
    `flops` or `hlo_category` reach every event by one numpy gather.
    """

    def __init__(
        self,
        ids: np.ndarray,
        name_ids: np.ndarray,
        display_names: list[bytes],
        stats: StatTable,
        child_ids: list[tuple[int, ...]] | None = None,
    ):
        self.ids = ids
        self.name_ids = name_ids
        self.display_names = display_names
        self.stats = stats
        self.child_ids = child_ids or [()] * len(ids)

    def __len__(self) -> int:
        return len(self.ids)

    def nbytes(self) -> int:
        return self.ids.nbytes + self.name_ids.nbytes + self.stats.nbytes()


class Track:
    """One timeline track (an XLine, a thread, a GPU stream): its events as columns sorted by start
    (ties: longer first). `kind` says what its events are (set by the reader)."""

    def __init__(
        self,
        plane: Plane,
        line_id: int,
        display_id: int,
        name: str,
        display_name: str,
        start_ps: np.ndarray,
        duration_ps: np.ndarray,
        meta_index: np.ndarray,
        name_id: np.ndarray,
        depth: np.ndarray,
        stats: StatTable,
        kind: TrackKind = TrackKind.OTHER,
    ):
        self.plane = plane
        self.kind = kind
        self.line_id = line_id
        self.display_id = display_id
        self.name = name
        self.display_name = display_name or name
        self.start_ps = start_ps
        self.duration_ps = duration_ps
        self.meta_index = meta_index
        self.name_id = name_id
        self.depth = depth
        self.stats = stats
        self._max_end_prefix: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.start_ps)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_max_end_prefix"] = None  # derived; rebuilt on first query
        return state

    def __repr__(self) -> str:
        return f"<Track {self.plane.name}/{self.name} events={len(self)}>"

    @property
    def end_ps(self) -> np.ndarray:
        return self.start_ps + self.duration_ps

    @property
    def max_depth(self) -> int:
        return int(self.depth.max()) if len(self.depth) else 0

    def nbytes(self) -> int:
        cols = (self.start_ps, self.duration_ps, self.meta_index, self.name_id, self.depth)
        return sum(c.nbytes for c in cols) + self.stats.nbytes()

    def overlapping(self, t0_ps: int, t1_ps: int) -> np.ndarray:
        """Indices of events that overlap [t0_ps, t1_ps), in start order.

        Uses a running maximum of end times, built on first use, so a long
        event that started before the window is never missed.
        """
        if len(self) == 0:
            return np.empty(0, dtype=np.int64)
        if self._max_end_prefix is None:
            self._max_end_prefix = np.maximum.accumulate(self.end_ps)
        lo = int(np.searchsorted(self._max_end_prefix, t0_ps, side="left"))  # an instant at t0 is inside
        hi = int(np.searchsorted(self.start_ps, t1_ps, side="left"))
        if hi <= lo:
            return np.empty(0, dtype=np.int64)
        idx = np.arange(lo, hi)
        ends = self.start_ps[lo:hi] + self.duration_ps[lo:hi]
        keep = (ends > t0_ps) | ((self.duration_ps[lo:hi] == 0) & (self.start_ps[lo:hi] >= t0_ps))
        return idx[keep]

    def event_stats(self, index: int) -> dict[str, object]:
        """The event's own stats (not its metadata's) as Python values."""
        trace = self.plane.trace
        return self.stats.row(index, trace.strings, trace.blobs)

    def metadata_stats(self, index: int) -> dict[str, object]:
        """The stats of the event's metadata (per-op constants such as flops)."""
        trace = self.plane.trace
        return self.plane.metadata.stats.row(int(self.meta_index[index]), trace.strings, trace.blobs)

    def all_stats(self, index: int) -> dict[str, object]:
        """Metadata stats overlaid by the event's own stats, as XProf visits both."""
        merged = self.metadata_stats(index)
        merged.update(self.event_stats(index))
        return merged

    def stat_values(self, name: str, fill: float | int = np.nan) -> np.ndarray | None:
        """Per-event values of stat `name`, from the event or else its metadata.

        Returns None when neither the events nor their metadata carry it.
        """
        own = self.stats.column(name)
        meta_col = self.plane.metadata.stats.column(name)
        if own is None and meta_col is None:
            return None
        if meta_col is not None:
            meta_values = meta_col.dense(len(self.plane.metadata), fill)
            values = meta_values[self.meta_index] if len(self) else meta_values[:0]
        else:
            values = None
        if own is not None:
            own_values = own.dense(len(self), fill)
            if values is None:
                values = own_values
            else:
                present = own.present(len(self))
                values = values.astype(np.result_type(values, own_values), copy=True)
                values[present] = own_values[present]
        return values

    def events_with_stat(self, name: str) -> np.ndarray:
        """The events (indices, int64, ascending) whose stat `name`, their own or their metadata's, has
        a value that is not NaN: `np.flatnonzero(~np.isnan(stat_values(name)))`. Where the metadata
        has no such stat these are the rows of the events' own column (a step number on a thread's
        few step events), read as they are: no column over the whole track is made."""
        own = self.stats.column(name)
        if self.plane.metadata.stats.column(name) is None:
            if own is None:
                return np.empty(0, np.int64)
            rows = own.present_rows(len(self))
            return rows[~np.isnan(own.values)] if own.kind == "float" else rows
        values = self.stat_values(name)
        return np.flatnonzero(~np.isnan(np.asarray(values, np.float64)))

    def stat_values_at(
        self, name: str, indices: np.ndarray, fill: float | int = np.nan, widen: bool = True
    ) -> np.ndarray | None:
        """`stat_values(name, fill)[indices]`, reading only those events where it can: a column over
        the whole track is built only when the events' own values overlay their metadata's.

        The result may share memory with the stat columns: read it only. `widen=False`: the events'
        own values may come in the narrower type their column stores (`StatColumn.gather`).
        """
        own = self.stats.column(name)
        meta_col = self.plane.metadata.stats.column(name)
        if meta_col is None:
            return None if own is None else own.gather(len(self), indices, fill, widen)
        if own is None:
            return meta_col.dense(len(self.plane.metadata), fill)[self.meta_index[indices]]
        values = self.stat_values(name, fill)
        return None if values is None else values[indices]

    def event_name(self, index: int) -> str:
        return self.plane.trace.strings[int(self.name_id[index])]

    def display_name_of(self, index: int) -> bytes:
        return self.plane.metadata.display_names[int(self.meta_index[index])]


class Plane:
    """One plane of one host: a device core, the host threads, or metadata (`identity` says which,
    as the reader decided)."""

    def __init__(
        self,
        trace: Trace,
        plane_id: int,
        name: str,
        host: str,
        stats: dict[str, object],
        identity: PlaneIdentity = OTHER_PLANE,
    ):
        self.trace = trace
        self.plane_id = plane_id
        self.name = name
        self.host = host
        self.stats = stats
        self.identity = identity
        self.tracks: list[Track] = []
        self.metadata = EventMetadataTable(np.empty(0, np.int64), np.empty(0, np.int32), [], StatTable(0))

    def __repr__(self) -> str:
        return f"<Plane {self.host}:{self.name} tracks={len(self.tracks)}>"

    @property
    def role(self) -> str:
        return self.identity.role

    @property
    def kind(self) -> str:
        return self.identity.kind

    @property
    def index(self) -> int | None:
        return self.identity.index

    @property
    def is_device(self) -> bool:
        return self.identity.role == ROLE_DEVICE

    @property
    def event_count(self) -> int:
        return sum(len(t) for t in self.tracks)

    @property
    def device_type(self) -> str | None:
        value = self.stats.get("device_type_string")
        return value if isinstance(value, str) else None

    @property
    def peak_teraflops_per_second(self) -> float | None:
        return _as_float(self.stats.get("peak_teraflops_per_second"))

    @property
    def peak_hbm_bw_gigabytes_per_second(self) -> float | None:
        return _as_float(self.stats.get("peak_hbm_bw_gigabytes_per_second"))

    def track(self, name: str) -> Track | None:
        for t in self.tracks:
            if t.name == name:
                return t
        return None

    def tracks_of_kind(self, *kinds: TrackKind) -> list[Track]:
        return [t for t in self.tracks if t.kind in kinds]

    def first_track_of_kind(self, kind: TrackKind) -> Track | None:
        for t in self.tracks:
            if t.kind == kind:
                return t
        return None

    def nbytes(self) -> int:
        return sum(t.nbytes() for t in self.tracks) + self.metadata.nbytes()


def _as_float(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


@record
class NameAggregate:
    """Per-name totals over a set of tracks, as parallel arrays sorted by total time."""

    name_ids: np.ndarray
    counts: np.ndarray
    total_ps: np.ndarray


@record
class Trace:
    """All planes of one profile (one or many hosts), sharing one string table."""

    sources: list[Path | str] = field(default_factory=list)  # files, or URLs for remote runs
    planes: list[Plane] = field(default_factory=list)
    strings: StringTable = field(default_factory=StringTable)
    blobs: list[bytes] = field(default_factory=list)
    origin_ns: int = 0  # absolute time (as written in the files) of time 0
    duration_ps: int = 0
    hosts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # recorded by the profiler in the files
    warnings: list[str] = field(default_factory=list)  # recorded by the profiler in the files
    # What the loader could not read, one sentence each (a file cut short: what is missing).
    load_warnings: list[str] = field(default_factory=list)
    # The same losses measured (how much of the profile is missing): `tpuscope.model.completeness`.
    load_losses: list[Loss] = field(default_factory=list)
    # The reader's names for the neutral event classes and frameworks.
    dialect: Dialect = NEUTRAL_DIALECT
    # Arrows between events (launch -> kernel), by track number (position in track_list()).
    flows: Flows = field(default_factory=Flows.empty)
    _name_classes: np.ndarray | None = field(default=None, repr=False, compare=False)
    _track_numbers: dict[int, int] | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_name_classes"] = None  # derived from the dialect; recomputed on first use
        state["_track_numbers"] = None  # keyed by object ids
        return state

    def track_list(self) -> list[Track]:
        """Every track, in plane order: a track's position here is its number (flows use it)."""
        return list(self.tracks())

    def track_number(self, track: Track) -> int:
        if self._track_numbers is None or id(track) not in self._track_numbers:
            self._track_numbers = {id(t): k for k, t in enumerate(self.tracks())}
        return self._track_numbers[id(track)]

    def tracks(self) -> Iterator[Track]:
        for plane in self.planes:
            yield from plane.tracks

    @property
    def event_count(self) -> int:
        return sum(len(t) for t in self.tracks())

    @property
    def completeness(self) -> Completeness:
        """Whether the load read the whole profile, and if not how much of it (from `load_losses`)."""
        return completeness(self.load_losses)

    def nbytes(self) -> int:
        """Bytes held in numpy columns (events, stats, metadata)."""
        return sum(p.nbytes() for p in self.planes)

    def device_planes(self, kind: str | None = None) -> list[Plane]:
        """Device planes (optionally of one kind), ordered by host, kind and index."""
        found = [p for p in self.planes if p.is_device and (kind is None or p.kind == kind.upper())]
        # Hosts in natural order (host2 before host10), as every list of hosts shows them.
        return sorted(
            found, key=lambda p: (natural_key(p.host), p.host, p.kind, p.index or 0, p.identity.suffix)
        )

    def host_planes(self) -> list[Plane]:
        return [p for p in self.planes if p.role == ROLE_HOST and p.kind != KIND_METADATA]

    def host_tracks(self) -> list[Track]:
        """The non-empty tracks of the host planes (the threads)."""
        return [t for p in self.host_planes() for t in p.tracks if len(t)]

    def name_classes(self, host_name_ids: np.ndarray | None = None) -> np.ndarray:
        """EventClass bits (uint32) per string id, for the names of host events; computed once.

        Only names that occur on host tracks are classified (a regex test per distinct name);
        every other id reads 0. Ids interned after the first call read 0 too (`classes_of`).
        `host_name_ids`: those names' distinct ids, where the caller has found them already
        (`tpuscope.analysis.host_names.HostNameIndex`): no pass over every host event to find them.
        """
        if self._name_classes is None:
            if host_name_ids is None:
                seen = np.zeros(len(self.strings), bool)
                for track in self.host_tracks():
                    seen[track.name_id] = True
                host_name_ids = np.flatnonzero(seen)
            ids = host_name_ids
            classes = np.zeros(len(self.strings), np.uint32)
            classes[ids] = classify_names([self.strings[int(i)] for i in ids], self.dialect)
            self._name_classes = classes
        return self._name_classes

    def classes_of(self, name_ids: np.ndarray) -> np.ndarray:
        """EventClass bits of each name id (0 for names that are not host event names)."""
        classes = self.name_classes()
        name_ids = np.asarray(name_ids)
        inside = name_ids < len(classes)
        if inside.all():
            return classes[name_ids]
        return np.where(inside, classes[np.where(inside, name_ids, 0)], 0).astype(np.uint32)

    def events_of_class(
        self, event_class: EventClass, tracks: list[Track] | None = None
    ) -> list[tuple[Track, np.ndarray]]:
        """Per track (host tracks by default), the indices of events whose name is of `event_class`."""
        found = []
        flag = np.uint32(event_class)
        for track in tracks if tracks is not None else self.host_tracks():
            hits = np.flatnonzero(self.classes_of(track.name_id) & flag)
            if len(hits):
                found.append((track, hits))
        return found

    def find_plane(self, name: str, host: str | None = None) -> Plane | None:
        for plane in self.planes:
            if plane.name == name and (host is None or plane.host == host):
                return plane
        return None

    def find_events(
        self, pattern: str, regex: bool = False, tracks: list[Track] | None = None
    ) -> list[tuple[Track, np.ndarray]]:
        """Events whose name contains `pattern` (or matches the regex), per track."""
        ids = self.strings.ids_matching(pattern, regex=regex)
        return self.events_with_name_ids(ids, tracks)

    def events_named(self, name: str, tracks: list[Track] | None = None) -> list[tuple[Track, np.ndarray]]:
        """Events whose name is exactly `name`, per track."""
        name_id = self.strings.id_of(name)
        if name_id is None:
            return []
        return self.events_with_name_ids(np.array([name_id], dtype=np.int32), tracks)

    def events_with_name_ids(
        self, name_ids: np.ndarray, tracks: list[Track] | None = None
    ) -> list[tuple[Track, np.ndarray]]:
        found: list[tuple[Track, np.ndarray]] = []
        if len(name_ids) == 0:
            return found
        for track in tracks if tracks is not None else self.tracks():
            hits = np.flatnonzero(order_statistics.isin(track.name_id, name_ids))
            if len(hits):
                found.append((track, hits))
        return found

    def aggregate_by_name(self, tracks: list[Track] | None = None) -> NameAggregate:
        """Count and total duration per event name over `tracks` (all by default)."""
        chosen = list(tracks if tracks is not None else self.tracks())
        if not chosen:
            empty = np.empty(0, dtype=np.int64)
            return NameAggregate(empty.astype(np.int32), empty, empty)
        names = np.concatenate([t.name_id for t in chosen])
        durations = np.concatenate([t.duration_ps for t in chosen])
        counts = np.bincount(names, minlength=len(self.strings))
        totals = np.bincount(names, weights=durations, minlength=len(self.strings))
        present = np.flatnonzero(counts)
        order = present[np.argsort(-totals[present], kind="stable")]
        return NameAggregate(order.astype(np.int32), counts[order], totals[order].astype(np.int64))
