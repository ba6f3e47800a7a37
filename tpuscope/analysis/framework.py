"""Which framework wrote a profile: JAX, TensorFlow, PyTorch/XLA or PyTorch.

Advice depends on it (`jax.jit` static arguments vs `torch_xla.sync()` vs `tf.data`). The clues
are the names each framework's runtime puts on the host threads and the version stats some write
on their planes; which names and stats those are is the reader's (its Dialect's
`framework_clues`), so this module only weighs them.
"""

from __future__ import annotations

from tpuscope.analysis.host_names import HostNameIndex
from tpuscope.model.records import record
from tpuscope.model.trace import Trace
from tpuscope.model.vocabulary import JAX, PYTORCH, PYTORCH_XLA, TENSORFLOW

__all__ = ["JAX", "PYTORCH", "PYTORCH_XLA", "TENSORFLOW", "UNKNOWN", "Framework", "detect_framework"]

UNKNOWN = "unknown"


@record(frozen=True)
class Framework:
    """The detected framework, and the clue that decided it (shown to the user)."""

    name: str
    evidence: str

    def __str__(self) -> str:
        return self.name


def detect_framework(trace: Trace, host_names: HostNameIndex | None = None) -> Framework:
    """Decisive clues first, then version stats, then the framework with most clue events.

    Frameworks are named by the reader's dialect: e.g. PyTorch/XLA before JAX, because
    PyTorch/XLA programs may also call JAX (torchax), and its own names never appear in JAX ones.
    """
    dialect = trace.dialect
    host_names = host_names if host_names is not None else HostNameIndex(trace)
    counts = {clue.framework: _count_events(host_names, clue.pattern) for clue in dialect.framework_clues}
    for clue in dialect.framework_clues:
        if clue.decisive and counts[clue.framework]:
            return Framework(clue.framework, f"{counts[clue.framework]} {clue.examples}")
    for plane in trace.planes:
        for stat, name in dialect.framework_version_stats:
            if stat in plane.stats:
                return Framework(name, f"{plane.name} stat {stat} = {plane.stats[stat]}")
    counted = [clue for clue in dialect.framework_clues if not clue.decisive]
    if counted:
        best = max(counted, key=lambda clue: counts[clue.framework])
        if counts[best.framework]:
            what = f"{counts[best.framework]} {best.framework} runtime events ({best.examples})"
            return Framework(best.framework, what)
    for name, pattern in dialect.framework_program_names:
        module_names = trace.strings.ids_matching(pattern, regex=True)
        if len(module_names):
            return Framework(name, f"program names such as {trace.strings[int(module_names[0])]}")
    if dialect.default_framework:
        return Framework(dialect.default_framework, f"a {dialect.name} trace, which only it writes")
    return Framework(UNKNOWN, "no framework-specific event names or stats in the profile")


def _count_events(host_names: HostNameIndex, pattern: str) -> int:
    """Host events whose name the pattern finds."""
    return int(sum(len(idx) for _, idx in host_names.matching(pattern)))
