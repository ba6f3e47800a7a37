"""The real profiles the rules run on: the shared traces, and JAX CPU recordings (all scenarios
recorded once per session, in one subprocess)."""

from __future__ import annotations

import pytest

from tests.conftest import ALL_SHARED_TRACES, require_shared_traces
from tests.diagnose import recordings
from tpuscope.app.opener import open_trace


@pytest.fixture(scope="module")
def shared_traces() -> dict:
    """path -> Trace of every real profile in shared/traces (loaded once per module, without the cache)."""
    require_shared_traces()
    return {path: open_trace(path, use_cache=False) for path in ALL_SHARED_TRACES}


@pytest.fixture(scope="session")
def recorded_paths(tmp_path_factory) -> dict:
    """scenario -> path of a real .xplane.pb recorded by JAX on the CPU (see recordings.py)."""
    return recordings.record_all_in_subprocess(tmp_path_factory.mktemp("jax_scenarios"))


@pytest.fixture(scope="session")
def recorded_trace(recorded_paths):
    """recorded_trace(scenario) -> the loaded Trace (loaded once per session, without the cache)."""
    cache: dict[str, object] = {}

    def get(scenario: str):
        if scenario not in cache:
            cache[scenario] = open_trace(recorded_paths[scenario], use_cache=False)
        return cache[scenario]

    return get
