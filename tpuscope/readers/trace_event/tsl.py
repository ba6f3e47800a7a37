"""Chrome trace JSON as TSL writes it (JAX's `<host>.trace.json.gz`) or Perfetto exports it.

TSL (openxla/xla xla/tsl/profiler/convert/trace_events_to_json.cc) writes one process per XPlane
(its `process_name` is the plane name, e.g. `/device:TPU:0`, `/host:CPU`) and one thread per
XLine (`thread_name` e.g. `XLA Ops`, `python`), with the events' stats as string args. Those
names are XPlane's, so planes and tracks get XPlane's identities and dialect
(tpuscope.readers.xla_dialect). Any other trace-event JSON (a Perfetto export, a hand-written trace)
opens as host processes with one track per thread and no framework names.
"""

from __future__ import annotations

from tpuscope.model.stats import StatColumn
from tpuscope.model.trace import Trace
from tpuscope.model.vocabulary import NEUTRAL_DIALECT, ROLE_HOST, Dialect, PlaneIdentity
from tpuscope.readers.trace_event.build import TrackGroup
from tpuscope.readers.trace_event.parse import TraceEventFile
from tpuscope.readers.xla_dialect import XPLANE_DIALECT, plane_identity, track_kind

_GENERIC_HOST = PlaneIdentity(ROLE_HOST, "", None)


def is_tsl(file: TraceEventFile) -> bool:
    """Process names that are XPlane plane names."""
    return any(n.startswith(("/device:", "/host:")) for n in file.process_names.values())


class ChromeMapping:
    """TSL's XPlane-named processes, else generic processes and threads."""

    name = "chrome"

    def __init__(self, tsl: bool):
        self.tsl = tsl
        self.dialect: Dialect = XPLANE_DIALECT if tsl else NEUTRAL_DIALECT
        self._groups: dict[tuple[str, int | str], tuple[TrackGroup, ...]] = {}

    def host_name(self, file: TraceEventFile) -> str:
        name = file.path.name
        for suffix in (".gz", ".json", ".trace"):
            name = name.removesuffix(suffix)
        return name

    def plane_identity(self, file: TraceEventFile, pid: int | str, categories: set[str]) -> PlaneIdentity:
        name = file.process_names.get(pid, "")
        if self.tsl:
            return plane_identity(name)
        return _GENERIC_HOST

    def plane_name(self, file: TraceEventFile, pid: int | str, identity: PlaneIdentity) -> str:
        name = file.process_names.get(pid)
        if self.tsl and name:
            return name
        return f"{name} (pid {pid})" if name else f"pid {pid}"

    def plane_stats(self, file: TraceEventFile, identity: PlaneIdentity) -> dict[str, object]:
        return {}

    def groups(self, identity: PlaneIdentity) -> tuple[TrackGroup, ...]:
        return (TrackGroup("", track_kind(identity, "")),)

    def group_of(self, identity: PlaneIdentity, category: str) -> int:
        return 0

    def thread_name(self, file: TraceEventFile, pid: int | str, tid: int | str) -> str:
        return (file.thread_names.get((pid, tid)) or "").strip() or f"thread {tid}"

    def prepare(self, file: TraceEventFile) -> None:
        return None

    def name_stats(
        self, identity: PlaneIdentity, names: list[str], categories: list[str], trace: Trace
    ) -> dict[str, StatColumn]:
        return {}

    def retype(self, trace: Trace) -> None:
        """TSL: each track's kind from its XLine name (known only once threads are named)."""
        if not self.tsl:
            return
        for plane in trace.planes:
            for track in plane.tracks:
                track.kind = track_kind(plane.identity, track.name)
