"""Evidence for op-level findings: the longest events of an op table row, across its tracks, and the
source line each op came from.

A finding that names an op also names its line, so that the user reads it in their own code's words.
The line is the op's own where its events carry one (XLA:TPU), else its instruction's in the
program's code (`tpuscope.analysis.op_source`): the programs' protos are decoded (`PROGRAM_CODE`,
once per analysis) only when a finding names an op whose events carry no line, so a diagnosis that
names no op, or only TPU ops, decodes none.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

from tpuscope.analysis.facts.evidence import event_evidence
from tpuscope.analysis.ops import OpTable
from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.model import order_statistics

if TYPE_CHECKING:
    from tpuscope.analysis.facts.context import Context

EVIDENCE_PER_OP = 10
LINES_NAMED = 3  # source lines an explanation names; the metrics name every op's


def longest_op_events(
    table: OpTable, row: int, label: str, limit: int = EVIDENCE_PER_OP
) -> list[dict[str, Any]]:
    """Evidence items for the `limit` longest events of one op row (all devices and lines together)."""
    found = table.events_of_row(row)
    if not found:
        return []
    which = np.concatenate([np.full(len(idx), k) for k, (_, idx) in enumerate(found)])
    index = np.concatenate([idx for _, idx in found])
    lengths = np.concatenate([t.duration_ps[idx] for t, idx in found])
    top = np.argsort(-lengths, kind="stable")[:limit]
    return [event_evidence(label, found[int(which[k])][0], int(index[k])) for k in top]


def intervals_per_device(table: OpTable, rows: list[int]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per device (position in table.devices), the merged time intervals of the rows' events."""
    from tpuscope.analysis.facts.intervals import merge_intervals

    if not rows:
        return {}
    mask = order_statistics.isin(table.row_of_event, np.asarray(rows, dtype=np.int64))
    events = table.events
    found: dict[int, tuple[list, list]] = {}
    planes = {id(d.plane): k for k, d in enumerate(table.devices)}
    for track, idx in events.events_of(mask):
        device = planes.get(id(track.plane))
        if device is None:
            continue
        starts, ends = found.setdefault(device, ([], []))
        starts.append(track.start_ps[idx])
        ends.append(track.end_ps[idx])
    return {k: merge_intervals(np.concatenate(s), np.concatenate(e)) for k, (s, e) in found.items()}


def op_source(ctx: Context, row: int) -> str:
    """`file:line` of the op row `row` of `ctx.op_table` (as `ops --json` names it), "" without one."""
    table = ctx.op_table
    if table.by != "op" or row >= len(table.first_event):
        return ""
    # The code behind ops (and the programs' code records): imported where a finding names an op.
    from tpuscope.analysis.op_source import op_code

    events, first = table.events, int(table.first_event[row])
    own = op_code(events, first, None).source
    if own or not (len(events.program_id) and int(events.program_id[first])):
        return own
    return op_code(events, first, ctx.get(PROGRAM_CODE)).source


def instruction_source(ctx: Context, program_id: int | None, instruction: str) -> str:
    """`file:line` of one instruction of a program (a buffer's defining instruction), "" without one."""
    if program_id is None or not instruction:
        return ""
    program = ctx.get(PROGRAM_CODE).get(int(program_id))
    found = program.get(instruction) if program is not None else None
    line = found.source if found is not None else None
    return line.text if line is not None else ""


def short_source(source: str) -> str:
    """`model.py:42` for `/home/me/project/model.py:42`: what an explanation's sentence names."""
    file, _, line = source.rpartition(":")
    return f"{os.path.basename(file)}:{line}" if file else source


def lines_words(sources: list[str]) -> str:
    """ " (from model.py:42, train.py:7)": the distinct lines of the named ops, in order, "" for none."""
    distinct = list(dict.fromkeys(s for s in sources if s))
    if not distinct:
        return ""
    named = ", ".join(short_source(s) for s in distinct[:LINES_NAMED])
    more = f" and {len(distinct) - LINES_NAMED} more" if len(distinct) > LINES_NAMED else ""
    return f" (from {named}{more})"
