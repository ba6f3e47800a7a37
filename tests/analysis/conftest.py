"""Traces the analysis tests share: the real TPU profile and a fresh JAX CPU training recording."""

from __future__ import annotations

import pytest

from tests.conftest import TPU_TRACE
from tests.jax_recordings import record_training_profile
from tpuscope.app.opener import open_trace


@pytest.fixture(scope="module")
def tpu_trace():
    return open_trace(TPU_TRACE)


@pytest.fixture(scope="session")
def jax_cpu_trace(tmp_path_factory):
    """Recorded once per session: JAX on the CPU, 4 annotated training steps."""
    return open_trace(record_training_profile(tmp_path_factory.mktemp("jax_ops"), steps=4))
