"""One computation in a worker thread, reported with the generation it was started for.

The window starts a new generation for every request and drops results of
older ones, so a slow job never overwrites the answer to a newer question.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QThread, Signal


class Job(QThread):
    done = Signal(int, object)  # (generation, the function's result)

    def __init__(self, generation: int, work: Callable[[], object], parent=None):
        super().__init__(parent)
        self.generation = generation
        self.work = work

    def run(self) -> None:
        self.done.emit(self.generation, self.work())
