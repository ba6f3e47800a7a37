"""The Python code behind each GPU kernel of a PyTorch profiler trace: its source line and stack.

Recorded with `with_stack=True`, Kineto keeps the Python code behind each CPU op in one of two
forms, by PyTorch version (pytorch/pytorch, torch/csrc/profiler/python/init.cpp and
torch/csrc/autograd/profiler_kineto.cpp; the trace beside the tests, recorded with torch 2.14):

- `python_function` events nesting the CPU ops on their thread, one per Python call: a function's
  is named `file(line): function` (the line of its `def`), a module's `nn.Module: Name_0`, a
  builtin's `<built-in ...>`; each carries `Python id`, and newer PyTorch add `CallFrom`, the
  `file:line` it was called from, which is the line its caller's frame is at;
- a `Call stack` arg on the CPU op itself: its frames as `file(line): function`, the line each frame
  is at, innermost first, joined by `;` (older PyTorch).

A kernel reaches the CPU op that launched it through its launch (tpuscope.readers.trace_event.
launches: its launch flow, `ac2g` cudaLaunchKernel -> kernel, else its correlation id). Its source
is the innermost frame of the user's code in that op's stack: frames of PyTorch itself (`torch/`),
of installed packages and of the standard library are skipped, as XProf skips the framework's
frames and names the user's line. The reader writes what it finds as the model's neutral stats on
each kernel (`Stat.SOURCE`, `Stat.SOURCE_STACK`), so the op table, `ops --by source` and the
Source tab read PyTorch traces as they read XLA's.

Everything per event is numpy: each event's enclosing event comes from one search over the track's
depths, a frame chain gets an id per distinct (frame, caller chain) pair level by level, and Python
runs once per distinct chain and per distinct `Call stack` text. Nesting by time cannot loop, and
chains are cut at MAX_FRAMES; a launch without a flow, a frame that names no file and a `Call stack`
that is not `file(line): function` text give fewer lines, with a note, never an error.
"""

from __future__ import annotations

import re
from dataclasses import field

import numpy as np

from tpuscope.model import order_statistics
from tpuscope.model.code import UNKNOWN_LINE
from tpuscope.model.records import record
from tpuscope.model.stats import StatColumn
from tpuscope.model.trace import Trace, Track
from tpuscope.model.vocabulary import Stat, TrackKind
from tpuscope.readers.trace_event.call_tree import nearest_enclosing, parents
from tpuscope.readers.trace_event.launches import find_launches

# Kineto's names (pytorch/kineto libkineto/include/GenericTraceActivity.h, PyTorch's profiler).
PYTHON_ID = "Python id"
CALL_FROM = "CallFrom"
CALL_STACK = "Call stack"
_FUNCTION_FRAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): (?P<function>.+)$")
_CALL_SITE = re.compile(r"^(?P<file>.+):(?P<line>\d+)$")
# Frames that are not the user's code: PyTorch, installed packages, the standard library, and
# pseudo-files (`<frozen importlib._bootstrap>`, `<string>`).
FRAMEWORK_FILE = re.compile(r"(^|/)(torch|site-packages|dist-packages)/|(^|/)lib/python\d+(\.\d+)?/|^<")
# The deepest stack kept: Python's default recursion limit, so a real stack is never cut.
MAX_FRAMES = 1000


@record(frozen=True)
class PythonFrame:
    file: str
    line: int
    function: str

    def location(self) -> str:
        """`file:line:column` (the column is never recorded) and the function after a tab: the
        neutral stack's line (tpuscope.model.vocabulary.Stat.SOURCE_STACK)."""
        return f"{self.file}:{self.line}:{UNKNOWN_LINE}\t{self.function}"


def is_user_frame(frame: PythonFrame) -> bool:
    return bool(frame.file) and FRAMEWORK_FILE.search(frame.file) is None


def parse_call_stack(text: str) -> list[PythonFrame]:
    """A `Call stack` arg's frames, innermost first (entries that are not `file(line): function`
    are left out)."""
    frames = []
    for entry in text.strip().strip('"').split(";"):
        m = _FUNCTION_FRAME.match(entry.strip())
        if m:
            frames.append(PythonFrame(m["file"], int(m["line"]), m["function"]))
    return frames


@record
class _Code:
    """Per distinct stack: the source (`file:line`, "" without a user frame) and stack texts."""

    source: list[str] = field(default_factory=list)
    stack: list[str] = field(default_factory=list)

    def add(self, frames: list[PythonFrame]) -> int:
        user = next((f for f in frames if is_user_frame(f)), None)
        self.source.append(f"{user.file}:{user.line}" if user is not None else "")
        self.stack.append("\n".join(f.location() for f in reversed(frames[:MAX_FRAMES])))
        return len(self.source) - 1


def attach_python_sources(trace: Trace) -> None:
    """Writes `Stat.SOURCE` and `Stat.SOURCE_STACK` on every GPU kernel whose launching CPU op has
    Python frames (module docstring), and a note in `trace.warnings` for kernels left without one."""
    tracks = trace.track_list()
    kinds = np.array([t.kind == TrackKind.DEVICE_OPS for t in tracks] + [False])
    launches = find_launches(trace, tracks)
    code = _Code()
    kernel_code = np.full(len(launches), -1, np.int64)  # per launch: its stack in `code`, -1 none
    # Whether the trace was recorded with stacks at all: only then is a kernel without one worth a note.
    recorded = any(PYTHON_ID in t.stats or CALL_STACK in t.stats for t in trace.host_tracks())
    bad_call_stacks = 0
    for source_track in order_statistics.sorted_distinct(launches.source_track).tolist():
        track = tracks[source_track]
        on_track = np.flatnonzero(launches.source_track == source_track)
        found = _PythonFrames.of(track)
        if found is None:
            continue
        recorded = True
        codes, bad = found.codes_of(launches.source_event[on_track], code)
        kernel_code[on_track] = codes
        bad_call_stacks += bad
    if not recorded:
        return
    _write(trace, tracks, launches.target_track, launches.target_event, kernel_code, code)
    _notes(trace, tracks, kinds, int((kernel_code >= 0).sum()), bad_call_stacks)


def python_sources(track: Track, events: np.ndarray) -> list[tuple[str, str]]:
    """Per event of a host thread: its source line (`file:line`, "" without a user frame) and stack
    text (`Stat.SOURCE_STACK`'s lines), from the Python frames around it; ("", "") without any."""
    found = _PythonFrames.of(track)
    if found is None:
        return [("", "")] * len(events)
    code = _Code()
    codes, _ = found.codes_of(np.asarray(events, np.int64), code, own_python_frame=True)
    return [(code.source[c], code.stack[c]) if c >= 0 else ("", "") for c in codes.tolist()]


def _notes(trace: Trace, tracks: list[Track], kinds: np.ndarray, with_stack: int, bad: int) -> None:
    kernels = sum(len(t) for t, is_op in zip(tracks, kinds.tolist(), strict=False) if is_op)
    if with_stack < kernels:
        trace.warnings.append(
            f"{kernels - with_stack:,} of {kernels:,} GPU kernels have no Python stack: no launch flow "
            "ties them to a CPU op with Python frames, so `ops --by source` lists them as (no source)."
        )
    if bad:
        trace.warnings.append(
            f"{bad:,} CPU ops carry a `{CALL_STACK}` that names no `file(line): function` frame; "
            "their kernels have no source line from it."
        )


def _write(
    trace: Trace,
    tracks: list[Track],
    target_track: np.ndarray,
    target_event: np.ndarray,
    kernel_code: np.ndarray,
    code: _Code,
) -> None:
    """The stacks as stat columns of the kernels' tracks (strings interned once per distinct text)."""
    has = kernel_code >= 0
    if not has.any():
        return
    source_ids = trace.strings.intern_many(code.source) if code.source else np.empty(0, np.int32)
    stack_ids = trace.strings.intern_many(code.stack) if code.stack else np.empty(0, np.int32)
    picked = kernel_code[has]
    kernel_track, kernel_event = target_track[has], target_event[has]
    with_source = source_ids[picked] > 0
    for number in order_statistics.sorted_distinct(kernel_track).tolist():
        track = tracks[number]
        if Stat.SOURCE in track.stats:  # the trace names its own lines: kept as they are
            continue
        mine = kernel_track == number
        events = kernel_event[mine]
        order = np.argsort(events, kind="stable")
        events, ids = events[order].astype(np.int32), picked[mine][order]
        keep = with_source[mine][order]
        track.stats.columns[Stat.SOURCE] = StatColumn(Stat.SOURCE, "str", events[keep], source_ids[ids[keep]])
        track.stats.columns[Stat.SOURCE_STACK] = StatColumn(
            Stat.SOURCE_STACK, "str", events[keep], stack_ids[ids[keep]]
        )


@record
class _PythonFrames:
    """One host thread's events as a call tree: each event's enclosing event, which events are Python
    calls, and their chains of frames by id."""

    track: Track
    parent: np.ndarray  # int64: the enclosing event, -1 at the top
    is_python: np.ndarray  # bool: a `python_function` event
    call_stack: np.ndarray  # int32 string id of the event's `Call stack`, 0 none
    call_from: np.ndarray  # int32 string id of its `CallFrom`, 0 none

    @staticmethod
    def of(track: Track) -> _PythonFrames | None:
        """The thread's call tree, None when it has no Python frames in either form."""
        stats, n = track.stats, len(track)
        python_id = stats.column(PYTHON_ID)
        names = track.plane.trace.strings
        in_plane = track.plane.metadata.name_ids
        named_frame = np.fromiter(
            (_FUNCTION_FRAME.match(names[int(i)]) is not None for i in in_plane), bool, len(in_plane)
        )
        is_python = named_frame[track.meta_index] if len(in_plane) else np.zeros(n, bool)
        if python_id is not None:
            is_python |= python_id.present(n)
        call_stack = _string_column(track, CALL_STACK)
        if not is_python.any() and not call_stack.any():
            return None
        return _PythonFrames(track, parents(track), is_python, call_stack, _string_column(track, CALL_FROM))

    def codes_of(
        self, launches: np.ndarray, code: _Code, own_python_frame: bool = False
    ) -> tuple[np.ndarray, int]:
        """Per launch event: its stack's position in `code` (-1 none), and how many `Call stack`
        texts named no frame. `own_python_frame`: an event that is a Python call is its own
        innermost frame."""
        python_owner = self._nearest(launches, self.is_python, include_self=own_python_frame)
        stack_owner = self._nearest(launches, self.call_stack > 0, include_self=True)
        out = np.full(len(launches), -1, np.int64)
        bad = 0
        # The CPU op's own `Call stack` (the lines its frames are at) first.
        with_text = stack_owner >= 0
        texts = self.call_stack[stack_owner[with_text]]
        strings = self.track.plane.trace.strings
        distinct, inverse = np.unique(texts, return_inverse=True)
        parsed = []
        for text_id in distinct.tolist():
            frames = parse_call_stack(strings[int(text_id)])
            bad += not frames
            parsed.append(code.add(frames) if frames else -1)
        out[with_text] = np.asarray(parsed, np.int64)[inverse.reshape(-1)] if parsed else -1
        # Else the Python calls around it.
        use_python = (out < 0) & (python_owner >= 0)
        if use_python.any():
            out[use_python] = self._chain_codes(python_owner[use_python], code)
        return out, bad

    def _nearest(self, events: np.ndarray, mask: np.ndarray, include_self: bool) -> np.ndarray:
        return nearest_enclosing(self.parent, events, mask, include_self)

    def _chain_codes(self, owners: np.ndarray, code: _Code) -> np.ndarray:
        """Per owner (a Python event): its chain's stack in `code`, built once per distinct chain."""
        python = np.flatnonzero(self.is_python)
        up = self._nearest(python, self.is_python, include_self=False)  # each call's caller
        position = np.full(len(self.parent), -1, np.int64)
        position[python] = np.arange(len(python))
        caller = np.where(up >= 0, position[np.maximum(up, 0)], -1)
        # What a frame is: its name and the line it was called from.
        content = self.track.name_id[python].astype(np.int64) << 32 | self.call_from[python].astype(np.int64)
        chain = _chain_ids(content, caller)
        strings = self.track.plane.trace.strings
        wanted = chain[position[owners]]
        distinct, inverse = np.unique(wanted, return_inverse=True)
        # One Python event per chain id stands for it: its name, call site and caller chain.
        example = np.empty(int(chain.max()) + 1, np.int64)
        example[chain] = np.arange(len(python))
        above: dict[tuple[int, int], list[PythonFrame]] = {}

        def frames_above(chain_id: int, line_from_below: int) -> list[PythonFrame]:
            """The frames of chain `chain_id`, outermost last, where its innermost call is at the
            call site (string id) its callee recorded."""
            todo: list[tuple[int, int]] = []
            frames: list[PythonFrame | None] = []
            key = (chain_id, line_from_below)
            while chain_id >= 0 and key not in above and len(todo) < MAX_FRAMES:
                todo.append(key)
                k = int(example[chain_id])
                frames.append(_frame(strings[int(self.track.name_id[python[k]])], strings[line_from_below]))
                line_from_below = int(self.call_from[python[k]])
                chain_id = int(chain[caller[k]]) if caller[k] >= 0 else -1
                key = (chain_id, line_from_below)
            rest = above.get(key, []) if chain_id >= 0 else []
            for j in range(len(todo) - 1, -1, -1):  # memoized from the outermost down
                frame = frames[j]
                rest = ([frame] if frame is not None else []) + rest
                above[todo[j]] = rest
            return above[todo[0]] if todo else rest

        codes = [code.add(frames_above(int(c), 0)) for c in distinct.tolist()]
        return np.asarray(codes, np.int64)[inverse.reshape(-1)]


def _frame(name: str, called_at: str) -> PythonFrame | None:
    """A Python event as a frame: a function's file, the line it is at (the call site its callee
    recorded, when in the same file; else its `def` line), and its name. Modules and builtins are
    no frame."""
    m = _FUNCTION_FRAME.match(name)
    if m is None:
        return None
    site = _CALL_SITE.match(called_at) if called_at else None
    line = int(site["line"]) if site is not None and site["file"] == m["file"] else int(m["line"])
    return PythonFrame(m["file"], line, m["function"])


def _chain_ids(content: np.ndarray, caller: np.ndarray) -> np.ndarray:
    """An id per distinct chain (a frame's content and its caller's chain), level by level from the
    outermost calls: one np.unique per level over the calls still waiting. `caller` points at
    earlier calls only (time nesting), so no chain loops; calls deeper than MAX_FRAMES each keep a
    chain of their own, cut there."""
    n = len(content)
    _, kind = np.unique(content, return_inverse=True)  # dense ids, so that a pair fits one int64
    kind = kind.reshape(-1).astype(np.int64)
    chain = np.full(n, -1, np.int64)
    next_id = 0
    pending = np.arange(n)
    for _ in range(MAX_FRAMES + 1):
        above = caller[pending]
        parent_chain = np.where(above >= 0, chain[np.maximum(above, 0)], -1)
        ready = (above < 0) | (parent_chain >= 0)
        level = pending[ready]
        if not len(level):
            break
        _, ids = np.unique(kind[level] * (n + 1) + parent_chain[ready] + 1, return_inverse=True)
        chain[level] = next_id + ids.reshape(-1)
        next_id += int(ids.max()) + 1
        pending = pending[~ready]
    chain[pending] = next_id + np.arange(len(pending))
    return chain


def _string_column(track: Track, name: str) -> np.ndarray:
    column = track.stats.column(name)
    if column is None or column.kind != "str":
        return np.zeros(len(track), np.int32)
    return column.dense(len(track), 0).astype(np.int32, copy=False)
