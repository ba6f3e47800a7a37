"""Trace-event JSON files -> one Trace, through a format mapping (Kineto or Chrome/TSL).

The decoding is format-neutral (tpuscope.readers.trace_event.parse); a `Mapping` says what the
processes, threads, categories and names of one writer mean in the model's vocabulary
(`kineto`, `tsl` beside this module). Everything per event is numpy: events are
grouped into tracks by one stable argsort of (thread, group) keys, names into per-plane name
tables by np.unique, args into stat columns by a gather per arg.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np

from tpuscope.errors import ProfileError
from tpuscope.model import order_statistics
from tpuscope.model.build import add_plane, add_track, finish
from tpuscope.model.completeness import DROPPED, Loss
from tpuscope.model.flows import Flows, bind_flows
from tpuscope.model.records import record
from tpuscope.model.stats import StatColumn
from tpuscope.model.trace import Plane, Trace
from tpuscope.model.vocabulary import Dialect, PlaneIdentity, TrackKind
from tpuscope.readers.registry import ProfileFile, source_of
from tpuscope.readers.trace_event.native import ARG_FLOAT, ARG_INT, ARG_STR, ArgValues, renumber_ids
from tpuscope.readers.trace_event.parse import ARG_COLUMNS, PHASE_FLOW_END, TraceEventFile

Progress = Callable[[float, str], None]

# Args whose values are numbers (TSL writes them as strings): stored as numeric columns when they parse.
NUMERIC_ARGS = frozenset(
    {
        "external_id", "correlation", "stream", "device", "registers_per_thread", "shared_memory",
        "occupancy", "bytes", "bandwidth", "flops", "in_msg_nelems", "out_msg_nelems", "group_size",
        "program_id", "step_num", "group_id", "correlation_id", "bytes_accessed", "python_id",
        "external_id_2021", "device_id", "device_type", "address", "allocation_bytes", "total_allocated",
        "total_reserved", "bytes_free_on_device",
    }
)  # fmt: skip
# Args read as text (Python frames: tpuscope.readers.trace_event.python_stacks): a value of another
# type is kept as NOT_TEXT, which names no frame, instead of its repr, which could look like one.
TEXT_ARGS = frozenset({"call_stack", "call_from"})
NOT_TEXT = "(not text)"
_STAT_NAME = dict(ARG_COLUMNS)


@record(frozen=True)
class TrackGroup:
    """One of the tracks a thread's events are split into (e.g. a GPU stream's kernels vs its annotations)."""

    suffix: str
    kind: TrackKind


class Mapping(Protocol):
    """What one writer's processes, threads, categories and names mean."""

    name: str
    dialect: Dialect

    def host_name(self, file: TraceEventFile) -> str: ...

    def plane_identity(self, file: TraceEventFile, pid: int | str, categories: set[str]) -> PlaneIdentity: ...

    def plane_name(self, file: TraceEventFile, pid: int | str, identity: PlaneIdentity) -> str: ...

    def plane_stats(self, file: TraceEventFile, identity: PlaneIdentity) -> dict[str, object]: ...

    def groups(self, identity: PlaneIdentity) -> tuple[TrackGroup, ...]: ...

    def group_of(self, identity: PlaneIdentity, category: str) -> int: ...

    def thread_name(self, file: TraceEventFile, pid: int | str, tid: int | str) -> str: ...

    def prepare(self, file: TraceEventFile) -> None:
        """Mends the writer's own inconsistencies in the decoded file before it is built."""
        ...

    def name_stats(
        self, identity: PlaneIdentity, names: list[str], categories: list[str], trace: Trace
    ) -> dict[str, StatColumn]:
        """Stats per event name of one plane (`categories`: each name's category, as its first
        event there has it)."""
        ...

    def retype(self, trace: Trace) -> None: ...


def load_json_files(
    files: Sequence[ProfileFile],
    read: Callable[[ProfileFile], TraceEventFile],
    choose: Callable[[TraceEventFile], Mapping],
    progress: Progress | None = None,
    strict: bool = False,
) -> Trace:
    """Decodes each file with `read`, maps it with `choose(file)`, and assembles all into one Trace.
    What a file lost (dropped records, a cut) is a load warning, or with `strict` a ProfileError."""
    decoded: list[tuple[TraceEventFile, Mapping]] = []
    load_warnings: list[str] = []
    load_losses: list[Loss] = []
    whole = 0  # records of the files that dropped none
    for position, path in enumerate(files):
        if progress is not None:
            progress(0.8 * position / max(len(files), 1), f"decoding {path.name}")
        file = read(path)
        if len(file.events) == 0:
            raise ProfileError(path, "it holds no trace events (no complete or instant events)")
        for warning, cause in file.losses:
            if strict:
                raise ProfileError(path, cause)
            load_warnings.append(warning)
        load_losses.extend(file.measured_losses)
        if not any(loss.kind == DROPPED for loss in file.measured_losses):
            whole += len(file.events.ts_us) + len(file.flows.ts_us)
        mapping = choose(file)
        mapping.prepare(file)
        decoded.append((file, mapping))
    if progress is not None:
        progress(0.85, "building the timeline")
    origin_us = min(float(f.events.ts_us.min()) for f, _ in decoded)
    _check_clocks(decoded, origin_us)
    trace = Trace(sources=[source_of(f) for f in files], dialect=decoded[0][1].dialect)
    trace.load_warnings = load_warnings
    # Records dropped from some files are measured against every file's records: the others were read whole.
    trace.load_losses = [
        replace(loss, others_whole=whole) if loss.kind == DROPPED else loss for loss in load_losses
    ]
    trace.origin_ns = int(math.floor(origin_us * 1000))
    hosts = _host_names(decoded)
    for (file, mapping), host in zip(decoded, hosts, strict=True):
        _add_file(trace, file, mapping, host, origin_us)
    for mapping in dict.fromkeys(m for _, m in decoded):
        mapping.retype(trace)
    finish(trace)
    return trace


def _check_clocks(decoded: list[tuple[TraceEventFile, Mapping]], origin_us: float) -> None:
    """Files whose clocks are too far apart for int64 picoseconds from one origin are refused (each
    file's own times were checked as it was read: this is only files against each other)."""
    ends_us = [float(np.max(f.events.ts_us + np.nan_to_num(f.events.dur_us))) for f, _ in decoded]
    span_us = max(ends_us) - origin_us
    if span_us * 1e6 >= 2.0**63:
        first = decoded[0][0].path
        raise ProfileError(
            first.parent,
            f"its files' clocks are {span_us / 86_400e6:,.0f} days apart, more than one timeline holds",
        )


def _host_names(decoded: list[tuple[TraceEventFile, Mapping]]) -> list[str]:
    names = [mapping.host_name(file) for file, mapping in decoded]
    if len(set(names)) < len(names):  # two files claim one name: the file names tell them apart
        names = [_stem(file.path) for file, _ in decoded]
    return names


def _stem(path: ProfileFile) -> str:
    name = path.name
    for suffix in (".gz", ".json", ".trace", ".pt"):
        name = name.removesuffix(suffix)
    return name


def _add_file(trace: Trace, file: TraceEventFile, mapping: Mapping, host: str, origin_us: float) -> None:
    events = file.events
    threads = events.threads
    thread_pid = [pid for pid, _ in threads]
    pids = list(dict.fromkeys(thread_pid))
    pid_of_thread = np.array([pids.index(p) for p in thread_pid], dtype=np.int64)
    event_pid = pid_of_thread[events.thread]
    category_names = events.categories
    # Per process: its identity, decided from its own metadata and the categories of its events.
    identities = []
    for k, pid in enumerate(pids):
        cats = {
            category_names[int(c)] for c in order_statistics.sorted_distinct(events.category[event_pid == k])
        }
        identities.append(mapping.plane_identity(file, pid, cats))
    # Each event's track: (thread, group of its category); one stable sort puts each track's events together.
    n_groups = max(len(mapping.groups(identity)) for identity in identities)
    group_of = np.array(
        [[mapping.group_of(identity, c) for c in category_names] for identity in identities], dtype=np.int64
    ).reshape(len(identities), len(category_names))
    event_group = group_of[event_pid, events.category] if len(events) else np.empty(0, np.int64)
    key = events.thread * n_groups + event_group
    order = np.argsort(key, kind="stable")
    keys, starts = np.unique(key[order], return_index=True)
    bounds = np.append(starts, len(order))
    start_ps = np.rint((events.ts_us - origin_us) * 1e6).astype(np.int64)
    duration_ps = np.rint(np.nan_to_num(events.dur_us, nan=0.0) * 1e6).astype(np.int64)
    stat_columns = _stat_columns(trace, file)
    # Where each event lands: its track's number and its position there (before sorting by time).
    event_track = np.empty(len(events), np.int64)
    event_position = np.empty(len(events), np.int64)
    for t in range(len(keys)):
        rows = order[bounds[t] : bounds[t + 1]]
        event_track[rows] = t
        event_position[rows] = np.arange(len(rows))
    per_track_stats = _split_stats(stat_columns, event_track, event_position, len(keys))
    planes: dict[int, Plane] = {}
    plane_names: dict[int, np.ndarray] = {}
    made_tracks = []
    for t, k in enumerate(keys.tolist()):
        thread, group = divmod(k, n_groups)
        p = int(pid_of_thread[thread])
        identity = identities[p]
        rows = order[bounds[t] : bounds[t + 1]]
        if p not in planes:
            in_plane, first = np.unique(events.name[event_pid == p], return_index=True)
            names = [events.names[int(i)] for i in in_plane]
            first_category = events.category[event_pid == p][first]
            categories = [category_names[int(c)] for c in first_category]
            plane = add_plane(
                trace,
                plane_id=len(trace.planes),
                name=mapping.plane_name(file, pids[p], identity),
                host=host,
                identity=identity,
                names=names,
                stats=mapping.plane_stats(file, identity),
                name_stats=mapping.name_stats(identity, names, categories, trace),
            )
            planes[p], plane_names[p] = plane, in_plane
        plane = planes[p]
        meta_index = np.searchsorted(plane_names[p], events.name[rows])
        spec = mapping.groups(identity)[group]
        pid, tid = threads[thread]
        name = mapping.thread_name(file, pid, tid) + spec.suffix
        track = add_track(
            plane, len(plane.tracks), name, spec.kind, start_ps[rows], duration_ps[rows], meta_index,
            per_track_stats[t],
        )  # fmt: skip
        made_tracks.append((thread, track))
    if len(file.flows.ts_us):
        _add_flows(trace, file, made_tracks, origin_us)


def _stat_columns(trace: Trace, file: TraceEventFile) -> dict[str, tuple[np.ndarray, str, np.ndarray]]:
    """Per kept arg: (event rows, kind, values) with strings interned into the trace."""
    out: dict[str, tuple[np.ndarray, str, np.ndarray]] = {}
    for attribute, (rows, values) in file.events.args.items():
        stat = _STAT_NAME.get(attribute, attribute)  # a mapping's own columns (`prepare`) by stat name
        typed = _typed_columnar(trace, values, attribute) if isinstance(values, ArgValues) else None
        if typed is None:
            if isinstance(values, ArgValues):
                values = values.tolist()
            if attribute in TEXT_ARGS:
                values = [v if isinstance(v, str) else NOT_TEXT for v in values]
            typed = _typed(trace, values, attribute in NUMERIC_ARGS)
        kind, column = typed
        if stat in out:  # two writers' spellings of one neutral stat: the first wins where both exist
            old_rows, old_kind, old_values = out[stat]
            if old_kind != kind:
                continue
            keep = ~order_statistics.isin(rows, old_rows)
            merged_rows = np.concatenate([old_rows, rows[keep]])
            order = np.argsort(merged_rows, kind="stable")
            out[stat] = (merged_rows[order], kind, np.concatenate([old_values, column[keep]])[order])
            continue
        out[stat] = (rows, kind, column)
    return out


def _numeric(as_float: np.ndarray) -> tuple[str, np.ndarray]:
    integral = np.isfinite(as_float).all() and (as_float == np.rint(as_float)).all()
    if integral and (np.abs(as_float) < 2**53).all():
        return "int", as_float.astype(np.int64)
    return "float", as_float


def _typed_columnar(trace: Trace, values: ArgValues, attribute: str) -> tuple[str, np.ndarray] | None:
    """`_typed` on the C decoder's columns without a Python object per value, for the usual cases
    (numbers for a numeric arg; strings, TSL's numbers too); None for the rest (then `_typed` on
    the values as objects, the same answer)."""
    if attribute in NUMERIC_ARGS and values.all_of(ARG_INT, ARG_FLOAT):
        return _numeric(values.numbers())
    if not values.all_of(ARG_STR):
        return None
    distinct_ids, first_seen = renumber_ids(values.value, len(values.strings))
    distinct = [values.strings[i] for i in first_seen.tolist()]
    if attribute in NUMERIC_ARGS:
        try:
            as_float = np.array(distinct, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            as_float = None
        if as_float is not None:
            return _numeric(as_float[distinct_ids])
    ids = trace.strings.intern_many(distinct)
    return "str", ids[distinct_ids].astype(np.int32)


def _typed(trace: Trace, values: list, numeric: bool) -> tuple[str, np.ndarray]:
    if numeric:
        try:
            as_float = np.array(values, dtype=np.float64)
        except (TypeError, ValueError, OverflowError, RecursionError):
            as_float = None
        if as_float is not None and as_float.ndim == 1:
            return _numeric(as_float)
    try:
        texts = [v if isinstance(v, str) else str(v) for v in values]
    except RecursionError:  # an array or object arg nested deeper than repr follows
        texts = [v if isinstance(v, str) else _text_of(v) for v in values]
    distinct = list(dict.fromkeys(texts))
    ids = trace.strings.intern_many(distinct)
    lookup = dict(zip(distinct, ids.tolist(), strict=True))
    return "str", np.fromiter(map(lookup.__getitem__, texts), np.int32, len(texts))


def _text_of(value: object) -> str:
    try:
        return str(value)
    except RecursionError:
        return "(nested too deeply to show)"


def _split_stats(
    columns: dict[str, tuple[np.ndarray, str, np.ndarray]],
    event_track: np.ndarray,
    event_position: np.ndarray,
    n_tracks: int,
) -> list[dict[str, StatColumn]]:
    """Each stat column cut into per-track columns indexed by the events' positions in their tracks."""
    out: list[dict[str, StatColumn]] = [{} for _ in range(n_tracks)]
    for stat, (rows, kind, values) in columns.items():
        owner = event_track[rows]
        order = np.argsort(owner, kind="stable")
        owners, starts = np.unique(owner[order], return_index=True)
        bounds = np.append(starts, len(order))
        for j, t in enumerate(owners.tolist()):
            picked = order[bounds[j] : bounds[j + 1]]
            positions = event_position[rows[picked]]
            by_position = np.argsort(positions, kind="stable")
            rows_here = positions[by_position].astype(np.int32)
            out[t][stat] = StatColumn(stat, kind, rows_here, values[picked][by_position])  # type: ignore[arg-type]
    return out


def _add_flows(trace: Trace, file: TraceEventFile, made_tracks: list, origin_us: float) -> None:
    """Binds flow records to the events they start or end at (Chrome's rules: `s` and `f` with
    bp=e to the enclosing slice, else `f` to the next slice starting on the thread)."""
    flows = file.flows
    tracks_of_thread: dict[int, list] = {}
    for thread, track in made_tracks:
        tracks_of_thread.setdefault(thread, []).append(track)
    ts_ps = np.rint((flows.ts_us - origin_us) * 1e6).astype(np.int64)
    category_ids = trace.strings.intern_many(file.events.categories)
    new = bind_flows(
        trace,
        flow_key=flows.flow_id,
        is_end=flows.phase == PHASE_FLOW_END,
        ts_ps=ts_ps,
        candidate_tracks=[tracks_of_thread.get(int(t), []) for t in range(len(file.events.threads))],
        thread=flows.thread,
        category=category_ids[flows.category] if len(flows.category) else np.empty(0, np.int32),
        next_slice=~flows.binds_enclosing & (flows.phase == PHASE_FLOW_END),
    )
    trace.flows = Flows.concatenate(trace.flows, new)
