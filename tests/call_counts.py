"""Counting how often an analysis function runs, wherever it is called from.

`count_calls(monkeypatch, module, name)` wraps `module.name` and replaces it in every loaded
tpuscope module that imported it by name (`from ... import find_steps`), so a call from any
layer counts: the test sees recomputation hidden anywhere, not only through one import.
"""

from __future__ import annotations

import functools
import sys
from collections import Counter


def count_calls(monkeypatch, counts: Counter, module, name: str) -> None:
    original = getattr(module, name)

    @functools.wraps(original)
    def counted(*args, **kwargs):
        counts[name] += 1
        return original(*args, **kwargs)

    for loaded in list(sys.modules.values()):
        if getattr(loaded, "__name__", "").startswith("tpuscope") and getattr(loaded, name, None) is original:
            monkeypatch.setattr(loaded, name, counted)
