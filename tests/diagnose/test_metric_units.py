"""Every number a finding reports names its unit (issue 23: the async wait's "waiting for ...:
231,087" had none), so the CLI's JSON and the app's Numbers table read the same.

A metric's key carries its unit as a token (`compile_ms`, `median_op_us`, `percent_of_profile`,
`bytes_per_transfer`, `syncs_per_step`); a count is an int and needs none; a dict of numbers by
name (one per host, per kind of wait) takes its unit from its own key (`waiting_for_ms`).
"""

from __future__ import annotations

import pytest

from tests.conftest import ALL_SHARED_TRACES, SAMPLES, require_shared_traces
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace

# Tokens that say what a number measures: a time unit, a share, a size, a rate, a score.
UNIT_TOKENS = {"ps", "us", "ms", "s", "percent", "bytes", "gb", "gib", "tflops", "flops", "per", "score"}
PROFILES = sorted(SAMPLES.glob("*.xplane.pb")) + [SAMPLES / "jax_cpu_pod_straggler"]


def _names_unit(key: str) -> bool:
    return bool(set(str(key).lower().split("_")) & UNIT_TOKENS)


def _unitless(key: str, value, path: str) -> list[str]:
    """The paths of the fractional numbers under metric `key` that no key names a unit for (an int
    is a count)."""
    if isinstance(value, dict):
        found: list[str] = []
        for name, item in value.items():
            if isinstance(item, dict | list | tuple):
                found += _unitless(str(name), item, f"{path}.{name}")
            elif isinstance(item, float) and not (_names_unit(key) or _names_unit(name)):
                found.append(f"{path}.{name}")
        return found
    if isinstance(value, list | tuple):
        return [p for item in value[:50] for p in _unitless(key, item, f"{path}[]")]
    if isinstance(value, float) and not _names_unit(key):
        return [path]
    return []


@pytest.mark.parametrize("path", PROFILES + ALL_SHARED_TRACES, ids=lambda p: p.name)
def test_every_metric_number_names_its_unit(path):
    if path in ALL_SHARED_TRACES:
        require_shared_traces()
    report = TraceAnalysis(open_trace(path, use_cache=False)).report
    problems = [
        p
        for finding in report.findings
        for key, value in finding.metrics.items()
        for p in _unitless(key, value, f"{finding.id}.{key}")
    ]
    assert problems == []
