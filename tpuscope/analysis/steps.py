"""Find the training/inference steps of a profile, and say where they came from.

Most diagnoses are "per step" (idle time per step, compiles after the first
step, syncs per step), so every rule needs the same step boundaries. XProf
only knows TensorFlow-style step markers and reports "No step time measured"
for plain JAX programs; here the sources are tried in order of how explicit
they are:

1. a device steps track (TrackKind.DEVICE_STEPS: the TPU runtime's `Steps` line, or one xprof
   derived);
2. host step annotations: events carrying a step number (`Stat.STEP_NUMBER`: JAX
   `StepTraceAnnotation`, PyTorch/XLA `xp.StepTrace`), or numbered step markers (PyTorch's
   `ProfilerStep#N`), or named step markers (TensorFlow `TraceContext`, names starting with
   `train`/`test`, Keras `tf.function` step functions carrying `tf_function_call`);
3. repeated executions of the dominant program on a device (TrackKind.DEVICE_MODULES);
4. repeated host dispatches of the dominant jitted function (EventClass.PROGRAM_DISPATCH, JAX
   `PjitFunction(<fn>)`), for CPU-only JAX profiles without annotations.

Which names are markers or dispatches is the reader's business (its Dialect); the order follows
xprof's step grouping (`IsExplicitHostStepMarker`, `GetGroupingLineForTPU` in
openxla/xprof `xprof/convert/`) and PyTorch/XLA's `StepTrace`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field, replace

import numpy as np

from tpuscope.analysis.host_names import distinct_ids
from tpuscope.model.records import record
from tpuscope.model.trace import Trace, Track
from tpuscope.model.vocabulary import EventClass, Stat, TrackKind

SOURCE_DEVICE_STEPS = "device_steps_line"
SOURCE_HOST_ANNOTATION = "host_step_annotation"
SOURCE_STEP_MARKER = "host_step_marker"
SOURCE_TF_MARKER = "tensorflow_step_marker"
SOURCE_DEVICE_PROGRAM = "device_program"
SOURCE_HOST_PROGRAM = "host_program"
SOURCE_NONE = "none"

# Keras step functions carry this stat: each call of the tf.function is one step.
STEP_FUNCTION_CALL_STAT = Stat.STAGED_FUNCTION_CALL
# A program must run at least this often to be taken for "the step" (one run is no loop). Suggested heuristic.
MIN_REPEATS_FOR_PROGRAM_STEPS = 2
# Host dispatches are taken for steps only when one jitted function holds at least this share of all
# outermost dispatch time; op-by-op (eager) programs spread it over many primitives and have no step
# loop (the MI300X profile: the largest primitive holds 24%). Suggested heuristic.
MIN_DOMINANT_DISPATCH_SHARE = 0.5


@record
class Steps:
    """Step boundaries as parallel numpy arrays, sorted by start.

    `track`/`event_index` point at the events the steps were taken from (for
    jumping to them in the timeline); `description` says it in words.
    """

    number: np.ndarray
    start_ps: np.ndarray
    end_ps: np.ndarray
    source: str = SOURCE_NONE
    description: str = "no steps found"
    name: str = ""
    host: str = ""
    track: Track | None = None
    event_index: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.start_ps)

    @property
    def duration_ps(self) -> np.ndarray:
        return self.end_ps - self.start_ps

    def step_of(self, times_ps: np.ndarray) -> np.ndarray:
        """Position (0..len-1) of the step containing each time, or -1 outside every step."""
        times = np.asarray(times_ps, dtype=np.int64)
        if len(self) == 0:
            return np.full(times.shape, -1, dtype=np.int64)
        pos = np.searchsorted(self.start_ps, times, side="right") - 1
        inside = (pos >= 0) & (times < self.end_ps[np.clip(pos, 0, None)])
        return np.where(inside, pos, -1)

    def to_json(self) -> dict:
        return {"count": len(self), "source": self.source, "description": self.description, "name": self.name}


def step_periods(steps: Steps) -> tuple[np.ndarray, np.ndarray]:
    """Each step's period: from its start to the next step's start (the last: to its end). Step
    time measured start-to-start includes the host work between annotated steps, which is where an
    unannotated data loader spends its time; every step time tpuscope shows is this one."""
    if len(steps) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    ends = np.append(steps.start_ps[1:], steps.end_ps[-1])
    return steps.start_ps.copy(), np.maximum(ends, steps.start_ps)


def as_periods(steps: Steps) -> Steps:
    """`steps` with each one lasting its period (`step_periods`), its events and words kept."""
    return replace(steps, end_ps=step_periods(steps)[1])


def empty_steps() -> Steps:
    empty = np.empty(0, dtype=np.int64)
    return Steps(empty, empty, empty)


def find_steps(trace: Trace) -> Steps:
    """The profile's steps from the most explicit source available (see the module docstring)."""
    for finder in (_from_device_steps_line, _from_host_annotations, _from_numbered_markers,
                   _from_tf_markers, _from_device_programs, _from_host_dispatches):  # fmt: skip
        steps = finder(trace)
        if steps is not None and len(steps):
            return steps
    return empty_steps()


def outermost(track: Track, indices: np.ndarray) -> np.ndarray:
    """Of `indices` (sorted), those not nested inside an earlier one (drops duplicated nested events)."""
    if len(indices) < 2:
        return indices
    starts = track.start_ps[indices]
    ends = starts + track.duration_ps[indices]
    reach = np.maximum.accumulate(ends)
    keep = np.ones(len(indices), dtype=bool)
    keep[1:] = starts[1:] >= reach[:-1]
    return indices[keep]


# Step numbers are int64 (Steps.number); a number outside it is not a step number we can keep.
_INT64 = np.iinfo(np.int64)


def _numbers(track: Track, indices: np.ndarray, stat: str) -> np.ndarray:
    """The events' step numbers from `stat`, or their positions when a value is missing or outside
    int64 (a float cast past it is undefined and warns; a uint64 past it wraps negative)."""
    picked = track.stat_values_at(stat, indices)  # only the steps' values: no column of the whole track
    if picked is not None and picked.dtype.kind in "iuf":
        if len(picked) and _fit_int64(picked):
            return picked.astype(np.int64)
    return np.arange(len(indices), dtype=np.int64)


def _fit_int64(values: np.ndarray) -> bool:
    if values.dtype.kind == "f":
        # float(2**63) is the first float past int64; -2**63 is the last one in it.
        return bool(np.all((values >= float(_INT64.min)) & (values < -float(_INT64.min))))
    if values.dtype.kind == "u":
        return bool(values.max() <= _INT64.max)
    return True


def _make(track: Track, indices: np.ndarray, source: str, description: str, number_stat: str) -> Steps:
    starts = track.start_ps[indices]
    return Steps(
        number=_numbers(track, indices, number_stat),
        start_ps=starts.astype(np.int64),
        end_ps=(starts + track.duration_ps[indices]).astype(np.int64),
        source=source,
        description=description,
        name=track.event_name(int(indices[0])) if len(indices) else "",
        host=track.plane.host,
        track=track,
        event_index=indices.astype(np.int64),
    )


def _from_device_steps_line(trace: Trace) -> Steps | None:
    for plane in trace.device_planes():
        track = plane.first_track_of_kind(TrackKind.DEVICE_STEPS)
        if track is not None and len(track):
            idx = outermost(track, np.arange(len(track)))
            stat = Stat.STEP_NUMBER if track.stat_values(Stat.STEP_NUMBER) is not None else Stat.STEP_GROUP
            return _make(track, idx, SOURCE_DEVICE_STEPS, f"the `{track.name}` line of {plane.name}", stat)
    return None


def _best_named_group(candidates: list[tuple[Track, np.ndarray]]) -> tuple[Track, np.ndarray] | None:
    """The (track, outermost same-name events) group with the most total time, repeated or not."""
    best, best_key = None, None
    for track, idx in candidates:
        names = track.name_id[idx]
        for name_id in distinct_ids(names)[0]:  # in id order, as np.unique, without sorting the events
            sel = outermost(track, idx[names == name_id])
            key = (len(sel) >= MIN_REPEATS_FOR_PROGRAM_STEPS, int(track.duration_ps[sel].sum()))
            if best_key is None or key > best_key:
                best, best_key = (track, sel), key
    return best


def _marked_host_events(
    trace: Trace, mark: Callable[[Track], np.ndarray | None]
) -> list[tuple[Track, np.ndarray]]:
    """Per non-empty host track, the events `mark(track)` flags (a bool mask; None flags none)."""
    found = []
    for plane in trace.host_planes():
        for track in plane.tracks:
            if not len(track):
                continue
            marked = mark(track)
            if marked is not None and marked.any():
                found.append((track, np.flatnonzero(marked)))
    return found


def _where(track: Track) -> str:
    return f"{track.plane.host} {track.name}"


def _from_host_annotations(trace: Trace) -> Steps | None:
    # The events with a step number, per host track, from the stat's own rows (a thread's few step
    # events among its hundreds of thousands: no mask over every event).
    candidates = [
        (track, found)
        for plane in trace.host_planes()
        for track in plane.tracks
        if len(track) and len(found := track.events_with_stat(Stat.STEP_NUMBER))
    ]
    best = _best_named_group(candidates)
    if best is None:
        return None
    track, idx = best
    name = track.event_name(int(idx[0]))
    what = f"host step annotations `{name}` on {_where(track)}"
    return _make(track, idx, SOURCE_HOST_ANNOTATION, what, Stat.STEP_NUMBER)


def _from_numbered_markers(trace: Trace) -> Steps | None:
    """Step markers named with their number (`ProfilerStep#7`): all of them on one track are the loop."""
    found = trace.events_of_class(EventClass.NUMBERED_STEP)
    if not found:
        return None
    track, idx = max(found, key=lambda pair: int(pair[0].duration_ps[outermost(*pair)].sum()))
    idx = outermost(track, idx)
    first, last = track.event_name(int(idx[0])), track.event_name(int(idx[-1]))
    what = f"host step markers `{first}` to `{last}` on {_where(track)}"
    steps = _make(track, idx, SOURCE_STEP_MARKER, what, Stat.STEP_NUMBER)
    name_ids, inverse = np.unique(track.name_id[idx], return_inverse=True)
    numbers = [trace.dialect.step_number_of(trace.strings[int(i)]) for i in name_ids]
    # `ProfilerStep#99999999999999999999`: a number past int64 is no step number (positions instead,
    # and the steps' description says why, as every output that names the steps shows it)
    beyond = sum(1 for n in numbers if n is not None and not _INT64.min <= n <= _INT64.max)
    if beyond:
        steps.description += f"; numbered by position: {beyond} marker number(s) beyond the int64 range"
    elif all(n is not None for n in numbers):
        steps.number = np.array(numbers, dtype=np.int64)[inverse.reshape(-1)]
    return steps


def _from_tf_markers(trace: Trace) -> Steps | None:
    def is_marker(track: Track) -> np.ndarray:
        marked = (trace.classes_of(track.name_id) & np.uint32(EventClass.STEP_MARKER)) != 0
        calls = track.stats.column(STEP_FUNCTION_CALL_STAT)
        if calls is not None:
            marked |= calls.present(len(track))
        return marked

    best = _best_named_group(_marked_host_events(trace, is_marker))
    if best is None or len(best[1]) < MIN_REPEATS_FOR_PROGRAM_STEPS:
        return None
    track, idx = best
    name = track.event_name(int(idx[0]))
    what = f"TensorFlow step function `{name}` on {_where(track)}"
    return _make(track, idx, SOURCE_TF_MARKER, what, Stat.STEP_NUMBER)


def _from_device_programs(trace: Trace) -> Steps | None:
    for plane in trace.device_planes():
        track = plane.first_track_of_kind(TrackKind.DEVICE_MODULES)
        if track is None or not len(track):
            continue
        best = _best_named_group([(track, np.arange(len(track)))])
        if best is None or len(best[1]) < MIN_REPEATS_FOR_PROGRAM_STEPS:
            continue
        _, idx = best
        name = track.event_name(int(idx[0]))
        what = f"executions of the program `{name}` on {plane.name}"
        return _make(track, idx, SOURCE_DEVICE_PROGRAM, what, "")
    return None


def _from_host_dispatches(trace: Trace) -> Steps | None:
    found = trace.events_of_class(EventClass.PROGRAM_DISPATCH)
    if not found:
        return None
    best = _best_named_group(found)
    if best is None or len(best[1]) < MIN_REPEATS_FOR_PROGRAM_STEPS:
        return None
    track, idx = best
    all_dispatch_ps = sum(int(t.duration_ps[outermost(t, i)].sum()) for t, i in found)
    if track.duration_ps[idx].sum() < MIN_DOMINANT_DISPATCH_SHARE * all_dispatch_ps:
        return None
    name = track.event_name(int(idx[0]))
    what = f"host dispatches of the jitted function `{name}` on {_where(track)}"
    return _make(track, idx, SOURCE_HOST_PROGRAM, what, "")
