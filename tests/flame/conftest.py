"""Real JAX CPU recordings for the flame tests, each made once per session."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.jax_recordings import record_source_profile, run_recording

# Nested named scopes whose heaviest branch (the MLP's two matmuls) XLA:CPU fuses into one fusion
# with the head's multiply and reduction: the fusion's root instruction is `head/reduce_sum`, so
# attribution to the root puts all of the time on `head` and none on `blocks`.
SCOPED_PROGRAM = textwrap.dedent(
    """
    import sys
    import jax
    import jax.numpy as jnp


    def mlp(w1, w2, x):
        with jax.named_scope("mlp"):
            with jax.named_scope("up"):
                h = jnp.tanh(x @ w1)
            with jax.named_scope("down"):
                return h @ w2


    def model_step(w1, w2, x):
        with jax.named_scope("blocks"):
            with jax.named_scope("block_1"):
                y = mlp(w1, w2, x)
        with jax.named_scope("head"):
            return jnp.sum(y * y, axis=1)


    def main(logdir):
        step = jax.jit(model_step)
        w1 = jnp.ones((512, 1024)) * 0.01
        w2 = jnp.ones((1024, 512)) * 0.01
        x = jnp.ones((256, 512))
        step(w1, w2, x).block_until_ready()  # compile outside the profile
        jax.profiler.start_trace(logdir)
        for _ in range(3):
            out = step(w1, w2, x)
        out.block_until_ready()
        jax.profiler.stop_trace()


    if __name__ == "__main__":
        main(sys.argv[1])
    """
)


def record_scoped_profile(folder: Path) -> Path:
    """Writes SCOPED_PROGRAM to `folder`/model.py, records it running from there; the .xplane.pb."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "model.py"
    program.write_text(SCOPED_PROGRAM)
    logdir = folder / "logs"
    return run_recording(logdir, str(program), str(logdir), cwd=folder)


@pytest.fixture(scope="session")
def scoped_profile(tmp_path_factory) -> Path:
    return record_scoped_profile(tmp_path_factory.mktemp("scoped_program"))


@pytest.fixture(scope="session")
def source_profile(tmp_path_factory) -> tuple[Path, Path]:
    """(the program file, its recording): one big matmul on the line marked BIG_MATMUL."""
    return record_source_profile(tmp_path_factory.mktemp("flame_source_program"))
