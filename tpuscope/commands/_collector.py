"""Python's cyclic garbage collector around a headless command: paused while it imports and loads,
skipped at the process's exit.

Why: the collector runs every 700 new container objects. While a command starts (numpy's and the
command's imports, then the load) it ran 54 times over objects that are never garbage (modules,
functions, the trace's tables): ~20 ms of a cold 1M-event `tpuscope info`, measured with
gc.callbacks, while that whole start made 385 objects of cyclic garbage. At exit the interpreter's
finalization runs full collections over every object the imports made: another ~65 ms (perf: 80%
of the exit in gc_collect_main). `benchmarks/bench_start.py` times both.

So the collector is paused for exactly two phases, the command module's imports and a load
(`load_for_cli`); the analyses run with it as usual. And the `tpuscope` process freezes what
exists just before it exits (gc.freeze: later collections skip those objects). The exit still
runs atexit handlers and module teardown; only cycles of garbage left at that moment go unfreed,
and the OS takes the process's memory back whole. Freezing is for the process's own end only: a
caller that runs commands in-process (the tests) keeps its collector as it was.
"""

from __future__ import annotations

import gc

_paused_here = False  # the collector was on and pause() turned it off


def pause() -> None:
    """Pauses the collector, when it is on, until resume()."""
    global _paused_here
    if gc.isenabled():
        gc.disable()
        _paused_here = True


def resume() -> None:
    """Turns the collector back on when pause() turned it off; otherwise does nothing."""
    global _paused_here
    if _paused_here:
        _paused_here = False
        gc.enable()


def skip_exit_collections() -> None:
    """Just before the process ends: the interpreter's final collections then find nothing to walk."""
    gc.freeze()
