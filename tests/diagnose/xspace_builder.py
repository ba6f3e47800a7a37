"""A small XSpace writer for rules whose pattern no real profile here has (generated data).

The planes, lines, op names, HLO text and stats follow the real TPU v6e sample
(../shared/traces/tpu): `/device:TPU:i` planes with that sample's plane stats, ops whose event
metadata is named by the full HLO instruction text and displayed by the short op name, carrying
`hlo_category`, `flops`, `bytes_accessed`, `program_id`, and a `Steps` / `XLA Modules` line
over them. Tests that use it say that their data is generated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.generate_xspace import TPU_V6E_PLANE_STATS
from tpuscope.readers.xplane import xplane_pb2 as pb

BASE_NS = 1_741_700_000_000_000_000  # a 2025 wall-clock time in ns, like real files
PROGRAM_ID = 12190760917235803885  # the TPU sample's jit_f program id


@dataclass
class Op:
    """One HLO op kind: `hlo` is its instruction text, as the real sample's metadata names carry it."""

    name: str
    hlo: str
    category: str
    flops: int = 0
    bytes_accessed: int = 0
    source: str = ""  # `file:line`, as XLA:TPU writes the `source` stat on op metadata


class PlaneBuilder:
    def __init__(self, space: pb.XSpace, plane_id: int, name: str, stats: dict | None = None):
        self.plane = space.planes.add(id=plane_id, name=name)
        self._stat_ids: dict[str, int] = {}
        self._meta_ids: dict[str, int] = {}
        for key, value in (stats or {}).items():
            self._add_stat(self.plane, key, value)

    def _stat_id(self, name: str) -> int:
        if name not in self._stat_ids:
            sid = len(self._stat_ids) + 1
            self.plane.stat_metadata[sid].id = sid
            self.plane.stat_metadata[sid].name = name
            self._stat_ids[name] = sid
        return self._stat_ids[name]

    def _add_stat(self, msg, name: str, value) -> None:
        stat = msg.stats.add()
        stat.metadata_id = self._stat_id(name)
        if isinstance(value, bytes):
            stat.bytes_value = value
        elif isinstance(value, str):
            stat.str_value = value
        elif isinstance(value, float):
            stat.double_value = value
        elif int(value) >= 1 << 63:
            stat.uint64_value = int(value)
        else:
            stat.int64_value = int(value)

    def metadata(self, name: str, display_name: str = "", stats: dict | None = None) -> int:
        """The id of the event metadata named `name` (created once)."""
        if name in self._meta_ids:
            return self._meta_ids[name]
        mid = len(self._meta_ids) + 1
        md = self.plane.event_metadata[mid]
        md.id = mid
        md.name = name
        if display_name:
            md.display_name = display_name.encode()
        for key, value in (stats or {}).items():
            self._add_stat(md, key, value)
        self._meta_ids[name] = mid
        return mid

    def op(self, op: Op) -> int:
        stats = {"hlo_category": op.category, "program_id": PROGRAM_ID, "flops": op.flops}
        stats["bytes_accessed"] = op.bytes_accessed
        if op.source:
            stats["source"] = op.source
        return self.metadata(op.hlo, op.name, stats)

    def line(self, line_id: int, name: str, events: list[tuple[int, int, int]], stats=None) -> None:
        """A line of (metadata id, start ps, duration ps) events; `stats` one dict per event or None."""
        line = self.plane.lines.add(id=line_id, display_id=line_id, name=name, timestamp_ns=BASE_NS)
        for k, (mid, start, duration) in enumerate(events):
            event = line.events.add(metadata_id=mid, offset_ps=int(start), duration_ps=int(duration))
            for key, value in ((stats[k] if stats else None) or {}).items():
                self._add_stat(event, key, value)


@dataclass
class TpuSteps:
    """A TPU device running `steps` executions of one program: each step its ops back to back."""

    ops: list[tuple[Op, int]]  # (op, duration ps) in program order
    steps: int = 20
    gap_ps: int = 1_000_000  # between steps: 1 us
    idle_in_step_ps: int = 0  # idle time at the end of each step, after its ops
    steps_line: bool = True  # False: steps come from host annotations (see host_steps)
    step_spans: list[tuple[int, int]] = field(default_factory=list)  # filled by write_into

    def write_into(self, plane: PlaneBuilder) -> None:
        op_events, step_events, module_events = [], [], []
        module = plane.metadata(f"jit_train_step({PROGRAM_ID})")
        step_meta = plane.metadata("train_step")
        t = 0
        for _ in range(self.steps):
            start = t
            for op, duration in self.ops:
                op_events.append((plane.op(op), t, duration))
                t += duration
            module_events.append((module, start, t - start))
            t += self.idle_in_step_ps
            step_events.append((step_meta, start, t - start))
            t += self.gap_ps
        self.step_spans = [(start, duration) for _, start, duration in step_events]
        if self.steps_line:
            plane.line(1, "Steps", step_events, [{"step_num": k} for k in range(self.steps)])
        plane.line(2, "XLA Modules", module_events)
        plane.line(3, "XLA Ops", op_events)


def host_steps(space: pb.XSpace, spans: list[tuple[int, int]], launch_ps: int = 50_000) -> None:
    """A /host:CPU plane whose `python` thread annotates each span as JAX's StepTraceAnnotation does
    (`train` with a `step_num` stat) and dispatches the step at its start (`PjitFunction(train_step)`)."""
    plane = PlaneBuilder(space, 100, "/host:CPU")
    step = plane.metadata("train")
    launch = plane.metadata("PjitFunction(train_step)")
    events, stats = [], []
    for k, (start, duration) in enumerate(spans):
        events += [(step, start, duration), (launch, start + 1000, launch_ps)]
        stats += [{"step_num": k}, None]
    plane.line(1, "python", events, stats)


def sparsecore_plane(space: pb.XSpace, spans: list[tuple[int, int]], busy_share: float) -> None:
    """A `/device:TPU:0 SparseCore 0` plane whose `Sparse Core Ops` line works `busy_share` of each span."""
    plane = PlaneBuilder(space, 50, "/device:TPU:0 SparseCore 0")
    op = plane.metadata("%embedding-lookup.1 = f32[4096,128]{1,0} custom-call()", "embedding-lookup.1")
    plane.line(1, "Sparse Core Ops", [(op, start, int(duration * busy_share)) for start, duration in spans])


def tpu_profile(path: Path, program: TpuSteps, devices: int = 1, extra=None) -> Path:
    """Writes an XSpace of `devices` TPU v6e cores each running `program`; `extra(space)` adds planes."""
    space = pb.XSpace()
    for index in range(devices):
        plane = PlaneBuilder(space, index + 1, f"/device:TPU:{index}", TPU_V6E_PLANE_STATS)
        program.write_into(plane)
    if extra is not None:
        extra(space)
    space.hostnames.append("generated-host")
    path.write_bytes(space.SerializeToString())
    return path
