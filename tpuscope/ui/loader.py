"""Loading a profile off the UI thread, with progress, Cancel, and stale results dropped.

Each load gets an increasing generation number; the window only accepts the
result of the newest one (Hotspot's job tracker idea, viewer_anchors.md
section 0), so opening a second file while the first still loads can never
show the first. Cancel makes the progress callback return False, which
open_trace turns into LoadCancelled at its next report.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QThread, Signal

from tpuscope.errors import LoadCancelled, ProfileError
from tpuscope.model.load import open_trace
from tpuscope.model.trace import Trace
from tpuscope.storage.remote import is_url
from tpuscope.ui.timeline.lod import TimelineLod
from tpuscope.ui.timeline.palette import Colours

log = logging.getLogger(__name__)


@dataclass
class LoadResult:
    path: Path | str  # a URL stays a string (Path would fold gs:// into gs:/)
    trace: Trace
    lod: TimelineLod
    steps: object | None  # tpuscope.analysis.steps.Steps, when step finding is available
    colours: Colours | None = None  # made here: a plane with a million distinct names takes a second
    counters: list | None = None  # timeline counter tracks (memory in use per allocator)


def find_steps_or_none(trace: Trace):
    """Steps of the trace for the step band, or None when they cannot be found.

    A failure to find steps must not stop a profile from opening: it is logged
    and the band is simply not drawn.
    """
    try:
        from tpuscope.analysis.steps import find_steps
    except ModuleNotFoundError as error:
        if error.name != "tpuscope.analysis.steps":
            raise
        return None
    try:
        steps = find_steps(trace)
    except Exception:  # noqa: BLE001 - a step-finding bug must not block viewing the profile
        log.exception("finding steps failed")
        return None
    return steps if len(steps) else None


def prepare(path: Path | str, progress=None) -> LoadResult:
    """Loads and indexes one profile: what the worker thread does, usable synchronously too."""
    trace = open_trace(path, progress=progress)
    if progress is not None and progress(0.97, "indexing the timeline") is False:
        raise LoadCancelled()
    lod = TimelineLod(trace)
    colours = Colours()
    for plane in trace.planes:
        if plane.event_count:
            colours.of(plane)
    where = path if is_url(path) else Path(path)
    steps = find_steps_or_none(trace)
    return LoadResult(where, trace, lod, steps, colours, memory_counters_or_none(trace, steps))


def memory_counters_or_none(trace: Trace, steps) -> list | None:
    """Memory in use per allocator as counter tracks, computed here, off the UI thread, and kept on the
    trace for the Memory tab and the memory rules (programs' memory waits until they ask for it).
    A failure is logged and the profile still opens, without the counters."""
    try:
        from tpuscope.analysis.memory_report import cached_allocators
        from tpuscope.ui.memory_counters import memory_counter_series

        return memory_counter_series(cached_allocators(trace, steps))
    except Exception:  # noqa: BLE001 - a memory-analysis bug must not block viewing the profile
        log.exception("the memory report failed")
        return None


class LoadWorker(QThread):
    """Loads one path; reports through signals carrying its generation number."""

    progressed = Signal(int, float, str)
    loaded = Signal(int, object)
    failed = Signal(int, str)
    cancelled = Signal(int)

    def __init__(self, generation: int, path: str | Path, parent=None):
        super().__init__(parent)
        self.generation = generation
        self.path: Path | str = path if is_url(path) else Path(path)
        self._cancel = False

    def cancel(self) -> None:
        self._cancel = True

    def _progress(self, fraction: float, message: str) -> bool:
        self.progressed.emit(self.generation, float(fraction), message)
        return not self._cancel

    def run(self) -> None:
        try:
            result = prepare(self.path, self._progress)
        except LoadCancelled:
            self.cancelled.emit(self.generation)
        except ProfileError as error:
            self.failed.emit(self.generation, str(error))
        except MemoryError:
            self.failed.emit(
                self.generation, f"Cannot open {self.path}: there is not enough memory to load it."
            )
        except Exception as error:  # noqa: BLE001 - shown as one sentence, never as a crash of the window
            log.exception("loading %s failed", self.path)
            self.failed.emit(
                self.generation, f"Cannot open {self.path}: unexpected {type(error).__name__} ({error})."
            )
        else:
            if self._cancel:
                self.cancelled.emit(self.generation)
            else:
                self.loaded.emit(self.generation, result)
