"""Python's cyclic garbage collector, run on the UI thread only.

Why: CPython collects in whichever thread allocates when a threshold is
crossed. When that is a worker thread (loading a profile, searching,
diagnosing) and the garbage holds Qt objects (a closed dialog, the views of
a replaced profile), their C++ destructors run off the GUI thread and the
process crashes: the test suite caught a segmentation fault with
"Garbage-collecting" in the loader thread. So automatic collection is
switched off and a timer on the UI thread collects instead, one generation at
a time as CPython's own thresholds say.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

CHECK_INTERVAL_MS = 500  # how often the UI thread looks whether a collection is due


class MainThreadCollector(QObject):
    """Owns the collection schedule while it lives; made once, by tpuscope.ui.app.application()."""

    def __init__(self, parent: QObject | None = None, interval_ms: int = CHECK_INTERVAL_MS):
        super().__init__(parent)
        gc.disable()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.collect_if_due)
        self.timer.start(interval_ms)

    @staticmethod
    def collect_if_due() -> int:
        """Collects the oldest generation whose threshold is crossed; returns it, or -1 when none was."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        for generation in (2, 1, 0):
            if thresholds[generation] and counts[generation] > thresholds[generation]:
                gc.collect(generation)
                return generation
        return -1
