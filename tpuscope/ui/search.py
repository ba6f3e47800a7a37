"""Search box: find events by substring or regex across all tracks, count them, step through them.

Matching scans the table of distinct names, then tests each track's name ids
with np.isin (Trace.find_events), so it costs one vectorized pass per track,
not a Python test per event. Matches are ordered by start time across tracks
for Enter / Shift+Enter stepping. A query with millions of matches takes
seconds to order and index for outlining, so it runs in a worker thread;
Enter pressed meanwhile is taken as soon as the matches arrive.
"""

from __future__ import annotations

import re
from dataclasses import field

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget

from tpuscope.model.records import record
from tpuscope.model.trace import Trace, Track
from tpuscope.ui.jobs import LatestJobs
from tpuscope.ui.timeline.lod import TrackLod


@record
class SearchResults:
    """All matches of one query, per track and in global start order, with their outline index."""

    per_track: list[tuple[Track, np.ndarray]] = field(default_factory=list)
    order_track: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    order_index: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    outlines: dict[int, TrackLod] = field(default_factory=dict)  # id(track) -> LOD of its matches

    @property
    def count(self) -> int:
        return len(self.order_index)

    def match(self, position: int) -> tuple[Track, int]:
        return self.per_track[int(self.order_track[position])][0], int(self.order_index[position])


def search_trace(trace: Trace, pattern: str, regex: bool) -> SearchResults:
    """Matches of `pattern` (case-insensitive) in event names; raises re.error for a bad regex."""
    per_track = trace.find_events(pattern, regex=regex)
    if not per_track:
        return SearchResults()
    starts = np.concatenate([track.start_ps[idx] for track, idx in per_track])
    owners = np.concatenate([np.full(len(idx), i, np.int32) for i, (_, idx) in enumerate(per_track)])
    indices = np.concatenate([idx for _, idx in per_track]).astype(np.int64)
    order = np.argsort(starts, kind="stable")
    outlines = {id(track): TrackLod(track, idx) for track, idx in per_track}
    return SearchResults(per_track, owners[order], indices[order], outlines)


class SearchLine(QLineEdit):
    """Enter: next match; Shift+Enter: previous match."""

    stepRequested = Signal(int)

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.stepRequested.emit(-1 if event.modifiers() & Qt.KeyboardModifier.ShiftModifier else 1)
            return
        if event.key() == Qt.Key.Key_Escape:
            self.clear()
        super().keyPressEvent(event)


class SearchBar(QWidget):
    """Emits the current match; the window shows it in the timeline and details panel."""

    matchesChanged = Signal(object)  # SearchResults
    currentMatch = Signal(object, int)  # (Track, event index)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.trace: Trace | None = None
        self.results = SearchResults()
        self.position = -1
        self._query: tuple[str, bool] | None = None
        self._pending_step = 0
        self._searching = False
        self._workers = LatestJobs(self)  # searches; a newer text or trace drops an older one's matches
        self.line = SearchLine(self)
        self.line.setPlaceholderText("Search events (Enter: next, Shift+Enter: previous)")
        self.line.setClearButtonEnabled(True)
        self.regex = QCheckBox("Regex", self)
        self.count_label = QLabel("", self)
        self.count_label.setMinimumWidth(150)
        previous, following = QToolButton(self), QToolButton(self)
        previous.setText("\u25b2")
        following.setText("\u25bc")
        previous.setToolTip("Previous match (Shift+Enter)")
        following.setToolTip("Next match (Enter)")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(self.line, 1)
        layout.addWidget(self.regex)
        layout.addWidget(previous)
        layout.addWidget(following)
        layout.addWidget(self.count_label)
        self.line.stepRequested.connect(self.step)
        previous.clicked.connect(lambda: self.step(-1))
        following.clicked.connect(lambda: self.step(1))
        self.line.textChanged.connect(self._on_text_changed)
        self.regex.toggled.connect(self._on_text_changed)

    def set_trace(self, trace: Trace | None) -> None:
        self.trace = trace
        self._query = None
        self._clear()
        if self.line.text():
            self.run()

    def _clear(self) -> None:
        self._workers.supersede()  # a search still running for the old text or trace is now stale
        self._searching = False
        self._pending_step = 0
        self.results = SearchResults()
        self.position = -1
        self.count_label.setText("")

    def _on_text_changed(self, *_) -> None:
        if not self.line.text():
            self._query = None
            self._clear()
            self.matchesChanged.emit(self.results)

    def is_searching(self) -> bool:
        """Whether the matches for the current text are still being computed."""
        return self._searching

    def run(self) -> None:
        """Starts searching for the current text (if it changed since the last search)."""
        query = (self.line.text(), self.regex.isChecked())
        if query == self._query or self.trace is None:
            return
        self._query = query
        self._clear()
        if not query[0]:
            self.matchesChanged.emit(self.results)
            return
        if query[1]:
            try:
                re.compile(query[0])
            except re.error as error:
                self.count_label.setText(f"<span style='color:#c0392b'>bad regex: {error.msg}</span>")
                self.matchesChanged.emit(self.results)
                return
        self.count_label.setText("searching\u2026")
        self._searching = True
        trace, (pattern, regex) = self.trace, query
        self._workers.start(lambda: search_trace(trace, pattern, regex), self._on_done)

    def _on_done(self, results: SearchResults) -> None:
        self._searching = False
        self.results = results
        self._show_count()
        self.matchesChanged.emit(self.results)
        if self._pending_step:
            direction, self._pending_step = self._pending_step, 0
            self.step(direction)

    def step(self, direction: int) -> None:
        """Goes to the next (1) or previous (-1) match, searching first if the text changed."""
        self.run()
        if self.is_searching():
            self._pending_step = direction  # taken as soon as the matches are in
            return
        if not self.results.count:
            return
        self.position = (
            (self.position + direction) % self.results.count
            if self.position >= 0
            else (0 if direction > 0 else self.results.count - 1)
        )
        self._show_count()
        self.currentMatch.emit(*self.results.match(self.position))

    def shutdown(self) -> None:
        """Waits for a running search (before the window closes)."""
        self._workers.wait()

    def _show_count(self) -> None:
        count = self.results.count
        if not count:
            self.count_label.setText("no matches")
        elif self.position >= 0:
            self.count_label.setText(f"{self.position + 1:,} of {count:,} matches")
        else:
            self.count_label.setText(f"{count:,} matches")
