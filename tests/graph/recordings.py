"""A real JAX CPU profile whose program calls library kernels through XLA custom calls with layout
constraints and output-to-operand aliasing (LAPACK's Cholesky and eigensolver FFI calls, the kind
Transformer Engine's FFI kernels are on GPU), recorded in a subprocess beside the program's text
as XLA itself prints it (`compiled.as_text()`, written to `compiled.txt` in the log folder)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.jax_recordings import run_recording

CUSTOM_CALL_PROGRAM = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import jax, jax.numpy as jnp
    logdir = Path(sys.argv[1])

    @jax.jit
    def solve(a):
        spd = a @ a.T + 4.0 * jnp.eye(a.shape[0])
        return jnp.linalg.cholesky(spd), jnp.linalg.eigh(a + a.T)[0]

    a = jnp.arange(64.0).reshape(8, 8) / 64.0
    (logdir / "compiled.txt").write_text(solve.lower(a).compile().as_text())
    jax.block_until_ready(solve(a))
    jax.profiler.start_trace(str(logdir))
    jax.block_until_ready(solve(a))
    jax.profiler.stop_trace()
    """
)


def record_custom_call_profile(logdir: Path) -> tuple[Path, str]:
    """Records CUSTOM_CALL_PROGRAM (`jit_solve`); returns its .xplane.pb file and XLA's text of it."""
    logdir.mkdir(parents=True, exist_ok=True)
    profile = run_recording(logdir, "-c", CUSTOM_CALL_PROGRAM, str(logdir))
    return profile, (logdir / "compiled.txt").read_text()
