"""A small JAX program that runs a profiler server, started by the capture tests as a subprocess.

Usage: workload.py PORT MODE [SECONDS]
  train          a jitted training loop, forever
  idle           the server only; the program does nothing
  exit-after S   trains, then exits abruptly S seconds after it is ready
Prints READY once the server listens and the step is compiled.
"""

import os
import sys
import time

import jax
import jax.numpy as jnp

port, mode = int(sys.argv[1]), sys.argv[2]
lifetime_s = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
server = jax.profiler.start_server(port)  # keep the reference: the server dies with it


@jax.jit
def train_step(weights, batch, targets):
    def loss(w):
        return jnp.mean((jnp.tanh(batch @ w) - targets) ** 2)

    return weights - 0.05 * jax.grad(loss)(weights)


key = jax.random.PRNGKey(0)
weights = jax.random.normal(key, (64, 16))
batch = jax.random.normal(key, (128, 64))
targets = jnp.zeros((128, 16))
weights = train_step(weights, batch, targets).block_until_ready()
print("READY", flush=True)
ready_at = time.monotonic()
step = 0
while True:
    if mode == "idle":
        time.sleep(0.2)
        continue
    if mode == "exit-after" and time.monotonic() - ready_at > lifetime_s:
        os._exit(3)  # dies abruptly, as a crashed program would
    with jax.profiler.StepTraceAnnotation("train", step_num=step):
        weights = train_step(weights, batch, targets).block_until_ready()
    step += 1
    time.sleep(0.002)
