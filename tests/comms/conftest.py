"""The communication tests' profiles: the shared PyTorch traces with NCCL kernels, the TPU sample, and a
real 4-process JAX run over gloo recorded once per session (`tests.pods.recordings`)."""

from __future__ import annotations

import pytest

from tests.paths import SHARED_TRACES
from tests.pods import recordings

KINETO = SHARED_TRACES / "kineto"
RANK0 = KINETO / "trace_filter__sampled_rank-0.json.gz"
RANK1 = KINETO / "trace_filter__sampled_rank-1.json.gz"
QUEUE = KINETO / "negative_queue_length_values_check__rank0.json.gz"
NCCL_TRACES = (RANK0, RANK1, QUEUE)


@pytest.fixture(scope="session")
def gloo_pod(tmp_path_factory):
    """A run folder of 4 JAX processes whose every step ends in a large blocking all-reduce over gloo."""
    return recordings.record_pod("collective_heavy", tmp_path_factory.mktemp("comms_pod"))
