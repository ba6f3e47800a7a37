"""Property test: a mutated real HLO proto or profile gives a memory answer or none, never an error."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import GPU_TRACE, PTXLA_TRACE, TPU_TRACE
from tests.model.test_fuzz_loader import _mutate, edits_strategy
from tests.trace_checks import open_or_clean_error
from tpuscope.analysis.memory.programs import memory_spaces, program_memory
from tpuscope.analysis.memory.report import memory_report
from tpuscope.app.opener import open_trace
from tpuscope.model.programs import hlo_proto_blobs
from tpuscope.readers.xplane.hlo_memory import decode_program_buffers


def _blobs() -> dict[str, bytes]:
    found = {}
    for path in (TPU_TRACE, GPU_TRACE, PTXLA_TRACE):
        if path.exists():
            for program_id, blob in list(hlo_proto_blobs(open_trace(path)))[:3]:
                found[f"{path.parent.name}:{program_id}"] = blob
    return found


BLOBS = _blobs()
PROFILES = {p.name: p.read_bytes() for p in (TPU_TRACE, PTXLA_TRACE) if p.exists()}


@pytest.mark.timeout(600)
@settings(max_examples=200, deadline=None)
@given(seed=st.sampled_from(sorted(BLOBS)), edits=edits_strategy, cut=st.none() | st.integers(0, 2**31))
def test_mutated_hlo_protos_never_raise(seed, edits, cut):
    buffers = decode_program_buffers(_mutate(BLOBS[seed], edits, cut), 1)
    if buffers is not None:
        for space in memory_spaces(buffers) or [0]:
            memory = program_memory(buffers, space)
            assert memory.peak_heap_bytes >= 0 or memory.notes


@pytest.mark.timeout(600)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(sorted(PROFILES)), edits=edits_strategy, cut=st.none() | st.integers(0, 2**31))
def test_mutated_profiles_give_a_memory_report(tmp_path, seed, edits, cut):
    path = tmp_path / "mutated.xplane.pb"
    path.write_bytes(_mutate(PROFILES[seed], edits, cut))
    trace = open_or_clean_error(path)
    if trace is not None:
        memory_report(trace).to_json()
