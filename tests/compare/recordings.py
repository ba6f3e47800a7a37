"""Real JAX CPU pairs with a known cause of change, recorded for the compare tests.

Each scenario is a short training-like loop (a second or less) recorded with `jax.profiler.trace`,
with `StepTraceAnnotation` around each step as a user would write it. Pairs:

- `input_bound` (the loader sleeps inside the step) vs `prefetched` (the same loads run ahead in
  a pool of loader threads, off the step);
- `reshaping` (a new batch size every few steps: a compilation each time) vs `padded` (every
  batch padded to the largest size: one compilation);
- `plain` vs `extra_op` (the same step plus a sort of the weights, an op `plain` does not have);
- `healthy_0` ... `healthy_{HEALTHY_RUNS-1}`: the same program recorded several times;
- `machine_base` vs `machine_slow`: the healthy program, each in its own interpreter pinned to one
  CPU, the second while `LOAD_PROCESSES` busy loops share that CPU: the same programs on a slower
  machine (a real slowdown of every op, not an edited trace);
- `machine_base` vs `small_extra`: the healthy program plus a small sort (`SMALL_SORT_SIZE`), a code
  change of a few tens of percent, below the host CPU's noise floor.

Every step ends by reading its loss on the host (as a loop that logs it does), so host step
annotations time the device work and not only the dispatch.
"""

from __future__ import annotations

import ast
import os
import time
from pathlib import Path

STEPS = 16
# The loader's sleep inside the step: far above the ~1 ms step, so the loop is clearly input-bound.
LOADER_SLEEP_S = 0.012
# Loader threads of `prefetched`: enough that loading keeps ahead of the step.
LOADER_THREADS = 16
# `reshaping`: a new batch size every RESHAPE_EVERY steps (one compilation each).
RESHAPE_EVERY = 4
BASE_ROWS = 64
ROW_GROWTH = 16
FEATURES = 256
# `extra_op` sorts this many values per step: several times the plain step's device time.
SORT_SIZE = 1 << 16
# `small_extra` sorts this many values per step: a share of the healthy step's device time well
# below NOISE_FLOOR_HOST_CPU_PERCENT.
SMALL_SORT_SIZE = 1 << 13
HEALTHY_RUNS = 5
# The healthy runs' steps: each run's median over this many steps moves little when a few of them are
# slowed by whatever else the machine runs.
HEALTHY_STEPS = 64
# The healthy program's batch: a step of ~10 ms of compute, well above per-step overheads and longer
# than a scheduler's time slice (EEVDF's is a few ms), so the busy loops of `machine_slow` slow its
# ops and not only the host's wake-ups (at 1024 rows, 2.5 ms, the ops ran at 1.0x under the load).
HEALTHY_ROWS = 4096
WARMUP_STEPS = 4
# One XLA:CPU thread: a multi-threaded step on a machine shared with other jobs is slowed by whatever
# else runs, by a different factor in each recording; one thread keeps the recordings comparable.
SINGLE_THREADED_XLA_CPU = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"

PAIRS = {
    "input": ("input_bound", "prefetched"),
    "compile": ("reshaping", "padded"),
    "extra_op": ("plain", "extra_op"),
}
PAIR_SCENARIOS = ("input_bound", "prefetched", "reshaping", "padded", "plain", "extra_op")
# The healthy program recorded alone (`machine_base`), on a loaded CPU (`machine_slow`), and with a
# small extra op (`small_extra`), one interpreter each (see record_machine_pairs).
MACHINE_SCENARIOS = ("machine_base", "machine_slow", "small_extra")
SCENARIOS = PAIR_SCENARIOS + tuple(f"healthy_{k}" for k in range(HEALTHY_RUNS)) + MACHINE_SCENARIOS
# Busy loops sharing `machine_slow`'s CPU: it gets about 1 / (LOAD_PROCESSES + 1) of it.
LOAD_PROCESSES = 2


def _rows(step: int) -> int:
    return BASE_ROWS + ROW_GROWTH * (step // RESHAPE_EVERY)


def _make_step(jax, jnp, learning_rate: float, sort_size: int):
    """A fresh jitted step (sorting `sort_size` values too, if any); its own learning rate keeps JAX's
    caches from sharing compilations."""

    @jax.jit
    def train_step(w, x):
        y = jnp.tanh(x @ w)
        grad = x.T @ (y * (1 - y * y)) / x.shape[0]
        loss = jnp.mean(y * y)
        if sort_size:
            ranked = jnp.sort(jnp.tile(w.ravel(), max(sort_size // w.size, 1))[:sort_size])
            loss = loss + 1e-9 * ranked[sort_size // 2]
        return w - learning_rate * grad, loss

    return train_step


def record(scenario: str, logdir: Path, before_loop=None, after_loop=None) -> Path:
    """Runs one scenario under the profiler and returns the written .xplane.pb path.

    `before_loop()` is called before the profile starts (then a few unprofiled steps warm the
    program up again) and `after_loop()` inside it, after the last step.
    """
    from concurrent.futures import ThreadPoolExecutor

    import jax
    import jax.numpy as jnp
    import numpy as np

    healthy = scenario.startswith("healthy") or scenario in MACHINE_SCENARIOS
    rate = 0.01 * (1 + (SCENARIOS.index(scenario) if not healthy else len(SCENARIOS)))
    sort_size = {"extra_op": SORT_SIZE, "small_extra": SMALL_SORT_SIZE}.get(scenario, 0)
    train_step = _make_step(jax, jnp, rate, sort_size)
    rng = np.random.default_rng(0)
    rows = HEALTHY_ROWS if healthy else _rows(STEPS - 1)
    steps = HEALTHY_STEPS if healthy else STEPS
    batches = [rng.standard_normal((rows, FEATURES), dtype=np.float32) for _ in range(steps)]
    w = jnp.ones((FEATURES, FEATURES), jnp.float32) * 0.01
    if scenario not in ("reshaping", "padded"):  # compiled before the profile, as after a warm-up
        float(train_step(w, batches[0] if healthy else batches[0][:BASE_ROWS])[1])

    def load(i: int):
        with jax.profiler.TraceAnnotation("load_batch"):
            time.sleep(LOADER_SLEEP_S)
            return batches[i][:BASE_ROWS]

    pool = ThreadPoolExecutor(LOADER_THREADS)
    if before_loop is not None:
        before_loop()
        for i in range(WARMUP_STEPS):  # caches and pages warm again after the wait, unprofiled
            float(train_step(w, batches[i])[1])
    # `prefetched` loads ahead in its loader threads, before the loop, as a prefetching pipeline with
    # a full buffer does.
    ahead = [pool.submit(load, i) for i in range(STEPS)] if scenario == "prefetched" else []
    for batch in ahead:
        batch.result()
    with jax.profiler.trace(str(logdir)):
        cpu_began, wall_began = time.process_time(), time.perf_counter()
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                if scenario == "input_bound":
                    x = load(i)
                elif scenario == "prefetched":
                    x = ahead[i].result()
                elif scenario == "reshaping":
                    x = batches[i][: _rows(i)]
                elif scenario == "padded":
                    x = batches[i]  # every batch at the largest size: one compilation
                elif healthy:
                    x = batches[i]
                else:
                    x = batches[i][:BASE_ROWS]
                w, loss = train_step(w, x)
                float(loss)
        # The CPU time of the loop and its wall time: runs of one program recorded together that got
        # very different shares of a CPU, or needed very different CPU time for the same steps, were
        # slowed unequally by the machine (see loop_times()).
        loop = (time.process_time() - cpu_began, time.perf_counter() - wall_began)
        if after_loop is not None:
            after_loop()
    pool.shutdown()
    (Path(logdir) / LOOP_TIMES_FILE).write_text(repr(loop))
    found = sorted(Path(logdir).glob("plugins/profile/*/*.xplane.pb"))
    if not found:
        raise RuntimeError(f"jax.profiler.trace wrote no .xplane.pb under {logdir}")
    return found[-1]


def _environment() -> dict[str, str]:
    return {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": SINGLE_THREADED_XLA_CPU}


def _paths(stdout: str) -> dict[str, Path]:
    return {
        name: Path(path)
        for name, path in (line.split("\t", 1) for line in stdout.splitlines() if "\t" in line)
    }


def _paths_of(process) -> dict[str, Path]:
    out, err = process.communicate(timeout=300)
    if process.returncode != 0:
        raise RuntimeError(f"recording JAX compare scenarios failed: {err[-2000:]}")
    return _paths(out)


def record_all_in_subprocess(root: Path) -> dict[str, Path]:
    """Records every scenario (the test process never starts JAX) and returns scenario -> path.

    The cause pairs are recorded one after the other in one interpreter. The healthy runs are one
    interpreter each, as a user's reruns would be, all at the same time (see
    `record_healthy_in_subprocesses`).
    """
    root.mkdir(parents=True, exist_ok=True)
    paths = _paths_of(_start(root, *PAIR_SCENARIOS))
    paths.update(record_healthy_in_subprocesses(root))
    return paths


def _start(root: Path, *scenarios: str):
    import subprocess
    import sys

    command = [sys.executable, __file__, str(root), *scenarios]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_environment()
    )


def record_healthy_in_subprocesses(root: Path) -> dict[str, Path]:
    """Records `healthy_0` ... in one interpreter each, all at the same time, and writes the machine's
    load from before they started to `root/load`.

    Every run compiles and starts its profile first; then all run their loops at once (each XLA:CPU
    on one thread) and write their profiles after the last loop. Running them together is the
    finest interleaving there is: a slow spell of a shared machine slows every run alike, where
    runs taking turns each meet a different spell. On this project's 2-core virtual machines,
    shared with other jobs: healthy runs recorded a second or more apart differed by up to 5x, by
    up to 60% when one interpreter recorded all of them (its first profiler session is slower),
    and taking turns, by up to 34% in 80 pairs, while in CI one came out 1.7x slower than another;
    under a busy loop that switched on and off every 0.3 s, 7 of 40 pairs of 16-step runs taking
    turns came out changed (up to 123% apart), 1 of 40 with 64 steps (58%), and 0 of 40 running
    together (at most 32% apart). Together and without the busy loop, 80 pairs came out at most 40%
    apart. See compare_stats.NOISE_FLOOR_HOST_CPU_PERCENT.
    """
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    root.mkdir(parents=True, exist_ok=True)
    healthy = [_start(root, f"healthy_{k}") for k in range(HEALTHY_RUNS)]
    deadline = time.monotonic() + 300
    while not all((root / f"healthy_{k}.ready").exists() for k in range(HEALTHY_RUNS)):
        if time.monotonic() > deadline or any(p.poll() is not None for p in healthy):
            break
        time.sleep(0.05)
    if any(p.poll() not in (None, 0) for p in healthy):
        for process in healthy:
            process.kill()
    (root / "go").touch()
    paths: dict[str, Path] = {}
    for process in healthy:
        paths.update(_paths_of(process))
    (root / "load").write_text(repr(load_before))
    return paths


LOOP_TIMES_FILE = "loop_times"


def loop_times(paths: dict[str, Path], scenarios: list[str]) -> list[tuple[float, float]]:
    """Each run's (process CPU time, wall time) of its profiled loop, in seconds."""
    return [ast.literal_eval((paths[name].parents[3] / LOOP_TIMES_FILE).read_text()) for name in scenarios]


def load_before_healthy_runs(paths: dict[str, Path]) -> float:
    """The machine's 1-minute load average just before the healthy runs were recorded: other work's."""
    root = paths["healthy_0"].parents[4]  # <root>/healthy_0/plugins/profile/<run>/<host>.xplane.pb
    return float((root / "load").read_text())


def _start_pinned(root: Path, scenario: str, cpu: int | None):
    """One scenario in its own interpreter, on CPU `cpu` alone when the platform can pin."""
    import subprocess
    import sys

    pin = f"import os; os.sched_setaffinity(0, {{{cpu}}}); " if cpu is not None else ""
    run = f"{pin}import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
    command = [sys.executable, "-c", run, __file__, str(root), scenario]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_environment()
    )


def _busy_loops(cpu: int | None, count: int) -> list:
    """`count` processes spinning on CPU `cpu` (any CPU when None): other work loading the machine."""
    import subprocess
    import sys

    pin = f"import os; os.sched_setaffinity(0, {{{cpu}}})\n" if cpu is not None else ""
    return [subprocess.Popen([sys.executable, "-c", f"{pin}while True:\n    pass"]) for _ in range(count)]


def record_machine_pairs(root: Path) -> dict[str, Path]:
    """Records `machine_base`, `small_extra` and `machine_slow`, one after the other, one interpreter
    each, all pinned to one CPU; `machine_slow` with `LOAD_PROCESSES` busy loops pinned beside it (on
    platforms that cannot pin, as many busy loops as CPUs and more)."""
    root.mkdir(parents=True, exist_ok=True)
    cpu = max(os.sched_getaffinity(0)) if hasattr(os, "sched_setaffinity") else None
    paths = _paths_of(_start_pinned(root, "machine_base", cpu))
    paths.update(_paths_of(_start_pinned(root, "small_extra", cpu)))
    loops = _busy_loops(cpu, LOAD_PROCESSES if cpu is not None else 2 * (os.cpu_count() or 1))
    try:
        time.sleep(0.2)  # the loops are running before the program starts
        paths.update(_paths_of(_start_pinned(root, "machine_slow", cpu)))
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    return paths


# A run that waits longer than this for its turn gives up: the run before it has died.
TURN_TIMEOUT_S = 120.0


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + TURN_TIMEOUT_S
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"waited {TURN_TIMEOUT_S:.0f} s for {path.name}: the run before this one died")
        time.sleep(0.0005)


def _together(root: Path, k: int) -> tuple:
    """(before_loop, after_loop) of healthy run k: start when every run is ready; write the profile
    only after every run's loop (writing a profile is heavy)."""

    def before() -> None:
        (root / f"healthy_{k}.ready").touch()
        _wait_for(root / "go")

    def after() -> None:
        (root / f"healthy_{k}.done").touch()
        for j in range(HEALTHY_RUNS):
            _wait_for(root / f"healthy_{j}.done")

    return before, after


if __name__ == "__main__":
    import sys

    root = Path(sys.argv[1])
    for name in sys.argv[2:]:
        hooks = _together(root, int(name.split("_")[1])) if name.startswith("healthy_") else (None, None)
        print(f"{name}\t{record(name, root / name, *hooks)}", flush=True)
