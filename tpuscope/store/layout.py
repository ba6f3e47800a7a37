"""Where the store keeps each kind of cache: one root folder, one subfolder per kind.

    <root>/traces/         columnar traces (`tpuscope.store.traces`)
    <root>/pods/           per-host pod results (`tpuscope.store.pod_results`)
    <root>/run_summaries/  a history's run summaries (`tpuscope.store.run_summaries`)
    <root>/downloads/      cloud-bucket runs fetched to open them (`tpuscope.store.remote`)

The root is TPUSCOPE_CACHE_DIR when set, else the user's cache folder (platformdirs: ~/.cache/tpuscope
on Linux), so one setting moves every cache and `tpuscope cache clear` finds them all. The default
trace folder is where it always was (<user cache>/tpuscope/traces); the folders an older tpuscope used
for the other kinds (pods and run_summaries inside traces/, remote/ beside it) are `LEGACY_FOLDERS`,
which `tpuscope cache clear` removes too.

Kept free of numpy and the analysis, so that any cache, the command line and the app's settings can
name a folder without importing what the other caches hold.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT_ENV = "TPUSCOPE_CACHE_DIR"
TRACES = "traces"
PODS = "pods"
RUN_SUMMARIES = "run_summaries"
DOWNLOADS = "downloads"
KINDS = (TRACES, PODS, RUN_SUMMARIES, DOWNLOADS)
# Folders of an older layout, relative to the root: nothing reads them any more.
LEGACY_FOLDERS = ("remote", f"{TRACES}/{PODS}", f"{TRACES}/{RUN_SUMMARIES}")


def root() -> Path:
    """TPUSCOPE_CACHE_DIR, else the user's cache folder for tpuscope."""
    override = os.environ.get(ROOT_ENV)
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("tpuscope"))


def folder(kind: str) -> Path:
    """The subfolder of the root that holds `kind` (one of KINDS)."""
    if kind not in KINDS:
        raise ValueError(f"{kind!r} is not a kind of cache ({', '.join(KINDS)})")
    return root() / kind
