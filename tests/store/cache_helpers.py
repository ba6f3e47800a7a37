"""What the cache tests share: a profile copied where the test owns it, a trace's columns to compare,
and `tpuscope` run as its own process (the cache's exit path and its one warning are per process)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.conftest import ROOT, TF_TRACE, TPU_TRACE
from tpuscope.model.trace import Trace

PROFILES = (TPU_TRACE, TF_TRACE)


def copied(profile: Path, folder: Path, name: str | None = None) -> Path:
    """A copy with its own path (the cache key), so no other test's entry matches it."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / (name or profile.name)
    shutil.copy(profile, copy)
    return copy


def columns(trace: Trace) -> list[tuple]:
    """Every track's columns as bytes: equal lists mean equal traces for the cache's purpose."""
    found = []
    for track in trace.tracks():
        arrays = (track.start_ps, track.duration_ps, track.meta_index, track.name_id, track.depth)
        found.append((track.plane.name, track.name, *(np.ascontiguousarray(a).tobytes() for a in arrays)))
    return found


def run_tpuscope(*args: str, cache_root: Path, preexec_fn=None, extra_env: dict | None = None,
                 wait: bool = True) -> subprocess.CompletedProcess | subprocess.Popen:  # fmt: skip
    """`tpuscope ARGS` in a process of its own, with `cache_root` as the store's root folder."""
    env = dict(os.environ, TPUSCOPE_CACHE_DIR=str(cache_root), **(extra_env or {}))
    argv = [sys.executable, "-m", "tpuscope", *args]
    if not wait:
        return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, preexec_fn=preexec_fn)  # fmt: skip
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          preexec_fn=preexec_fn)  # fmt: skip


def cache_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "trace cache" in line]


def trace_folder(cache_root: Path) -> Path:
    """Where a process given `cache_root` keeps its trace entries (`tpuscope.store.layout`)."""
    return cache_root / "traces"


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []
