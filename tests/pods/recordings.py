"""Real multi-process JAX runs on the CPU, recorded as a pod: one profile per process, one run folder.

Each process joins `jax.distributed` (gloo collectives over 127.0.0.1) and runs a small training-like
loop whose every step ends in a cross-process all-gather, so the processes move in lockstep: a
process that is late makes the others wait inside the collective. Each process profiles into its
own folder (they share one hostname, so their files would overwrite each other); the files are then
gathered into one run folder as `worker<i>.xplane.pb`, the layout of a pod's run folder.

Scenarios:
- `straggler`: process STRAGGLER sleeps STRAGGLER_SLEEP_S in its data loader every step;
- `host_work`: process STRAGGLER sleeps as long at the end of every step, logging metrics (host work);
- `balanced`: every process does the same work (no straggler);
- `collective_heavy`: every process does the same small compute and a large all-gather;
- `input_bound`: every process sleeps STRAGGLER_SLEEP_S in its data loader every step, alike;
- `healthy`: every process does the same compute-heavy work with a small all-reduce (run with
  HEALTHY_PROCESSES processes, one per core of a small machine, so no process waits for a core);
- `uneven_steps`: the balanced loop, but the last process starts profiling LATE_START_STEPS steps late
  (its profile holds fewer steps than the others').
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

SCENARIOS = (
    "straggler",
    "host_work",
    "balanced",
    "collective_heavy",
    "input_bound",
    "healthy",
    "uneven_steps",
)
PROCESSES = 4
STEPS = 12
STRAGGLER = 2  # the process that sleeps in its data loader
STRAGGLER_SLEEP_S = 0.03
LATE_START_STEPS = 4
# (features, rows per process, layers): the weights are features x features, so the all-reduce sends
# that much; rows and layers set the compute.
SHAPE = (128, 2048, 1)
HEAVY_SHAPE = (1024, 8, 1)
HEALTHY_SHAPE = (256, 4096, 2)
HEALTHY_PROCESSES = 2
RECORD_TIMEOUT_S = 180


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(scenario: str, process_id: int, processes: int, port: int, logdir: str) -> None:
    """One process of the pod (runs in its own interpreter): a data-parallel training loop.

    The weights are replicated and the batch sharded over the processes' devices, so XLA sums the
    gradients with an all-reduce across processes inside the step program, as data-parallel
    training does.
    """
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}", num_processes=processes, process_id=process_id
    )
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    features, rows, layers = {"collective_heavy": HEAVY_SHAPE, "healthy": HEALTHY_SHAPE}.get(scenario, SHAPE)
    mesh = Mesh(np.array(jax.devices()), ("data",))
    replicated = NamedSharding(mesh, PartitionSpec())
    sharded = NamedSharding(mesh, PartitionSpec("data"))

    def loss_of(w, x):
        for _ in range(layers):  # the same weights in every layer: more compute, the same all-reduce
            x = jnp.tanh(x @ w)
        return jnp.mean(x**2)

    @jax.jit
    def train_step(w, x):
        loss, grad = jax.value_and_grad(loss_of)(w, x)
        return w - 0.01 * grad, loss

    w = jax.jit(lambda: jnp.full((features, features), 0.01, jnp.float32), out_shardings=replicated)()
    local = np.random.default_rng(process_id).standard_normal((rows, features), dtype=np.float32)
    x = jax.make_array_from_single_device_arrays(
        (rows * processes, features), sharded, [jax.device_put(local, jax.local_devices()[0])]
    )
    w, loss = train_step(w, x)  # compile and run once outside the profile
    jax.block_until_ready(w)
    late_start = LATE_START_STEPS if scenario == "uneven_steps" and process_id == processes - 1 else 0
    if not late_start:
        jax.profiler.start_trace(logdir)
    for step in range(STEPS):
        if late_start and step == late_start:
            jax.profiler.start_trace(logdir)
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            with jax.profiler.TraceAnnotation("load_batch"):
                if (scenario == "straggler" and process_id == STRAGGLER) or scenario == "input_bound":
                    time.sleep(STRAGGLER_SLEEP_S)
                batch = x
            w, loss = train_step(w, batch)
            jax.block_until_ready(w)
            if scenario == "host_work" and process_id == STRAGGLER:
                with jax.profiler.TraceAnnotation("log_metrics"):
                    time.sleep(STRAGGLER_SLEEP_S)
    jax.profiler.stop_trace()
    jax.distributed.shutdown()


def record_pod(scenario: str, root: Path, processes: int | None = None) -> Path:
    """Runs `processes` processes of `scenario` (default PROCESSES; HEALTHY_PROCESSES for `healthy`)
    and returns the run folder holding worker<i>.xplane.pb."""
    processes = processes or (HEALTHY_PROCESSES if scenario == "healthy" else PROCESSES)
    port = _free_port()
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=1"}
    logdirs = [root / f"process{i}" for i in range(processes)]
    started = [
        subprocess.Popen(
            [sys.executable, __file__, scenario, str(i), str(processes), str(port), str(logdirs[i])],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(processes)
    ]
    failures = []
    deadline = time.monotonic() + RECORD_TIMEOUT_S
    for i, proc in enumerate(started):
        try:
            _, err = proc.communicate(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            for other in started:
                other.kill()
            raise RuntimeError(f"the {scenario} pod run did not finish in {RECORD_TIMEOUT_S} s") from None
        if proc.returncode != 0:
            failures.append(f"process {i}: {err[-1500:]}")
    if failures:
        raise RuntimeError(f"the {scenario} pod run failed: " + "\n".join(failures))
    run = root / "logdir" / "plugins" / "profile" / scenario
    run.mkdir(parents=True)
    for i, logdir in enumerate(logdirs):
        written = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
        if not written:
            raise RuntimeError(f"process {i} of the {scenario} pod run wrote no .xplane.pb under {logdir}")
        shutil.copyfile(written[-1], run / f"worker{i}.xplane.pb")
    return run


if __name__ == "__main__":
    worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
