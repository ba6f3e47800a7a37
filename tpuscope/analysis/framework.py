"""Which framework wrote a profile: JAX, TensorFlow or PyTorch/XLA.

Advice depends on it (`jax.jit` static arguments vs `torch_xla.sync()` vs
`tf.data`). The clues are the names each framework's runtime puts on the host
threads, and the version stats JAX writes on `/host:metadata`; the heuristic is
the one suggested in /work/shared/research/integration.md section 2.6.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tpuscope.analysis.host_names import HostNameIndex
from tpuscope.model.trace import Trace

JAX = "JAX"
TENSORFLOW = "TensorFlow"
PYTORCH_XLA = "PyTorch/XLA"
UNKNOWN = "unknown"

# Event-name clues per framework (integration.md 2.3-2.6; the TF names are TF runtime TraceMe names).
_CLUES: dict[str, re.Pattern] = {
    PYTORCH_XLA: re.compile(
        r"^(SyncTensorsGraph|StepMarker|XLAGraphExecutor::|PjRtComputationClient::|IfrtComputationClient::"
        r"|CollectSyncTensors|aten::)"
    ),
    JAX: re.compile(r"^(PjitFunction\(|ExecuteReplicated\.__call__|np\.asarray\(jax\.Array\)|shard_args$)"),
    TENSORFLOW: re.compile(
        r"^(EagerExecute|EagerKernelExecute|IteratorGetNext|Iterator::|TraceContext|FunctionRun$"
        r"|ExecutorState::Process|TFE_Py_Execute|__inference_)"
    ),
}
# Plane stats that name the framework outright (programmatic JAX traces write these; integration.md 2.3).
_VERSION_STATS = {"jax_version": JAX, "torch_xla_version": PYTORCH_XLA, "tensorflow_version": TENSORFLOW}


@dataclass(frozen=True)
class Framework:
    """The detected framework, and the clue that decided it (shown to the user)."""

    name: str
    evidence: str

    def __str__(self) -> str:
        return self.name


def detect_framework(trace: Trace, host_names: HostNameIndex | None = None) -> Framework:
    """Scores each framework by how many host events carry its names; version stats break ties.

    PyTorch/XLA is checked before JAX because PyTorch/XLA programs may also call JAX (torchax),
    and its own names never appear in plain JAX programs.
    """
    host_names = host_names if host_names is not None else HostNameIndex(trace)
    counts = {name: _count_events(host_names, pattern) for name, pattern in _CLUES.items()}
    if counts[PYTORCH_XLA]:
        return Framework(PYTORCH_XLA, f"{counts[PYTORCH_XLA]} PyTorch/XLA runtime events")
    for plane in trace.planes:
        for stat, name in _VERSION_STATS.items():
            if stat in plane.stats:
                return Framework(name, f"{plane.name} stat {stat} = {plane.stats[stat]}")
    best = max((JAX, TENSORFLOW), key=lambda n: counts[n])
    if counts[best]:
        examples = "PjitFunction(...)" if best == JAX else "EagerExecute, IteratorGetNext, ..."
        return Framework(best, f"{counts[best]} {best} runtime events ({examples})")
    module_names = trace.strings.ids_matching(r"^jit_\w+\(\d+\)$", regex=True)
    if len(module_names):
        return Framework(JAX, f"program names such as {trace.strings[int(module_names[0])]}")
    return Framework(UNKNOWN, "no framework-specific event names or stats in the profile")


def _count_events(host_names: HostNameIndex, pattern: re.Pattern) -> int:
    """Host events whose name the pattern finds (`pattern.flags` apply)."""
    return int(sum(len(idx) for _, idx in host_names.matching(pattern)))
