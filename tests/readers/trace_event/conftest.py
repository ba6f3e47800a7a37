"""The trace-event tests' real files: the Kineto traces of the shared folder and a JAX recording's
`<host>.trace.json.gz`, recorded once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SHARED_TRACES
from tests.jax_recordings import record_training_profile

KINETO = SHARED_TRACES / "kineto"
AMD = KINETO / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"
A100 = KINETO / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
CPU_ONLY = KINETO / "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"


@pytest.fixture(scope="session")
def jax_run_folder(tmp_path_factory) -> Path:
    xplane = record_training_profile(tmp_path_factory.mktemp("jax_json"), steps=3)
    assert (xplane.parent / xplane.name.replace(".xplane.pb", ".trace.json.gz")).exists()
    return xplane.parent


@pytest.fixture(scope="session")
def jax_trace_json(jax_run_folder) -> Path:
    """TSL's JSON of a real JAX run (what JAX writes beside each .xplane.pb)."""
    return next(jax_run_folder.glob("*.trace.json.gz"))
