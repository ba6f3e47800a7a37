"""Records a JAX CPU profile of one jitted training step of an N-layer MLP (a program with many buffers).

    JAX_PLATFORMS=cpu python benchmarks/record_jax_mlp.py LOGDIR LAYERS

Used by bench_memory.py: `jit_train_step` has about 17 logical buffers per layer (weights,
biases, gradients, momenta, activations), so 64 layers give a program of ~1,100 buffers.
"""

import sys

import jax
import jax.numpy as jnp

logdir = sys.argv[1]
layers = int(sys.argv[2])


def init(key):
    keys = jax.random.split(key, layers)
    return [(jax.random.normal(k, (256, 256)) * 0.05, jnp.zeros(256)) for k in keys]


def loss(params, x):
    for w, b in params:
        x = jnp.tanh(x @ w + b)
    return jnp.mean(x**2)


@jax.jit
def train_step(params, opt, x):
    g = jax.grad(loss)(params, x)
    m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, opt, g)
    params = jax.tree_util.tree_map(lambda p, m: p - 0.01 * m, params, m)
    return params, m


params = init(jax.random.PRNGKey(0))
opt = jax.tree_util.tree_map(jnp.zeros_like, params)
x = jnp.ones((128, 256))
params, opt = train_step(params, opt, x)
jax.profiler.start_trace(logdir)
params, opt = train_step(params, opt, x)
jax.block_until_ready(params)
jax.profiler.stop_trace()
