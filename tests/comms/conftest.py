"""The communication tests' profiles: the shared PyTorch traces with NCCL kernels, the TPU sample, and a
real 4-process JAX run over gloo recorded once per session (`tests.pods.recordings`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

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


# One process, 4 XLA:CPU devices, a shard_map step with a ppermute, an all_gather and a psum of
# f32[256,256] shards: JAX names each collective's instruction after its primitive (`ppermute.3`).
SHARD_MAP_STEP = textwrap.dedent(
    """
    import sys
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()), ("x",))

    def step(a):
        b = jax.lax.ppermute(a, "x", [(i, (i + 1) % 4) for i in range(4)])
        c = jax.lax.all_gather(a, "x")
        d = jnp.tanh(a @ a.T)
        return jax.lax.psum(b, "x") + d.sum() + c.sum()

    g = jax.jit(jax.shard_map(step, mesh=mesh, in_specs=P("x"), out_specs=P("x")))
    a = jnp.ones((4 * 256, 256), jnp.float32)
    g(a).block_until_ready()
    jax.profiler.start_trace(sys.argv[1])
    for i in range(3):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            g(a).block_until_ready()
    jax.profiler.stop_trace()
    """
)


@pytest.fixture(scope="session")
def shard_map_profile(tmp_path_factory):
    """The .xplane.pb of SHARD_MAP_STEP, recorded once per session."""
    logdir = tmp_path_factory.mktemp("comms_shard_map")
    devices = "--xla_force_host_platform_device_count=4"
    env = {"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin", "XLA_FLAGS": devices}
    subprocess.run([sys.executable, "-c", SHARD_MAP_STEP, str(logdir)], check=True, timeout=240, env=env,
                   capture_output=True)  # fmt: skip
    (found,) = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
    return found
