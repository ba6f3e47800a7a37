"""Vertical layout of the timeline: plane groups and their tracks, in reading order.

Devices come first (TPU/GPU cores in index order, as Trace.device_planes
sorts them), then host threads: the program's main thread, then the busiest
first, so the tracks a user came for are at the top. Within a device plane
the tracks follow the program's structure: steps, modules, ops, async ops, the rest.
Counter tracks (memory in use per allocator) sit in their own group after the
device planes they describe; query tracks pinned from the Query tab come first, in
theirs, then the tracks the user pinned to the top (Perfetto's pinned tracks: what one compares
with everything else stays in reach), moved out of their plane's group. Empty tracks and planes
are hidden unless asked for. Pure Python over a few hundred tracks: no Qt here.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import field

import numpy as np

from tpuscope.model.records import record
from tpuscope.model.trace import Plane, Trace, Track
from tpuscope.model.vocabulary import DEVICE_TRACK_ORDER, KIND_METADATA
from tpuscope.ui.timeline.counters import COUNTER_HEIGHT, COUNTERS_GROUP, CounterSeries
from tpuscope.ui.timeline.query_tracks import QueryTrack

ROW_HEIGHT = 18  # pixels per nesting level of a track
QUERY_GROUP = ("", "Query tracks")  # the layout group key of the pinned query tracks
PINNED_GROUP = ("", "Pinned tracks")  # the layout group key of the tracks pinned to the top
GROUP_HEIGHT = 22  # pixels of a plane's header row
TRACK_GAP = 3  # pixels between tracks
# Device tracks in program order, by what they hold.
DEVICE_KIND_ORDER = {kind: position for position, kind in enumerate(DEVICE_TRACK_ORDER)}


@record
class Row:
    """One horizontal band: a plane group header or a track."""

    kind: str  # "group" or "track"
    y: int
    height: int
    label: str
    tooltip: str
    group: tuple[str, str]  # (host, plane name)
    track: Track | None = None
    collapsed: bool = False
    events: int = 0
    summary: Track | None = None  # a collapsed group's busiest track, drawn in its header
    counter: CounterSeries | None = None  # a "counter" row's series
    query: QueryTrack | None = None  # a "query" row's pinned result


def group_key(plane: Plane) -> tuple[str, str]:
    return (plane.host, plane.name)


def ordered_planes(trace: Trace) -> list[Plane]:
    devices = trace.device_planes()
    hosts = [p for p in trace.host_planes() if p not in devices]
    others = [p for p in trace.planes if p not in devices and p not in hosts and p.kind != KIND_METADATA]
    return devices + hosts + others


def ordered_tracks(plane: Plane) -> list[Track]:
    tracks = list(plane.tracks)
    if plane.is_device:
        return sorted(tracks, key=lambda t: DEVICE_KIND_ORDER.get(t.kind, len(DEVICE_KIND_ORDER)))
    busy = {id(t): int(t.duration_ps[t.depth == 0].sum()) if len(t) else 0 for t in tracks}
    return sorted(tracks, key=lambda t: (not is_main_thread(t), -busy[id(t)], t.display_name))


def is_main_thread(track: Track) -> bool:
    """The thread that drives the program: JAX/PyTorch write it as `python`, TPU runtimes as `main/<tid>`."""
    name = track.display_name.lower()
    return name == "python" or name == "main" or name.startswith("main/")


_LONG_THREAD_ID = re.compile(r"^(.+)/(-?\d{10,})$")  # TensorFlow writes 64-bit hashes; OS ids stay whole
THREAD_ID_DIGITS_SHOWN = 4  # enough to tell a pool's threads apart; the tooltip has the full name


def track_label(track: Track) -> str:
    """A readable track name: TensorFlow's 19-digit thread ids are cut to their last digits."""
    name = track.display_name
    match = _LONG_THREAD_ID.match(name)
    if match:
        return f"{match.group(1)}/\u2026{match.group(2)[-THREAD_ID_DIGITS_SHOWN:]}"
    return name


def plane_label(plane: Plane, several_hosts: bool) -> str:
    label = plane.name
    if plane.device_type:
        label += f"  ({plane.device_type})"
    if several_hosts:
        label = f"{plane.host}: {label}"
    return label


@record
class TimelineLayout:
    """Rows with their y offsets; rebuilt (cheaply) when a group collapses or expands."""

    trace: Trace
    collapsed: set[tuple[str, str]] = field(default_factory=set)
    show_empty: bool = False
    counters: list = field(default_factory=list)  # CounterSeries, drawn in their own group on top
    query_tracks: list[QueryTrack] = field(default_factory=list)  # pinned results, above everything
    pinned: list[Track] = field(default_factory=list)  # tracks pinned to the top, in pinning order
    sticky_height: int = 0  # layout height of the rows that do not scroll (query and pinned tracks)
    rows: list[Row] = field(default_factory=list)
    height: int = 0

    def __post_init__(self) -> None:
        self._order = [(p, ordered_tracks(p)) for p in ordered_planes(self.trace)]
        self.relayout()

    def relayout(self) -> None:
        rows: list[Row] = []
        y = self._query_rows(rows, 0)
        y = self._pinned_rows(rows, y)
        self.sticky_height = y if self.pinned else 0  # what stays on top as the rest scrolls
        pinned = {id(t) for t in self.pinned}
        several_hosts = len(self.trace.hosts) > 1
        counters_placed = False
        for plane, tracks in self._order:
            if not counters_placed and not plane.is_device:  # memory belongs with the devices it serves
                y, counters_placed = self._counter_rows(rows, y), True
            shown = [t for t in tracks if (len(t) or self.show_empty) and id(t) not in pinned]
            if not shown:
                continue
            key = group_key(plane)
            collapsed = key in self.collapsed
            events = sum(len(t) for t in shown)
            label = plane_label(plane, several_hosts)
            tooltip = f"{plane.host} {plane.name}: {len(shown)} tracks, {events:,} events"
            summary = max(shown, key=len) if collapsed else None
            rows.append(Row("group", y, GROUP_HEIGHT, label, tooltip, key, None, collapsed, events, summary))
            y += GROUP_HEIGHT
            if collapsed:
                continue
            for track in shown:
                height = (track.max_depth + 1) * ROW_HEIGHT
                tooltip = f"{track.display_name} ({plane.name}, {len(track):,} events)"
                rows.append(
                    Row("track", y, height, track_label(track), tooltip, key, track, False, len(track))
                )
                y += height + TRACK_GAP
        if not counters_placed:
            y = self._counter_rows(rows, y)
        self.rows = rows
        self.height = y
        self._tops = [r.y for r in rows]

    def _counter_rows(self, rows: list[Row], y: int) -> int:
        """The counters' group and rows (memory in use...) from layout y `y`; returns the next y."""
        if not self.counters:
            return y
        collapsed = COUNTERS_GROUP in self.collapsed
        tooltip = f"{len(self.counters)} counters: values over time, on the same time axis as the events"
        rows.append(Row("group", y, GROUP_HEIGHT, "Counters", tooltip, COUNTERS_GROUP, None, collapsed))
        y += GROUP_HEIGHT
        if collapsed:
            return y
        for series in self.counters:
            tooltip = series.tooltip or series.label
            rows.append(Row("counter", y, COUNTER_HEIGHT, series.label, tooltip, COUNTERS_GROUP,
                            events=len(series), counter=series))  # fmt: skip
            y += COUNTER_HEIGHT + TRACK_GAP
        return y

    def _query_rows(self, rows: list[Row], y: int) -> int:
        """The pinned query tracks' group and rows from layout y `y`; returns the next y."""
        if not self.query_tracks:
            return y
        collapsed = QUERY_GROUP in self.collapsed
        tooltip = f"{len(self.query_tracks)} query results pinned in the Query tab (unpin them there)"
        rows.append(Row("group", y, GROUP_HEIGHT, "Query tracks", tooltip, QUERY_GROUP, None, collapsed))
        y += GROUP_HEIGHT
        if collapsed:
            return y
        for pinned in self.query_tracks:
            height = (pinned.track.max_depth + 1) * ROW_HEIGHT
            tooltip = f"{pinned.label}: {len(pinned):,} rows of\n{pinned.query}"
            rows.append(Row("query", y, height, pinned.label, tooltip, QUERY_GROUP, events=len(pinned),
                            query=pinned))  # fmt: skip
            y += height + TRACK_GAP
        return y

    def _pinned_rows(self, rows: list[Row], y: int) -> int:
        """The pinned tracks' group and rows from layout y `y`; returns the next y."""
        if not self.pinned:
            return y
        collapsed = PINNED_GROUP in self.collapsed
        tooltip = f"{len(self.pinned)} tracks pinned to the top (right-click a track's name to unpin it)"
        rows.append(Row("group", y, GROUP_HEIGHT, "Pinned", tooltip, PINNED_GROUP, None, collapsed))
        y += GROUP_HEIGHT
        if collapsed:
            return y
        several_hosts = len(self.trace.hosts) > 1
        for track in self.pinned:
            height = (track.max_depth + 1) * ROW_HEIGHT
            where = plane_label(track.plane, several_hosts)
            tooltip = f"{track.display_name} ({where}, {len(track):,} events; pinned)"
            label = f"{where} · {track_label(track)}"  # out of its group: it says where it is from
            rows.append(Row("track", y, height, label, tooltip, PINNED_GROUP, track, False, len(track)))
            y += height + TRACK_GAP
        return y

    def set_pinned(self, track: Track, pinned: bool) -> None:
        """Pins `track` to the top (after those pinned before) or puts it back in its plane's group."""
        self.pinned = [t for t in self.pinned if t is not track] + ([track] if pinned else [])
        self.relayout()

    def is_pinned(self, track: Track) -> bool:
        return any(t is track for t in self.pinned)

    def set_query_tracks(self, tracks: list[QueryTrack]) -> None:
        self.query_tracks = list(tracks)
        self.relayout()

    def set_counters(self, counters: list) -> None:
        self.counters = list(counters)
        self.relayout()

    def toggle(self, key: tuple[str, str]) -> None:
        if key in self.collapsed:
            self.collapsed.discard(key)
        else:
            self.collapsed.add(key)
        self.relayout()

    def set_all_collapsed(self, collapsed: bool) -> None:
        self.collapsed = {r.group for r in self.rows if r.kind == "group"} if collapsed else set()
        self.relayout()

    def row_at(self, y: float) -> Row | None:
        i = bisect.bisect_right(self._tops, y) - 1
        if 0 <= i < len(self.rows) and y < self.rows[i].y + self.rows[i].height:
            return self.rows[i]
        return None

    def rows_between(self, y0: float, y1: float) -> list[Row]:
        lo = max(0, bisect.bisect_right(self._tops, y0) - 1)
        hi = bisect.bisect_left(self._tops, y1)
        return [r for r in self.rows[lo:hi] if r.y + r.height > y0]

    def row_of(self, track: Track) -> Row | None:
        for row in self.rows:
            if row.track is track:
                return row
        return None

    def expand_to(self, track: Track) -> None:
        """Makes the track's group visible (expanding it if collapsed)."""
        key = PINNED_GROUP if self.is_pinned(track) else group_key(track.plane)
        if key in self.collapsed:
            self.collapsed.discard(key)
            self.relayout()


def track_depth_at(row: Row, y: float) -> int:
    return int(np.clip((y - row.y) // ROW_HEIGHT, 0, max(0, row.height // ROW_HEIGHT - 1)))
