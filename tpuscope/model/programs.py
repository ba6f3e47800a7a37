"""The compiled programs a profile describes, with their signatures.

A format that keeps its compiled programs (XPlane: one event metadata per compiled module on the
metadata plane, named `<module>(<program_id>)`, e.g. `jit_train_step(8)`, with the serialized
HloProto as a bytes stat and, in newer JAX, an int stat `program_id`) names that bytes stat and
the decoder of one proto in its dialect (`Dialect.program_proto_stat`,
`Dialect.decode_program_signature`); this module finds the protos and hands them to the decoder,
so that it sees no format. Formats without programs give none. Everything here is computed anew on
each call (each proto can be tens of kilobytes): `tpuscope.analysis.programs.PROGRAM_SIGNATURES`
is the shared, computed-once result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import field
from typing import TypeVar

import numpy as np

from tpuscope.model.records import record
from tpuscope.model.trace import Trace
from tpuscope.model.vocabulary import KIND_METADATA, Stat

T = TypeVar("T")

PROGRAM_ID_STAT = Stat.PROGRAM_ID
_MODULE_NAME = re.compile(r"^(.+)\((\d+)\)$")


@record(frozen=True)
class ProgramSignature:
    """What one compiled module takes and returns, as its compiler writes shapes (XLA: `f32[64,256]`)."""

    module_name: str
    program_id: int | None
    module_id: int
    parameters: list[str] = field(default_factory=list)
    parameter_names: list[str] = field(default_factory=list)
    result: str = ""
    entry_computation: str = ""


def program_signatures(trace: Trace) -> dict[int, ProgramSignature]:
    """program id -> signature of every module whose proto the profile holds.

    Modules whose proto is missing or unreadable are left out (the dict may be empty, e.g. for
    TensorFlow CPU profiles, and is for formats that keep no programs).
    """
    return decode_each_program(trace, trace.dialect.decode_program_signature)


def decode_each_program(trace: Trace, decode: Callable[[bytes, int], T | None] | None) -> dict[int, T]:
    """program id -> what `decode` (a reader's, from the trace's dialect) makes of each program's
    serialized proto; programs it makes nothing of are left out, and so is everything when the
    format has no decoder."""
    found: dict[int, T] = {}
    if decode is None:
        return found
    for program_id, blob in hlo_proto_blobs(trace):
        decoded = decode(blob, program_id)
        if decoded is not None:
            found[program_id] = decoded
    return found


def signatures_of_module(
    signatures: Mapping[int, ProgramSignature], module_name: str
) -> list[ProgramSignature]:
    """Of `signatures` (`program_signatures`), every compilation of `module_name` (e.g.
    `jit_train_step`), oldest first.

    XLA numbers modules in creation order (`HloModuleProto.id`), which is also compile order;
    program ids are fingerprints on some platforms (TPU), so they cannot order compilations.
    """
    found = [s for s in signatures.values() if s.module_name == module_name]
    return sorted(found, key=lambda s: (s.module_id, s.program_id or 0))


def hlo_proto_blobs(trace: Trace) -> Iterator[tuple[int, bytes]]:
    """(program id, serialized program proto) of every metadata row that carries one, in file order
    (none where the trace's dialect names no proto stat)."""
    proto_stat = trace.dialect.program_proto_stat
    if not proto_stat:
        return
    for plane in trace.planes:
        if plane.kind != KIND_METADATA:
            continue
        table = plane.metadata
        column = table.stats.column(proto_stat)
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
