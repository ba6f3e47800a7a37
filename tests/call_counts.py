"""Counting how often an analysis function runs, wherever it is called from.

`count_calls(monkeypatch, module, name)` wraps `module.name` and replaces it in every loaded
tpuscope module that imported it by name (`from ... import find_steps`), so a call from any
layer counts: the test sees recomputation hidden anywhere, not only through one import.
"""

from __future__ import annotations

import functools
import sys
from collections import Counter

from tpuscope.analysis import device_ops, framework, ops, overview, steps
from tpuscope.analysis.diagnose import engine
from tpuscope.analysis.pod import analysis as pod_analysis

# The analyses each view and command shares: each must run once per trace.
SHARED_ANALYSES = [
    (steps, "find_steps"),
    (framework, "detect_framework"),
    (device_ops, "find_devices"),
    (engine, "diagnose"),
    (ops, "collect_op_events"),
    (overview, "overview_figures"),
    (pod_analysis, "analyze_pod"),
]


def count_calls(monkeypatch, counts: Counter, module, name: str) -> None:
    original = getattr(module, name)

    @functools.wraps(original)
    def counted(*args, **kwargs):
        counts[name] += 1
        return original(*args, **kwargs)

    for loaded in list(sys.modules.values()):
        if getattr(loaded, "__name__", "").startswith("tpuscope") and getattr(loaded, name, None) is original:
            monkeypatch.setattr(loaded, name, counted)


def count_shared_analyses(monkeypatch) -> Counter:
    """Counts every function of SHARED_ANALYSES (by name) from now until the test ends."""
    counts: Counter = Counter()
    for module, name in SHARED_ANALYSES:
        count_calls(monkeypatch, counts, module, name)
    return counts
