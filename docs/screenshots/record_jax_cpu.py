"""Records the JAX CPU profile shown in jax_cpu_timeline.png (run with JAX_PLATFORMS=cpu).

    python docs/screenshots/record_jax_cpu.py LOGDIR
    tpuscope screenshot LOGDIR docs/screenshots/jax_cpu_timeline.png

A small MLP trained for 12 annotated steps; each step reads the loss back on
the host (a host sync), as many real training loops do.
"""

import sys

import jax
import jax.numpy as jnp


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"])
    h = jnp.tanh(h @ params["w2"])
    return jnp.mean((h @ params["w3"] - y) ** 2)


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), loss


def main(logdir: str) -> None:
    key = jax.random.PRNGKey(0)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    params = {
        "w1": jax.random.normal(k1, (512, 1024)) * 0.02,
        "w2": jax.random.normal(k2, (1024, 1024)) * 0.02,
        "w3": jax.random.normal(k3, (1024, 16)) * 0.02,
    }
    x = jax.random.normal(k4, (256, 512))
    y = jnp.zeros((256, 16))
    params, loss = train_step(params, x, y)  # compile before profiling
    jax.profiler.start_trace(logdir)
    for step in range(12):
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            params, loss = train_step(params, x, y)
            float(loss)  # host sync: the host waits for the device every step
    jax.profiler.stop_trace()


if __name__ == "__main__":
    main(sys.argv[1])
