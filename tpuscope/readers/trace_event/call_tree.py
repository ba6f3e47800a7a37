"""A host thread's events as a call tree: each event's enclosing event, found by time nesting.

Complete events on one thread nest (a CPU op inside the Python call that made it, a launch inside
the op): the builder's depths say how deep each is, and each event's parent is the last earlier
event one level up that still covers its start. What the PyTorch profiler's readers ask of the
tree (the Python frames around a launch, the CPU op that launched a kernel) is a walk up it.
"""

from __future__ import annotations

import numpy as np

from tpuscope.model.trace import Track


def parents(track: Track) -> np.ndarray:
    """Each event's enclosing event (the last earlier event one level up that still covers its
    start), -1 at the top: one sort and one search over (depth, position) keys."""
    n = len(track)
    depth = track.depth.astype(np.int64)
    key = depth * n + np.arange(n)
    ordered = np.sort(key)
    wanted = (depth - 1) * n + np.arange(n)
    at = np.searchsorted(ordered, wanted) - 1
    candidate = ordered[np.maximum(at, 0)] - (depth - 1) * n
    ok = (depth > 0) & (at >= 0) & (candidate >= 0) & (candidate < np.arange(n))
    parent = np.where(ok, candidate, -1)
    safe = np.maximum(parent, 0)
    covers = track.start_ps[safe] + track.duration_ps[safe] >= track.start_ps
    return np.where(ok & covers, parent, -1)


def nearest_enclosing(
    parent: np.ndarray, events: np.ndarray, mask: np.ndarray, include_self: bool
) -> np.ndarray:
    """Per event: its innermost enclosing event where `mask` holds (itself too with `include_self`),
    -1 none, walking `parent` (`parents`). One vectorized step per nesting level."""
    current = events.astype(np.int64) if include_self else parent[events]
    found = np.full(len(events), -1, np.int64)
    open_ = current >= 0
    while open_.any():
        at = np.flatnonzero(open_)
        hit = mask[current[at]]
        found[at[hit]] = current[at[hit]]
        rest = at[~hit]
        current[rest] = parent[current[rest]]
        open_[:] = False
        open_[rest] = current[rest] >= 0
    return found
