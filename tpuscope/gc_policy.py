"""When Python's cyclic garbage collector runs: paused around a headless command's start, and only
on the UI thread in the desktop app.

A headless command. The collector runs every 700 new container objects. While a command starts
(numpy's and the command's imports, then the load) it ran 54 times over objects that are never
garbage (modules, functions, the trace's tables): ~20 ms of a cold 1M-event `tpuscope info`,
measured with gc.callbacks, while that whole start made 385 objects of cyclic garbage. At exit the
interpreter's finalization runs full collections over every object the imports made: another
~65 ms (perf: 80% of the exit in gc_collect_main). `benchmarks/bench_start.py` times both.
So the collector is paused for exactly two phases, the command module's imports and a load
(`load_for_cli`); the analyses run with it as usual. And the `tpuscope` process freezes what
exists just before it exits (gc.freeze: later collections skip those objects). The exit still
runs atexit handlers and module teardown; only cycles of garbage left at that moment go unfreed,
and the OS takes the process's memory back whole.

The `tpuscope` process also freezes what exists when a paused phase ends. Objects made while
the collector is paused pile up in its youngest generation, so the first collections after
resume() walked every one of them twice (young, then middle generation) although they live to
the exit: the modules, functions and classes of the imports, and the loaded trace, which one
command keeps to its end. On the 1M-event JAX CPU recording (gc.callbacks) the collections of
`overview --json` took ~38 ms, two of them ~16 ms each; frozen, ~11 ms (diagnose ~39 -> ~6 ms,
info ~13 -> ~3 ms). What the freeze keeps of real garbage is what the imports' and the load's
cycles made: ~360 objects there. A phase that ends in an exception (a profile that cannot be
read, after which `diagnose` may go on host by host) is not frozen. Freezing is for the `tpuscope`
process only (`one_command_process`): a caller that runs commands in-process (the tests) keeps
its collector as it was.

The desktop app. CPython collects in whichever thread allocates when a threshold is crossed.
When that is a worker thread (loading a profile, searching, diagnosing) and the garbage holds Qt
objects (a closed dialog, the views of a replaced profile), their C++ destructors run off the GUI
thread and the process crashes: the test suite caught a segmentation fault with
"Garbage-collecting" in the loader thread. So automatic collection is switched off and a timer on
the UI thread collects instead (`MainThreadCollector`), one generation at a time as CPython's own
thresholds say.

The CLI imports this module first thing, so it imports no Qt: `MainThreadCollector`, a QObject,
is made the first time it is looked up (the module's __getattr__).
"""

from __future__ import annotations

import gc
import sys
from typing import Any

CHECK_INTERVAL_MS = 500  # how often the UI thread looks whether a collection is due

_paused_here = False  # the collector was on and pause() turned it off
_freeze_on_resume = False  # this process runs one command, then exits (one_command_process)


def one_command_process() -> None:
    """Called by the `tpuscope` script: what exists when a paused phase ends lives to the exit, so
    resume() freezes it and later collections walk only what the command makes next."""
    global _freeze_on_resume
    _freeze_on_resume = True


def pause() -> None:
    """Pauses the collector, when it is on, until resume()."""
    global _paused_here
    if gc.isenabled():
        gc.disable()
        _paused_here = True


def resume() -> None:
    """Turns the collector back on when pause() turned it off; otherwise does nothing. In the
    `tpuscope` process, first freezes what exists (see the module's docstring), unless the phase
    is ending in an exception (called from a `finally:` as one propagates: a profile that cannot be
    read): what that phase made is garbage the traceback still holds, and must stay collectable."""
    global _paused_here
    if _paused_here:
        _paused_here = False
        if _freeze_on_resume and sys.exc_info()[0] is None:
            gc.freeze()
        gc.enable()


def skip_exit_collections() -> None:
    """Just before the process ends: the interpreter's final collections then find nothing to walk."""
    gc.freeze()


def collect_if_due() -> int:
    """Collects the oldest generation whose threshold is crossed; returns it, or -1 when none was."""
    counts, thresholds = gc.get_count(), gc.get_threshold()
    for generation in (2, 1, 0):
        if thresholds[generation] and counts[generation] > thresholds[generation]:
            gc.collect(generation)
            return generation
    return -1


def _main_thread_collector_class():
    from PySide6.QtCore import QObject, QTimer

    class MainThreadCollector(QObject):
        """Owns the collection schedule while it lives; made once, by tpuscope.ui.app.application()."""

        def __init__(self, parent: QObject | None = None, interval_ms: int = CHECK_INTERVAL_MS):
            super().__init__(parent)
            gc.disable()
            self.timer = QTimer(self)
            self.timer.timeout.connect(self.collect_if_due)
            self.timer.start(interval_ms)

        collect_if_due = staticmethod(collect_if_due)

    MainThreadCollector.__qualname__ = MainThreadCollector.__name__
    return MainThreadCollector


def __getattr__(name: str) -> Any:
    if name != "MainThreadCollector":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    made = globals()[name] = _main_thread_collector_class()  # made once: findChild looks for this class
    return made
