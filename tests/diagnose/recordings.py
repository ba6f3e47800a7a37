"""Real JAX CPU profiles with integration problems induced on purpose, for the diagnose tests.

Each scenario is a small training-like loop recorded with `jax.profiler.trace`; what a
real user would write (StepTraceAnnotation around the step) is used where marked.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from pathlib import Path

STEPS = 12
# Sleep in the data loader: far above the few-ms step so the loop is clearly input-bound.
LOADER_SLEEP_S = 0.02
# Shape schedule for the recompilation loop: a new batch size every RECOMPILE_EVERY steps.
RECOMPILE_EVERY = 3


SCENARIOS = (
    "healthy",
    "healthy_unannotated",
    "input_bound",
    "input_bound_unannotated",
    "recompile",
    "host_sync",
    "stall",
)
# The "stall" loop saves a pretend checkpoint in one step, after launching it: a slow step, not input.
STALL_STEP = 6
STALL_SLEEP_S = 0.08
# Host callbacks inside the jitted step (jax.debug.print, io_callback): one device-host round trip each.
CALLBACK_SCENARIOS = ("debug_print", "io_callback")
SCENARIOS = SCENARIOS + CALLBACK_SCENARIOS

# The healthy loop as a user would first try it: 30 steps of a few milliseconds of real compute each,
# recorded again and again to measure how often a healthy program gets a warning (false alarms).
HEALTHY_REPEATS = 10
HEALTHY_REPEAT_STEPS = 30


def _log_on_host(value):
    """What a user's io_callback logger does: take the value to the host and hand it back."""
    import numpy as np

    return np.asarray(value, dtype=np.float32)


def _model(learning_rate: float, scenario: str = "", width: int = 256):
    """A fresh jitted step; the learning rate differs per scenario so no scenario reuses another's
    compiled program from JAX's in-process caches (each profile then holds its own compilations)."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def train_step(w, x):
        y = jnp.tanh(x @ w)
        grad = x.T @ (y * (1 - y * y)) / x.shape[0]
        loss = jnp.mean(y * y)
        if scenario == "debug_print":
            jax.debug.print("loss {loss}", loss=loss)
        elif scenario == "io_callback":
            from jax.experimental import io_callback

            loss = io_callback(_log_on_host, jax.ShapeDtypeStruct((), jnp.float32), loss)
        return w - learning_rate * grad, loss

    w = jnp.ones((width, width), jnp.float32) * 0.01
    return jax, train_step, w


def record(scenario: str, logdir: Path) -> Path:
    """Runs one scenario under the profiler and returns the written .xplane.pb path."""
    import numpy as np

    jax, train_step, w = _model(0.01 * (1 + SCENARIOS.index(scenario)), scenario)
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((128, 256), dtype=np.float32) for _ in range(STEPS)]
    annotate = not scenario.endswith("_unannotated")
    with jax.profiler.trace(str(logdir)):
        for i in range(STEPS):
            ctx = jax.profiler.StepTraceAnnotation("train", step_num=i) if annotate else nullcontext()
            with ctx:
                if scenario.startswith("input_bound"):
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
                if scenario == "stall" and i == STALL_STEP:
                    with jax.profiler.TraceAnnotation("save_checkpoint"):
                        time.sleep(STALL_SLEEP_S)
        w.block_until_ready()
    found = sorted(Path(logdir).glob("plugins/profile/*/*.xplane.pb"))
    if not found:
        raise RuntimeError(f"jax.profiler.trace wrote no .xplane.pb under {logdir}")
    return found[-1]


def record_healthy(logdir: Path, run: int, steps: int = HEALTHY_REPEAT_STEPS) -> Path:
    """One healthy run: annotated steps of real compute (a 512-wide layer on a 512-row batch, a few
    milliseconds on a CPU core), the batch taken from memory, and the step waited for with
    `jax.block_until_ready` as timing loops do (so step time is compute time, and a shared machine's
    noise shows in it). `run` makes each program new."""
    import numpy as np

    jax, train_step, w = _model(0.001 * (1 + run), width=512)
    rng = np.random.default_rng(run)
    batches = [rng.standard_normal((512, 512), dtype=np.float32) for _ in range(steps)]
    with jax.profiler.trace(str(logdir)):
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                with jax.profiler.TraceAnnotation("load_batch"):
                    x = batches[i]
                w, _loss = train_step(w, x)
                jax.block_until_ready(w)
    found = sorted(Path(logdir).glob("plugins/profile/*/*.xplane.pb"))
    if not found:
        raise RuntimeError(f"jax.profiler.trace wrote no .xplane.pb under {logdir}")
    return found[-1]


def record_healthy_repeats_in_subprocess(root: Path, runs: int = HEALTHY_REPEATS) -> list[Path]:
    """Records the healthy loop `runs` times in one fresh interpreter; returns the .xplane.pb paths."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, __file__, str(root), "--healthy-repeats", str(runs)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"recording the healthy loop failed: {done.stderr[-2000:]}")
    return [Path(line.split("\t", 1)[1]) for line in done.stdout.splitlines() if "\t" in line]


def recompile_shapes() -> list[int]:
    """The distinct batch sizes the recompile scenario feeds, in order (one compilation each)."""
    return sorted({64 + 16 * (i // RECOMPILE_EVERY) for i in range(STEPS)})


def record_all_in_subprocess(root: Path) -> dict[str, Path]:
    """Records every scenario in one fresh interpreter (the test process never starts JAX or a
    profiler session itself) and returns scenario -> .xplane.pb path."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, __file__, str(root)], capture_output=True, text=True, timeout=300, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"recording the JAX scenarios failed: {done.stderr[-2000:]}")
    paths = dict(line.split("\t", 1) for line in done.stdout.splitlines() if "\t" in line)
    return {name: Path(path) for name, path in paths.items()}


if __name__ == "__main__":
    import sys

    root = Path(sys.argv[1])
    if sys.argv[2:3] == ["--healthy-repeats"]:
        for run in range(int(sys.argv[3])):
            print(f"healthy_{run}\t{record_healthy(root / f'healthy_{run}', run)}", flush=True)
    else:
        for name in SCENARIOS:
            print(f"{name}\t{record(name, root / name)}", flush=True)
