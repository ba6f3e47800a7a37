"""tpuscope: a profiler for XLA programs. `tpuscope.open(path or bytes)`, `tpuscope.capture()` and
`tpuscope.compare(a, b)` are the Python API (`tpuscope.api`); they load on first use, so
`import tpuscope` (and every command) stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tpuscope.api import Capture, Profile, capture, compare, open  # noqa: A004

__all__ = ["Capture", "Profile", "capture", "compare", "open"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        import importlib

        return getattr(importlib.import_module("tpuscope.api"), name)
    raise AttributeError(f"module 'tpuscope' has no attribute {name!r}")
