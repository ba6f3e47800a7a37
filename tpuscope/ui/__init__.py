"""The Qt desktop app. Importing this package first applies the interpreter guard below.

PySide6 6.12 on CPython 3.11 returns None, True and False from wrapped C++
calls (every void method, Signal.emit) without taking a reference, as if
they were immortal objects as on CPython 3.12+. Each call then leaves them
one reference short, and after a few thousand calls (a few seconds of
painting) the interpreter aborts with "Fatal Python error: none_dealloc".
Giving these three objects a huge reference count once, as CPython 3.12
does by design, makes the missing references harmless. Nothing happens on
3.12+ or on other interpreters.
"""

from __future__ import annotations

import ctypes
import sys

# Extra references: 2**40 missing decrements would take years of painting at 60 fps.
_REFERENCE_HEADROOM = 1 << 40


def _make_singletons_immortal() -> None:
    if sys.implementation.name != "cpython" or sys.version_info >= (3, 12):
        return
    for singleton in (None, True, False):
        # CPython objects start with their Py_ssize_t reference count, at the address id() gives.
        refcount = ctypes.c_ssize_t.from_address(id(singleton))
        if refcount.value < _REFERENCE_HEADROOM:
            refcount.value += _REFERENCE_HEADROOM


_make_singletons_immortal()
