"""Stepping through one op's occurrences: Previous / Next, in time order across every track.

Each step names the occurrence stepped to (`stepped`: its event and its window with a margin); the
stepper knows no timeline and no table, only the events it was given. Stepping keeps the user in
the view they step from (issue 37: a tab switch on each press lost their place in the table).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from tpuscope.model.trace import Track

# Margin around one op when stepping through occurrences: a tenth of the op on each side, at least
# MIN_ZOOM_MARGIN_PS (a zero-length op still gets a window to show).
ZOOM_MARGIN_FRACTION = 0.1
MIN_ZOOM_MARGIN_PS = 1000

Events = list[tuple[Track, np.ndarray]]  # (track, event indices) pairs, as highlights carry them


class OccurrenceStepper(QWidget):
    """Previous / Next buttons and a "k of n" label over a set of events."""

    stepped = Signal(object, int, object, object)  # (track, event index, t0_ps, t1_ps with margin)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._starts = np.empty(0, dtype=np.int64)
        self._ends = np.empty(0, dtype=np.int64)
        self._tracks: list[Track] = []
        self._track_of = np.empty(0, dtype=np.int64)  # position in _tracks of each occurrence
        self._index = np.empty(0, dtype=np.int64)  # event index in its track of each occurrence
        self._cursor = -1  # the occurrence shown, -1 before the first step
        self.previous_button = QPushButton("◀ Previous")
        self.next_button = QPushButton("Next ▶")
        self.occurrence_label = QLabel("")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("Occurrences:"))
        layout.addWidget(self.previous_button)
        layout.addWidget(self.next_button)
        layout.addWidget(self.occurrence_label, 1)
        self.previous_button.clicked.connect(self.previous)
        self.next_button.clicked.connect(self.next)
        self._update()

    def __len__(self) -> int:
        return len(self._starts)

    @property
    def current(self) -> int:
        """The position (0-based, in time order) of the occurrence shown; -1 before the first step."""
        return self._cursor

    def set_events(self, events: Events) -> None:
        """Orders the events by start across tracks; the next step goes to the first of them."""
        empty = np.empty(0, dtype=np.int64)
        if events:
            starts = np.concatenate([t.start_ps[i] for t, i in events])
            ends = np.concatenate([t.end_ps[i] for t, i in events])
            track_of = np.concatenate([np.full(len(i), k, dtype=np.int64) for k, (_, i) in enumerate(events)])
            index = np.concatenate([np.asarray(i, dtype=np.int64) for _, i in events])
        else:
            starts = ends = track_of = index = empty
        order = np.argsort(starts, kind="stable")
        self._starts, self._ends = starts[order], ends[order]
        self._tracks = [t for t, _ in events]
        self._track_of, self._index = track_of[order], index[order]
        self._cursor = -1
        self._update()

    def clear(self) -> None:
        self.set_events([])

    def next(self) -> None:
        self.step(+1)

    def previous(self) -> None:
        self.step(-1)

    def step(self, delta: int) -> None:
        """Moves `delta` occurrences on (wrapping around) and says which one it is now (`stepped`)."""
        count = len(self._starts)
        if count == 0:
            return
        self._cursor = (
            (self._cursor + delta) % count if self._cursor >= 0 else (0 if delta > 0 else count - 1)
        )
        t0, t1 = int(self._starts[self._cursor]), int(self._ends[self._cursor])
        margin = max(int((t1 - t0) * ZOOM_MARGIN_FRACTION), MIN_ZOOM_MARGIN_PS)
        self._update()
        track = self._tracks[int(self._track_of[self._cursor])]
        self.stepped.emit(track, int(self._index[self._cursor]), t0 - margin, t1 + margin)

    def _update(self) -> None:
        count = len(self._starts)
        self.previous_button.setEnabled(count > 0)
        self.next_button.setEnabled(count > 0)
        if count == 0:
            self.occurrence_label.setText("select a row to step through its events")
        elif self._cursor < 0:
            self.occurrence_label.setText(f"{count:,} events")
        else:
            self.occurrence_label.setText(f"{self._cursor + 1:,} of {count:,}")
