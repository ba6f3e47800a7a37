"""The JAX CPU pairs with a known cause (recorded once per session, in one subprocess) and the
compare command run in-process."""

from __future__ import annotations

import pytest

from tests.compare import recordings
from tpuscope.analysis.compare.runs import RunAnalysis, analyze_run
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.opener import open_trace


@pytest.fixture(scope="session")
def pair_paths(tmp_path_factory) -> dict:
    """scenario -> path of a real .xplane.pb recorded by JAX on the CPU (see recordings.py)."""
    return recordings.record_all_in_subprocess(tmp_path_factory.mktemp("compare_pairs"))


@pytest.fixture(scope="session")
def analyzed(pair_paths):
    """analyzed(scenario) -> its RunAnalysis (loaded and analyzed once per session)."""
    cache: dict[str, RunAnalysis] = {}

    def get(scenario: str) -> RunAnalysis:
        if scenario not in cache:
            cache[scenario] = analyze_run(TraceAnalysis(open_trace(pair_paths[scenario], use_cache=False)))
        return cache[scenario]

    return get
