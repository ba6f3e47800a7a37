"""Real multi-process JAX CPU pod runs (see recordings.py), each recorded once per test session."""

from __future__ import annotations

import pytest

from tests.pods import recordings
from tpuscope.opener import open_trace


@pytest.fixture(scope="session")
def pod_run(tmp_path_factory):
    """pod_run(scenario) -> the run folder of that scenario, recorded on first use."""
    runs: dict[str, object] = {}

    def get(scenario: str):
        if scenario not in runs:
            runs[scenario] = recordings.record_pod(scenario, tmp_path_factory.mktemp(f"pod_{scenario}"))
        return runs[scenario]

    return get


@pytest.fixture(scope="session")
def pod_trace(pod_run):
    """pod_trace(scenario) -> the loaded Trace of that run (all hosts, loaded once, without the cache)."""
    traces: dict[str, object] = {}

    def get(scenario: str):
        if scenario not in traces:
            traces[scenario] = open_trace(pod_run(scenario), use_cache=False)
        return traces[scenario]

    return get
