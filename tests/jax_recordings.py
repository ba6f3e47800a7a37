"""Records real JAX CPU profiles in a subprocess, for tests that need fresh real XPlane files.

Recording runs in its own interpreter so the test process never initialises a
JAX backend or profiler session of its own.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def run_recording(logdir: Path, *args: str, cwd: Path | None = None) -> Path:
    """Runs a JAX program (`python ARGS...`) on the CPU that profiles into `logdir`; the newest
    .xplane.pb it wrote (every recording of the tests goes through here)."""
    subprocess.run(
        [sys.executable, *args],
        check=True,
        timeout=240,
        env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        cwd=cwd,
    )
    found = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
    if not found:
        raise RuntimeError(f"JAX wrote no .xplane.pb under {logdir}")
    return found[-1]


TRAINING_LOOP = textwrap.dedent(
    """
    import sys
    import jax, jax.numpy as jnp
    logdir = sys.argv[1]
    steps = int(sys.argv[2])

    @jax.jit
    def train_step(w, x):
        loss = jnp.mean((x @ w) ** 2)
        return w - 0.01 * jax.grad(lambda w: jnp.mean((x @ w) ** 2))(w), loss

    w = jnp.ones((64, 64))
    x = jnp.ones((32, 64))
    w, _ = train_step(w, x)  # compile outside the profile
    jax.profiler.start_trace(logdir)
    for step in range(steps):
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            w, loss = train_step(w, x)
    loss.block_until_ready()
    jax.profiler.stop_trace()
    """
)


def record_training_profile(logdir: Path, steps: int = 5) -> Path:
    """Records `steps` jitted training steps; returns the written .xplane.pb file."""
    logdir.mkdir(parents=True, exist_ok=True)
    return run_recording(logdir, "-c", TRAINING_LOOP, str(logdir), str(steps))


# A program whose buffers are known from first principles: a 1 MiB f32[512,512] parameter, a
# 1 MiB sorted copy of it that XLA must materialize (sort is not fused into its consumer), and a
# 2 KiB f32[512] result.
MEMORY_PROGRAM = textwrap.dedent(
    """
    import sys
    import jax, jax.numpy as jnp
    logdir = sys.argv[1]

    @jax.jit
    def spread(x):
        ordered = jnp.sort(x * 2.0 + 1.0, axis=1)
        return ordered[:, -1] - ordered[:, 0]

    x = jnp.ones((512, 512), jnp.float32)
    spread(x).block_until_ready()
    jax.profiler.start_trace(logdir)
    for _ in range(3):
        spread(x).block_until_ready()
    jax.profiler.stop_trace()
    """
)


def record_memory_profile(logdir: Path) -> Path:
    """Records MEMORY_PROGRAM (`jit_spread`) three times; returns the written .xplane.pb file."""
    logdir.mkdir(parents=True, exist_ok=True)
    return run_recording(logdir, "-c", MEMORY_PROGRAM, str(logdir))


# A program run from a file, so that XLA records its source lines: one jitted function whose big
# matmul (256x512 @ 512x512, on the line marked BIG_MATMUL) dwarfs the rest: a tanh and slice,
# and a small 256x64 @ 64x64 matmul with its sum.
SOURCE_PROGRAM = textwrap.dedent(
    """
    import sys
    import jax
    import jax.numpy as jnp


    def layer(w_big, w_small, x):
        h = jnp.tanh(x @ w_big)  # BIG_MATMUL
        y = h[:, :64] @ w_small
        return jnp.sum(y * 2.0)


    def main(logdir):
        step = jax.jit(layer)
        w_big = jnp.ones((512, 512))
        w_small = jnp.ones((64, 64))
        x = jnp.ones((256, 512))
        step(w_big, w_small, x).block_until_ready()  # compile outside the profile
        jax.profiler.start_trace(logdir)
        for _ in range(3):
            out = step(w_big, w_small, x)
        out.block_until_ready()
        jax.profiler.stop_trace()


    if __name__ == "__main__":
        main(sys.argv[1])
    """
)


def record_source_profile(folder: Path) -> tuple[Path, Path]:
    """Writes SOURCE_PROGRAM to `folder`/model.py and records it running from there; returns
    (the program file, the written .xplane.pb file)."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "model.py"
    program.write_text(SOURCE_PROGRAM)
    logdir = folder / "logs"
    return program, run_recording(logdir, str(program), str(logdir), cwd=folder)
