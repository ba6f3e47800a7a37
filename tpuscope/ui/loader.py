"""Loading a profile off the UI thread, with progress, Cancel, and stale results dropped.

Each load gets an increasing generation number; the window only accepts the
result of the newest one (the stale-job guard of KDAB Hotspot's
`src/jobtracker.h`, https://github.com/KDAB/hotspot), so opening a second file
while the first still loads can never show the first. Cancel makes the
progress callback return False, which open_trace turns into LoadCancelled at
its next report.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QThread, Signal

from tpuscope.errors import LoadCancelled, ProfileError
from tpuscope.model.records import record
from tpuscope.urls import is_url

if TYPE_CHECKING:  # imported by `prepare`, in the worker: the window paints without them
    from tpuscope.analysis.session import TraceAnalysis
    from tpuscope.model.trace import Trace
    from tpuscope.ui.timeline.lod import TimelineLod
    from tpuscope.ui.timeline.palette import Colours

log = logging.getLogger(__name__)


@record
class LoadResult:
    path: Path | str  # a URL stays a string (Path would fold gs:// into gs:/)
    trace: Trace
    lod: TimelineLod
    analysis: TraceAnalysis  # the trace's shared analyses: nothing computed yet, views ask for them
    colours: Colours | None = None  # made here: a plane with a million distinct names takes a second


def prepare(path: Path | str, progress=None) -> LoadResult:
    """Loads and indexes one profile for the timeline: what the worker thread does, usable synchronously
    too. No analysis runs here: the window shows the trace as soon as the timeline can be drawn, and
    steps, findings and op tables fill in from the `AnalysisHub` as they finish."""
    # The readers (protobuf, the decoder) and the analyses load here, in the worker, while the window
    # paints.
    from tpuscope.app.opener import open_trace
    from tpuscope.ui.timeline.lod import TimelineLod
    from tpuscope.ui.timeline.palette import Colours

    trace = open_trace(path, progress=progress)
    analysis = analysis_for(trace)  # before the index: aligning the hosts' clocks moves their events
    if progress is not None and progress(0.97, "indexing the timeline") is False:
        raise LoadCancelled()
    lod = TimelineLod(trace)
    colours = Colours()
    for plane in trace.planes:
        if plane.event_count:
            colours.of(plane)
    where = path if is_url(path) else Path(path)
    return LoadResult(where, trace, lod, analysis, colours)


@record
class LoadOptions:
    """How the window loads profiles (set from its settings; read by the worker)."""

    align_clocks: bool = True  # View > Align Host Clocks


OPTIONS = LoadOptions()


def analysis_for(trace: Trace) -> TraceAnalysis:
    """The trace's analysis, with the hosts' and devices' clocks aligned first when asked
    (`tpuscope.analysis.clock_alignment`: hosts whose collectives lie outside the others', devices
    whose ops start before their launches)."""
    from tpuscope.analysis.session import TraceAnalysis

    if OPTIONS.align_clocks:
        from tpuscope.analysis.clock_alignment import align_clocks

        return align_clocks(trace)
    return TraceAnalysis(trace)


class LoadWorker(QThread):
    """Loads one path; reports through signals carrying its generation number."""

    progressed = Signal(int, float, str)
    loaded = Signal(int, object)
    failed = Signal(int, str)
    cancelled = Signal(int)

    def __init__(self, generation: int, path: str | Path, parent=None, work=None):
        super().__init__(parent)
        self.generation = generation
        self.path: Path | str = path if is_url(path) else Path(path)
        self._cancel = False
        # work(path, progress) -> the result to hand over: `prepare`, unless the window opens runs of
        # many hosts as a pod summary first (tpuscope.ui.pod.session)
        self.work = work if work is not None else prepare

    def cancel(self) -> None:
        self._cancel = True

    def _progress(self, fraction: float, message: str) -> bool:
        self.progressed.emit(self.generation, float(fraction), message)
        return not self._cancel

    def run(self) -> None:
        try:
            result = self.work(self.path, self._progress)
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
