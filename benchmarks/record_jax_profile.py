"""Records a real JAX CPU profile of about N events, for the start-time benchmark.

    python benchmarks/record_jax_profile.py [--events 1000000] [--out DIR]

A jitted 8-layer MLP training step (forward, grad, update) runs under `jax.profiler` with a
`StepTraceAnnotation` per step; each step leaves about 130 events (the Python step annotation,
PjRt's execute path and one XLA:CPU thunk per op), so the step count is N / 130. The result is
what a user's own profile looks like: host threads only, real names, real stats, written by
JAX's own profiler (not by our generator).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
from pathlib import Path

DEFAULT_DIR = Path(__file__).resolve().parent / "data"
EVENTS_PER_STEP = 130  # measured on jax 0.8 / XLA:CPU for the program below

PROGRAM = textwrap.dedent(
    """
    import sys
    import jax, jax.numpy as jnp
    logdir, steps = sys.argv[1], int(sys.argv[2])

    @jax.jit
    def train_step(weights, x):
        def loss_fn(weights):
            h = x
            for layer in weights:
                h = jnp.tanh(h @ layer)
            return jnp.mean(h ** 2)
        loss, grads = jax.value_and_grad(loss_fn)(weights)
        return [w - 0.01 * g for w, g in zip(weights, grads)], loss

    weights = [jnp.ones((32, 32)) * 0.01 for _ in range(8)]
    x = jnp.ones((16, 32))
    weights, _ = train_step(weights, x)  # compiled outside the profile
    jax.profiler.start_trace(logdir)
    for step in range(steps):
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            weights, loss = train_step(weights, x)
    loss.block_until_ready()
    jax.profiler.stop_trace()
    """
)


def default_path(n_events: int) -> Path:
    label = f"{n_events // 1_000_000}M" if n_events >= 1_000_000 else f"{n_events // 1000}k"
    return DEFAULT_DIR / f"jax_cpu_{label}"


def record(n_events: int, logdir: Path) -> Path:
    """Records the profile into logdir (a JAX logdir); returns the .xplane.pb file."""
    steps = -(-n_events // EVENTS_PER_STEP)
    logdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    subprocess.run(
        [sys.executable, "-c", PROGRAM, str(logdir), str(steps)], check=True, env=env, timeout=1200
    )
    found = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
    if not found:
        raise RuntimeError(f"JAX wrote no .xplane.pb under {logdir}")
    return found[-1]


def find_or_record(n_events: int) -> Path:
    logdir = default_path(n_events)
    found = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
    return found[-1] if found else record(n_events, logdir)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, help="logdir (default benchmarks/data/jax_cpu_<N>)")
    args = parser.parse_args()
    path = record(args.events, args.out or default_path(args.events))
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
