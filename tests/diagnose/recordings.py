"""Real JAX CPU profiles with integration problems induced on purpose, for the diagnose tests.

Each scenario is a small training-like loop recorded with `jax.profiler.trace`; what a
real user would write (StepTraceAnnotation around the step) is used where marked.
"""

from __future__ import annotations

import time
from pathlib import Path

STEPS = 12
# Sleep in the data loader: far above the few-ms step so the loop is clearly input-bound.
LOADER_SLEEP_S = 0.02
# Shape schedule for the recompilation loop: a new batch size every RECOMPILE_EVERY steps.
RECOMPILE_EVERY = 3


def _model():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def train_step(w, x):
        y = jnp.tanh(x @ w)
        grad = x.T @ (y * (1 - y * y)) / x.shape[0]
        return w - 0.01 * grad, jnp.mean(y * y)

    w = jnp.ones((256, 256), jnp.float32) * 0.01
    return jax, train_step, w


def record(scenario: str, logdir: Path) -> Path:
    """Runs one scenario under the profiler and returns the written .xplane.pb path."""
    import numpy as np

    jax, train_step, w = _model()
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((128, 256), dtype=np.float32) for _ in range(STEPS)]
    annotate = scenario != "healthy_unannotated"
    with jax.profiler.trace(str(logdir)):
        for i in range(STEPS):
            ctx = jax.profiler.StepTraceAnnotation("train", step_num=i) if annotate else _null()
            with ctx:
                if scenario == "input_bound":
                    with jax.profiler.TraceAnnotation("load_batch"):
                        time.sleep(LOADER_SLEEP_S)
                        x = batches[i]
                elif scenario == "recompile":
                    rows = 64 + 16 * (i // RECOMPILE_EVERY)
                    x = batches[i][:rows]
                else:
                    x = batches[i]
                w, loss = train_step(w, x)
                if scenario == "host_sync":
                    float(loss)
        w.block_until_ready()
    found = sorted(Path(logdir).glob("plugins/profile/*/*.xplane.pb"))
    return found[-1]


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    import sys

    print(record(sys.argv[1], Path(sys.argv[2])))
