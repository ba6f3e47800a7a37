"""The op tables of two runs matched op by op, with the self-time change of each pair.

XLA numbers instructions per compilation (`fusion.123` in one run can be `fusion.131` in the next,
and `fusion.123` there may be another computation), so the raw name is a poor key. Ops are matched
in this order, and each pair says how:

1. `hlo_text`: the op's HLO text (TPU event names are the full instruction, `%fusion.3 = bf16[8,128]
   fusion(...)`) with the instruction's own name, instance numbers (`.3`, `.clone`) and ids
   (`channel_id=`, ...) stripped, plus its category and its program's name without the program id;
   the shapes are part of the text;
2. `stripped_name`: where no HLO text is recorded (XLA:CPU thunks, GPU kernels carry only the name),
   the name with instance numbers stripped, plus category and program name;
3. `name`: the exact op name in a program of the same name (the computation changed, e.g. its
   shapes, but it is still the same instruction);
4. `rank_in_group`: several ops of one run share a key (`wrapped_multiply.1` and `.2`): those not
   matched by exact name are paired in order of self time;
5. `category`: runs whose op names do not compare (a PyTorch profiler trace's CUDA kernels against
   an XPlane profile's HLO ops, different frameworks) are matched by neutral op family
   (`OpFamily`: matmul/convolution, elementwise/fusion, reduction, collective, memcpy, ...), which
   each reader's dialect maps its own op categories onto: one row per family, holding all that
   family's ops of each run. When the formats differ every op is matched so (a name both share,
   such as a memcpy, would mean different things); when only the frameworks differ, the ops no
   name matched are;
6. `only_base` / `only_new`: no partner (across formats: a family only one run has).

Times are per step when both runs have steps (runs of different lengths compare fairly), else per
profile. Also the per-category and per-program tables, matched by label (program ids stripped).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import field

import numpy as np

from tpuscope.analysis.ops import NO_LABEL, OpTable
from tpuscope.model.records import record

MATCH_HLO_TEXT = "hlo_text"
MATCH_STRIPPED_NAME = "stripped_name"
MATCH_NAME = "name"
MATCH_RANK = "rank_in_group"
MATCH_CATEGORY = "category"  # one neutral op family of each run (runs whose op names do not compare)
ONLY_BASE = "only_base"
ONLY_NEW = "only_new"
MATCH_LABEL = "label"  # category and program tables
MEMBERS_JSON = 10  # a family row's ops listed in JSON, per run

_INSTANCE = re.compile(r"((?:%|\b)[A-Za-z_][\w\-]*?)(?:\.\d+|\.clone)+\b")  # %fusion.3.clone -> %fusion
_IDS = re.compile(r"\b(channel_id|all_reduce_id|unique_id|op_id|program_id)=\d+")
_LHS = re.compile(r"^\s*(ROOT\s+)?%?[\w.\-]+\s*=\s*")
_PROGRAM_ID = re.compile(r"\(\d+\)$")  # "jit_step(8)" -> "jit_step"
_PROGRAM_NUMBER = re.compile(r"^program \d+$")


def program_key(label: str) -> str:
    """A program's name without the id that changes with every compilation."""
    if _PROGRAM_NUMBER.match(label):
        return "(unnamed program)"
    return _PROGRAM_ID.sub("", label)


def computation_key(text: str) -> tuple[str, bool]:
    """(key, is_hlo_text): the op's text with its own name, instance numbers and ids stripped."""
    if " = " in text:
        body = _LHS.sub("", text, count=1)
        body = _IDS.sub(r"\1=#", body)
        return _INSTANCE.sub(r"\1", body), True
    return _INSTANCE.sub(r"\1", text.strip()), False


@record
class OpDelta:
    """One row of a matched table (times in ps, per step or per profile as the table says)."""

    name: str  # NEW's name where NEW has the op, else BASE's
    base_name: str | None
    new_name: str | None
    category: str
    program: str  # program name without its id
    match: str
    base_self_ps: float
    new_self_ps: float
    base_occurrences: float
    new_occurrences: float
    base_rows: list[int] = field(default_factory=list)  # rows of BASE's op table, for outlining events
    new_rows: list[int] = field(default_factory=list)
    # A family row (`category` match): the names of its ops in each run, largest self time first.
    base_members: list[str] = field(default_factory=list)
    new_members: list[str] = field(default_factory=list)

    @property
    def delta_ps(self) -> float:
        return self.new_self_ps - self.base_self_ps


@record
class MatchedTable:
    """A matched table, rows sorted by |delta| (largest first)."""

    by: str
    per: str  # "step" or "profile"
    rows: list[OpDelta]
    base_total_ps: float
    new_total_ps: float

    @property
    def total_delta_ps(self) -> float:
        return self.new_total_ps - self.base_total_ps

    def share_of_change(self, row: OpDelta) -> float:
        """The row's share of the net change of total self time (0 when nothing changed)."""
        total = self.total_delta_ps
        return row.delta_ps / total if total else 0.0

    def match_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.match] = counts.get(row.match, 0) + 1
        return counts

    def to_json(self, top: int | None = None) -> list[dict]:
        rows = self.rows if top is None else self.rows[:top]
        return [
            {
                **self.row_json(r),
                **(
                    {
                        "base_ops": r.base_members[:MEMBERS_JSON],
                        "new_ops": r.new_members[:MEMBERS_JSON],
                        "base_op_count": len(r.base_members),
                        "new_op_count": len(r.new_members),
                    }
                    if r.base_members or r.new_members
                    else {}
                ),
            }
            for r in rows
        ]

    def row_json(self, r: OpDelta) -> dict:
        """One row as `compare --json` lists it (a history keeps a few of its fields)."""
        return {
            "name": r.name,
            "base_name": r.base_name,
            "new_name": r.new_name,
            "category": r.category,
            "program": r.program,
            "match": r.match,
            "base_self_us": round(r.base_self_ps / 1e6, 3),
            "new_self_us": round(r.new_self_ps / 1e6, 3),
            "delta_us": round(r.delta_ps / 1e6, 3),
            "share_of_change": round(self.share_of_change(r), 4),
            "base_occurrences": round(r.base_occurrences, 3),
            "new_occurrences": round(r.new_occurrences, 3),
        }


@record(frozen=True)
class Families:
    """How each run's op categories map onto neutral op families (`Dialect.op_family_of`).

    `names_compare`: the runs name their ops alike (one format), so names are matched first and only
    the ops left over by family; False: every op is matched by family.
    """

    base: Callable[[str], str]
    new: Callable[[str], str]
    names_compare: bool


@record
class OpEntries:
    """One run's op rows merged across recompilations: one entry per (program name, op name)."""

    names: list[str]
    categories: list[str]
    programs: list[str]
    texts: list[str]
    self_ps: list[float]  # per step (or per profile)
    occurrences: list[float]
    table_rows: list[list[int]]  # the OpTable rows merged into each entry
    # Each entry's `computation_key` when kept without its text (a run summary keeps keys, hashed).
    keys: list[tuple[str, bool]] | None = None

    def match_keys(self) -> list[tuple[str, bool]]:
        return self.keys if self.keys is not None else [computation_key(t) for t in self.texts]

    def row(self, r: int) -> tuple[float, float]:
        return self.self_ps[r], self.occurrences[r]


def _representative_texts(table: OpTable) -> list[str]:
    """Per row, the full name of one of its events (TPU: the whole HLO instruction)."""
    n = len(table)
    if n == 0:
        return []
    # Any member will do (the same trick as ops._group): one scatter, no sort of every event.
    member = np.full(n, -1, np.int64)
    member[table.row_of_event] = np.arange(len(table.row_of_event))
    rows = np.flatnonzero(member >= 0)
    texts = [""] * n
    offsets = np.array([offset for _, _, offset in table.events.segments], dtype=np.int64)
    for row, event in zip(rows.tolist(), member[rows].tolist(), strict=True):  # one per op, not per event
        seg = int(np.searchsorted(offsets, event, side="right") - 1)
        track, indices, offset = table.events.segments[seg]
        texts[row] = track.event_name(int(indices[event - offset]))
    return [t or table.label(table.name[r]) for r, t in enumerate(texts)]


def _side(table: OpTable, scale: float) -> OpEntries:
    """The table's rows, those of the same op name in programs of the same name added up.

    A program recompiled within one run (new shapes) is one program to the user; its compilations'
    rows are one op each, as they would be had it compiled once.
    """
    scale = max(scale, 1.0)
    names = table.names()
    texts = _representative_texts(table)
    merged: dict[tuple[str, str], int] = {}
    side = OpEntries([], [], [], [], [], [], [])
    for r, name in enumerate(names):  # table rows are in self-time order, so merged entries are too
        program = program_key(table.label(table.program[r])) if table.program[r] else ""
        at = merged.get((program, name))
        if at is None:
            at = merged[(program, name)] = len(side.names)
            side.names.append(name)
            side.categories.append(table.label(table.category[r]) if table.category[r] else "")
            side.programs.append(program)
            side.texts.append(texts[r])
            side.self_ps.append(0.0)
            side.occurrences.append(0.0)
            side.table_rows.append([])
        side.self_ps[at] += float(table.self_ps[r]) / scale
        side.occurrences[at] += float(table.occurrences[r]) / scale
        side.table_rows[at].append(r)
    return side


def match_ops(
    base: OpTable | None,
    new: OpTable | None,
    base_steps: int,
    new_steps: int,
    families: Families | None = None,
) -> MatchedTable:
    """BASE's and NEW's per-op tables matched op by op (see the module docstring); `families`: the
    runs' op names do not (all) compare, match by op family where names do not."""
    per_step = base_steps > 0 and new_steps > 0
    b, n = (
        _side(t, (steps if per_step else 1)) if t is not None else None
        for t, steps in ((base, base_steps), (new, new_steps))
    )
    return match_sides(b, n, per_step, families)


def op_entries(table: OpTable, steps: int) -> OpEntries:
    """A run's ops as `match_sides` matches them: one entry per op name in programs of one name, its
    self time and occurrences per step (per profile when `steps` is 0)."""
    return _side(table, steps if steps > 0 else 1)


def match_sides(
    b: OpEntries | None, n: OpEntries | None, per_step: bool, families: Families | None = None
) -> MatchedTable:
    """Two runs' op entries (`op_entries`, or entries kept in a run summary) matched op by op."""
    sides = [b, n]
    pairs: list[tuple[int, int, str]] = []
    free_b = set(range(len(b.names))) if b else set()
    free_n = set(range(len(n.names))) if n else set()
    if b and n and (families is None or families.names_compare):
        keys_b = [(*k, c, p) for k, c, p in zip(b.match_keys(), b.categories, b.programs, strict=True)]
        keys_n = [(*k, c, p) for k, c, p in zip(n.match_keys(), n.categories, n.programs, strict=True)]
        groups_b: dict[tuple, list[int]] = {}
        for r, key in enumerate(keys_b):
            groups_b.setdefault(key, []).append(r)
        groups_n: dict[tuple, list[int]] = {}
        for r, key in enumerate(keys_n):
            groups_n.setdefault(key, []).append(r)
        for key, rows_b in groups_b.items():
            rows_n = groups_n.get(key)
            if not rows_n:
                continue
            kind = MATCH_HLO_TEXT if key[1] else MATCH_STRIPPED_NAME
            if len(rows_b) == 1 and len(rows_n) == 1:
                pairs.append((rows_b[0], rows_n[0], kind))
                continue
            by_name = {n.names[r]: r for r in rows_n}
            left_b = []
            for r in rows_b:
                partner = by_name.pop(b.names[r], None)
                if partner is None:
                    left_b.append(r)
                else:
                    pairs.append((r, partner, kind))
            left_n = sorted(by_name.values())  # table rows are already in self-time order
            pairs.extend((rb, rn, MATCH_RANK) for rb, rn in zip(sorted(left_b), left_n, strict=False))
        for rb, rn, _ in pairs:
            free_b.discard(rb)
            free_n.discard(rn)
        by_name_n = {(n.programs[r], n.names[r]): r for r in sorted(free_n)}
        for r in sorted(free_b):
            partner = by_name_n.pop((b.programs[r], b.names[r]), None)
            if partner is not None:
                pairs.append((r, partner, MATCH_NAME))
                free_b.discard(r)
                free_n.discard(partner)
    rows = [_pair(b, n, rb, rn, kind) for rb, rn, kind in pairs]
    if families is not None:
        rows += _family_rows(b, n, sorted(free_b), sorted(free_n), families)
    else:
        rows += [_pair(b, None, r, -1, ONLY_BASE) for r in sorted(free_b)]
        rows += [_pair(None, n, -1, r, ONLY_NEW) for r in sorted(free_n)]
    rows.sort(key=lambda row: -abs(row.delta_ps))
    totals = [sum(s.self_ps) if s else 0.0 for s in sides]
    return MatchedTable("op", "step" if per_step else "profile", rows, totals[0], totals[1])


def _pair(b: OpEntries | None, n: OpEntries | None, rb: int, rn: int, kind: str) -> OpDelta:
    base_self, base_occ = b.row(rb) if b is not None and rb >= 0 else (0.0, 0.0)
    new_self, new_occ = n.row(rn) if n is not None and rn >= 0 else (0.0, 0.0)
    base_name = b.names[rb] if b is not None and rb >= 0 else None
    new_name = n.names[rn] if n is not None and rn >= 0 else None
    source, row = (n, rn) if new_name is not None else (b, rb)
    assert source is not None
    return OpDelta(
        name=new_name if new_name is not None else (base_name or ""),
        base_name=base_name,
        new_name=new_name,
        category=source.categories[row],
        program=source.programs[row],
        match=kind,
        base_self_ps=base_self,
        new_self_ps=new_self,
        base_occurrences=base_occ,
        new_occurrences=new_occ,
        base_rows=b.table_rows[rb] if b is not None and rb >= 0 else [],
        new_rows=n.table_rows[rn] if n is not None and rn >= 0 else [],
    )


def _family_rows(
    b: OpEntries | None, n: OpEntries | None, free_b: list[int], free_n: list[int], families: Families
) -> list[OpDelta]:
    """One row per op family of the unmatched ops: the family's ops of BASE against NEW's."""
    members: dict[str, tuple[list[int], list[int]]] = {}
    for side, free, family_of, at in ((b, free_b, families.base, 0), (n, free_n, families.new, 1)):
        if side is None:
            continue
        for r in free:  # in self-time order
            members.setdefault(family_of(side.categories[r]), ([], []))[at].append(r)
    rows = []
    for family, (rows_b, rows_n) in members.items():
        base_self, base_occ, base_rows, base_names = _family_total(b, rows_b)
        new_self, new_occ, new_rows, new_names = _family_total(n, rows_n)
        rows.append(
            OpDelta(
                name=family,
                base_name=base_names[0] if base_names else None,
                new_name=new_names[0] if new_names else None,
                category=family,
                program="",
                match=MATCH_CATEGORY if rows_b and rows_n else (ONLY_BASE if rows_b else ONLY_NEW),
                base_self_ps=base_self,
                new_self_ps=new_self,
                base_occurrences=base_occ,
                new_occurrences=new_occ,
                base_rows=base_rows,
                new_rows=new_rows,
                base_members=base_names,
                new_members=new_names,
            )
        )
    return rows


def _family_total(side: OpEntries | None, picked: list[int]) -> tuple[float, float, list[int], list[str]]:
    """(self time, occurrences, op-table rows, distinct op names) of some of a side's entries."""
    if side is None or not picked:
        return 0.0, 0.0, [], []
    return (
        sum(side.self_ps[r] for r in picked),
        sum(side.occurrences[r] for r in picked),
        [t for r in picked for t in side.table_rows[r]],
        list(dict.fromkeys(side.names[r] for r in picked)),  # one op name may be in several programs
    )


def match_groups(
    base: OpTable | None,
    new: OpTable | None,
    by: str,
    base_steps: int,
    new_steps: int,
    families: Families | None = None,
) -> MatchedTable:
    """BASE's and NEW's per-op tables grouped `by` category or program, matched by label; by category
    with `families` whose names do not compare, each run's categories are its op families."""
    per_step = base_steps > 0 and new_steps > 0
    by_family = by == "category" and families is not None and not families.names_compare

    def totals(
        table: OpTable | None, steps: int, family_of: Callable[[str], str] | None
    ) -> dict[str, tuple[float, float, int]]:
        """Per label, from the per-op rows (each op has one category and one program): no pass
        over the events."""
        if table is None:
            return {}
        labels = table.category if by == "category" else table.program
        scale = max(float(steps if per_step else 1), 1.0)
        found: dict[str, tuple[float, float, int]] = {}
        for r, label_id in enumerate(labels.tolist()):  # one per op row
            label = table.label(label_id) if label_id else NO_LABEL
            key = program_key(label) if by == "program" and label_id else label
            if family_of is not None:
                key = family_of(label if label_id else "")
            self_ps, occ, _ = found.get(key, (0.0, 0.0, r))
            found[key] = (self_ps + table.self_ps[r] / scale, occ + table.occurrences[r] / scale, r)
        return found

    tb = totals(base, base_steps, families.base if by_family and families else None)
    tn = totals(new, new_steps, families.new if by_family and families else None)
    rows = []
    for key in sorted(set(tb) | set(tn)):
        bs, bo, _ = tb.get(key, (0.0, 0.0, -1))
        ns, no, _ = tn.get(key, (0.0, 0.0, -1))
        both = MATCH_CATEGORY if by_family else MATCH_LABEL
        kind = both if key in tb and key in tn else (ONLY_BASE if key in tb else ONLY_NEW)
        rows.append(
            OpDelta(
                key,
                key if key in tb else None,
                key if key in tn else None,
                key if by == "category" else "",
                key if by == "program" else "",
                kind,
                float(bs),
                float(ns),
                float(bo),
                float(no),
            )
        )
    rows.sort(key=lambda row: -abs(row.delta_ps))
    base_total = float(sum(v[0] for v in tb.values()))
    new_total = float(sum(v[0] for v in tn.values()))
    return MatchedTable(by, "step" if per_step else "profile", rows, base_total, new_total)
