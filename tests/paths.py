"""Where the tests and benchmarks find their files: the checkout's samples, and the real profiles kept
outside the repository (too large to commit), which $TPUSCOPE_TRACES points at so the suite runs from
any checkout; unset, they are the folder beside the checkout, ../shared/traces."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


def shared_traces() -> Path:
    """$TPUSCOPE_TRACES when set (a relative path is taken from the current folder), else ../shared/traces."""
    configured = os.environ.get("TPUSCOPE_TRACES")
    return Path(configured).expanduser().absolute() if configured else ROOT.parent / "shared" / "traces"


SHARED_TRACES = shared_traces()
