"""Property test: any mutation of a real profile either loads or raises ProfileError, promptly."""

from __future__ import annotations

import gzip

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import GPU_TRACE, PTXLA_TRACE, SHARED_TRACES
from tests.trace_checks import assert_consistent, open_or_clean_error
from tpuscope.app.opener import open_trace
from tpuscope.errors import ProfileError

SEEDS = {p.name: p.read_bytes() for p in (PTXLA_TRACE, GPU_TRACE) if p.exists()}


def _mutate(data: bytes, edits: list[tuple[int, int, int]], cut: int | None) -> bytes:
    buffer = bytearray(data)
    for kind, position, value in edits:
        position %= len(buffer)
        if kind == 0:
            buffer[position] = value
        elif kind == 1:
            buffer.insert(position, value)
        elif len(buffer) > 1:
            del buffer[position]
    if cut is not None:
        buffer = buffer[: cut % (len(buffer) + 1)]
    return bytes(buffer)


edits_strategy = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 2**31), st.integers(0, 255)), min_size=1, max_size=12
)


@pytest.mark.timeout(600)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(sorted(SEEDS)), edits=edits_strategy, cut=st.none() | st.integers(0, 2**31))
def test_mutated_profiles_load_or_raise_profile_error(tmp_path, seed, edits, cut):
    path = tmp_path / "mutated.xplane.pb"
    path.write_bytes(_mutate(SEEDS[seed], edits, cut))
    trace = open_or_clean_error(path)
    if trace is not None:  # a trace that loads must be internally consistent
        assert_consistent(trace)


@pytest.mark.timeout(600)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(sorted(SEEDS)), cut=st.floats(0.0, 1.0, exclude_max=True))
def test_a_real_profile_cut_anywhere_loads_what_precedes_the_cut(tmp_path, seed, cut):
    """Truncation alone is never refused whole (issue 12): it loads with one warning, or, with no complete
    event before the cut, fails with the one-sentence error. Every position of a small real profile:
    tests/model/test_truncated_files.py."""
    data = SEEDS[seed]
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(data[: int(cut * len(data))])
    try:
        trace = open_trace(path, use_cache=False)
    except ProfileError as error:
        assert "the file is empty" in str(error) or "cut short before its first complete event" in str(error)
        return
    assert_consistent(trace)
    assert trace.event_count > 0
    assert len(trace.load_warnings) <= 1


KINETO_SEED = SHARED_TRACES / "kineto" / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"
JSON_SEED = gzip.decompress(KINETO_SEED.read_bytes()) if KINETO_SEED.exists() else b""


@pytest.mark.timeout(600)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=edits_strategy, cut=st.none() | st.integers(0, 2**31), compress=st.booleans())
def test_mutated_json_traces_load_or_raise_profile_error(tmp_path, edits, cut, compress):
    """Trace-event JSON (a real Kineto trace) mutated or cut anywhere: a trace or the one-sentence error."""
    data = _mutate(JSON_SEED, edits, cut)
    path = tmp_path / ("mutated.pt.trace.json.gz" if compress else "mutated.pt.trace.json")
    path.write_bytes(gzip.compress(data) if compress else data)
    trace = open_or_clean_error(path)
    if trace is not None:
        assert_consistent(trace)
