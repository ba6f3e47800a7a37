"""The compiled XLA programs a profile describes, with their signatures (from `/host:metadata`).

The metadata plane holds one event metadata per compiled module, named `<module>(<program_id>)`
(e.g. `jit_train_step(8)`), with the serialized HloProto as its bytes stat `Hlo Proto` and, in
newer JAX, an int stat `program_id`. Decoding the protos is left to `tpuscope.readers.xplane.hlo`; this
module only finds them and keeps the result on the trace, since a diagnosis and the UI may ask
more than once and each proto can be tens of kilobytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np

from tpuscope.model.trace import Trace
from tpuscope.model.vocabulary import KIND_METADATA
from tpuscope.readers.xplane.hlo import ProgramSignature, decode_program_signature

HLO_PROTO_STAT = "Hlo Proto"
PROGRAM_ID_STAT = "program_id"
_MODULE_NAME = re.compile(r"^(.+)\((\d+)\)$")
_CACHE_ATTRIBUTE = "_tpuscope_program_signatures"

__all__ = ["ProgramSignature", "hlo_proto_blobs", "program_signatures", "signatures_of_module"]


def program_signatures(trace: Trace) -> dict[int, ProgramSignature]:
    """program id -> signature of every module whose HLO proto the profile holds.

    Modules whose proto is missing or unreadable are left out (the dict may be empty, e.g. for
    TensorFlow CPU profiles). Computed once per trace.
    """
    cached = vars(trace).get(_CACHE_ATTRIBUTE)
    if cached is None:
        cached = _decode_all(trace)
        vars(trace)[_CACHE_ATTRIBUTE] = cached
    return cached


def signatures_of_module(trace: Trace, module_name: str) -> list[ProgramSignature]:
    """The signatures of every compilation of `module_name` (e.g. `jit_train_step`), oldest first.

    XLA numbers modules in creation order (`HloModuleProto.id`), which is also compile order;
    program ids are fingerprints on some platforms (TPU), so they cannot order compilations.
    """
    found = [s for s in program_signatures(trace).values() if s.module_name == module_name]
    return sorted(found, key=lambda s: (s.module_id, s.program_id or 0))


def _decode_all(trace: Trace) -> dict[int, ProgramSignature]:
    found: dict[int, ProgramSignature] = {}
    for program_id, blob in hlo_proto_blobs(trace):
        signature = decode_program_signature(blob, program_id)
        if signature is not None:
            found[program_id] = signature
    return found


def hlo_proto_blobs(trace: Trace) -> Iterator[tuple[int, bytes]]:
    """(program id, serialized HloProto) of every metadata row that carries one, in file order."""
    for plane in trace.planes:
        if plane.kind != KIND_METADATA:
            continue
        table = plane.metadata
        column = table.stats.column(HLO_PROTO_STAT)
        if column is None or column.kind != "bytes":
            continue
        n_rows = len(table.name_ids)
        rows = np.flatnonzero(column.present(n_rows))
        blob_ids = column.dense(n_rows, -1)
        id_column = table.stats.column(PROGRAM_ID_STAT)
        if id_column is not None and id_column.kind in ("int", "uint"):
            has_id, stat_ids = id_column.present(n_rows), id_column.dense(n_rows, 0)
        else:
            has_id, stat_ids = np.zeros(n_rows, dtype=bool), np.zeros(n_rows, dtype=np.int64)
        for row in rows:  # one row per compiled module: a handful, not per event
            stat_id = int(stat_ids[row]) if has_id[row] else None
            program_id = _program_id(trace.strings[int(table.name_ids[row])], stat_id)
            blob_id = int(blob_ids[row])
            if program_id is None or not 0 <= blob_id < len(trace.blobs):
                continue
            yield program_id, trace.blobs[blob_id]


def _program_id(name: str, stat_id: int | None) -> int | None:
    """The program id of one metadata row: its `program_id` stat, else the number in its name."""
    if stat_id is not None:
        return stat_id
    match = _MODULE_NAME.match(name)
    return int(match.group(2)) if match else None
