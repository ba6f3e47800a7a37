"""Changing one program's HLO proto inside a loaded trace, the way a bigger or differently written model
would have compiled it: the tests of the memory rules and of findings that name code edit the real TPU
sample's `jit_f` this way instead of keeping edited copies of the file."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tpuscope.model.trace import Trace
from tpuscope.readers.xla_dialect import HLO_PROTO_STAT
from tpuscope.readers.xplane import hlo_pb2


def change_program_proto(
    trace: Trace, module_name: str, change: Callable[[Any], None], proto_type: Any = hlo_pb2.HloMemoryProto
) -> Trace:
    """`trace` with every HLO proto of module `module_name` in its metadata planes read as `proto_type`,
    changed in place by `change(proto)` and written back (fields `proto_type` does not name are kept)."""
    for plane in trace.planes:
        if plane.kind != "metadata":
            continue
        column = plane.metadata.stats.column(HLO_PROTO_STAT)
        for blob_id in column.values.tolist():
            proto = proto_type.FromString(trace.blobs[blob_id])
            if proto.hlo_module.name == module_name:
                change(proto)
                trace.blobs[blob_id] = proto.SerializeToString()
    return trace
