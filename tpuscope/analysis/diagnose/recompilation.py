"""Rule `recompilation`: the same function compiled again and again inside the profile.

XProf does not count compilations at all (users ask for it in jax-ml/jax#4274 and #5700), yet a
shape that changes every few steps can cost more than the training itself. Compilations
are found from the host events each framework emits, grouped by what was compiled:
- JAX: `backend_compile(_and_load)` / `lower_sharding_computation` inside `PjitFunction(<fn>)`;
- PyTorch/XLA: `XLAGraphExecutor::Compile` (stat `graph_hash`) / `PjRtComputationClient::Compile`;
- TensorFlow: `tf.function` calls that were traced (stat `tf_function_call` = `traced-*`),
  and `XlaCompile`;
- otherwise runtime compiler events (`TfrtTpuCompiler::Compile`, `PjRtCApiClient::CompileAndLoad`).

What differed between compilations comes from the HLO protos in `/host:metadata` (one per
compiled module, see tpuscope.model.programs): their argument shapes, e.g. `argument 1 changed
f32[64,256] -> f32[80,256]`. Without protos the program ids (JAX) or graph hashes (PyTorch/XLA)
are all there is to show.
"""

from __future__ import annotations

import re
from dataclasses import field

import numpy as np

from tpuscope.analysis.diagnose.finding import (
    NO_STEPS_NOTE,
    STEP_TIME_BANDS,
    Finding,
    Impact,
    RuleOutcome,
    Severity,
    ms,
    percent,
    step_time_impact,
)
from tpuscope.analysis.diagnose.op_evidence import short_source
from tpuscope.analysis.facts.context import Context
from tpuscope.analysis.facts.evidence import event_evidence, largest_first
from tpuscope.analysis.facts.intervals import intersect, merge_intervals, total
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW
from tpuscope.analysis.programs import PROGRAM_CODE, PROGRAM_SIGNATURES
from tpuscope.model import order_statistics
from tpuscope.model.programs import ProgramSignature, signatures_of_module
from tpuscope.model.records import record
from tpuscope.model.trace import Track
from tpuscope.model.vocabulary import KIND_METADATA, EventClass, Stat

RULE_ID = "recompilation"
# More than this many compilations of one function after the first step is a warning (the rule:
# "compiled more than once after the first step"); the first step legitimately compiles everything.
MAX_COMPILES_AFTER_FIRST_STEP = 1
# The severity of a repeated compilation comes from the step time its compilations after the first step
# take (STEP_TIME_BANDS), not from their count: PyTorch/XLA's own analysis counts ("CompileTime too
# frequent" above 0.5 per step, torch_xla/csrc/runtime/metrics_analysis.cpp), kept here as evidence.
IMPACT_THRESHOLDS = STEP_TIME_BANDS

ADVICE = {
    JAX: [
        "Keep input shapes fixed: pad or bucket variable-length batches to a few sizes, and drop or pad the "
        "last partial batch.",
        "Pass Python values that change every step as traced arguments, not static_argnums/static_argnames; "
        "keep dtypes (and weak types) stable.",
        "Find the cause with jax.config.update('jax_explain_cache_misses', True) and "
        "jax.config.update('jax_log_compiles', True).",
        "Enable the persistent compilation cache (jax_compilation_cache_dir) so restarts do not recompile.",
    ],
    PYTORCH_XLA: [
        "Avoid dynamic shapes: pad inputs to fixed sizes, avoid data-dependent ops (nonzero, masked "
        "indexing) in the step, keep loop counts constant.",
        "Run with PT_XLA_DEBUG_LEVEL=2 to print the compilation cause, graph hash and Python frame.",
        "Compile the step once with torch_xla.compile / torch.compile(backend='openxla').",
    ],
    TENSORFLOW: [
        "Stop tf.function retracing: give it an input_signature with None for variable dimensions, or "
        "reduce_retracing=True; do not pass changing Python scalars.",
        "Check tf.function's tracing count (tf_function_call / tracing_count stats).",
    ],
    "": ["Keep program input shapes and static arguments fixed so each program compiles once."],
}


@record
class _Group:
    """The compilations of one function/graph."""

    name: str
    events: list[tuple[Track, int]] = field(default_factory=list)
    details: set[str] = field(default_factory=set)
    # Signatures of the compiled module(s), oldest first, from /host:metadata (may be empty).
    signatures: list[ProgramSignature] = field(default_factory=list)


def run(ctx: Context) -> RuleOutcome:
    groups = _groups(ctx)
    unseen = _metadata_only(ctx, groups)
    findings = [_compiled_outside_window(unseen, _metadata_plane(ctx))] if unseen else []
    unseen_words = (
        f"; {len(unseen)} function(s) with several programs in {_metadata_plane(ctx)} compiled outside "
        "the window"
        if unseen
        else ""
    )
    if not groups:
        checked = f"no compile events on host threads{unseen_words or ', no function with several programs'}"
        return RuleOutcome(findings, checked)
    p0, p1 = ctx.periods
    after_warm_up = (p0[1:2], p1[-1:]) if len(p0) > 1 else (p0[:0], p1[:0])
    first_step_end = int(p0[1]) if len(p0) > 1 else (int(ctx.steps.end_ps[0]) if len(p0) else None)
    profile_ps = max(ctx.trace.duration_ps, 1)
    quiet = []
    most_after = 0
    for group in groups.values():
        starts = np.array([t.start_ps[i] for t, i in group.events], dtype=np.int64)
        ends = np.array([t.end_ps[i] for t, i in group.events], dtype=np.int64)
        compile_ps = total(merge_intervals(starts, ends))
        after_first = int((starts >= first_step_end).sum()) if first_step_end is not None else 0
        steps_after = max(len(p0) - 1, 0)
        metrics = {
            "function": group.name,
            "compilations": len(group.events),
            "compile_ms": ms(compile_ps),
            "percent_of_profile": percent(compile_ps, profile_ps),
            "compiled_after_first_step": after_first,
            "steps": _step_labels(ctx, starts),
        }
        if group.details:
            metrics["what_differed"] = sorted(group.details)
        _add_signature_metrics(group, metrics, starts, ends)
        metrics["caller"] = _caller(ctx, group)  # "" where the programs' stacks do not say
        most_after = max(most_after, after_first)
        if after_first > MAX_COMPILES_AFTER_FIRST_STEP:
            per_step = after_first / steps_after if steps_after else float(after_first)
            metrics["compilations_per_step_after_first"] = round(per_step, 3)
            late_ps = total(intersect(merge_intervals(starts, ends), after_warm_up))
            impact = step_time_impact(
                ctx.periods, late_ps, "time compiling inside the steps after the first (the device waits)"
            )
            findings.append(_repeated(ctx, group, metrics, impact))
        else:
            quiet.append((group, metrics))
    if quiet:
        findings.append(_summary(ctx, quiet))
    count = sum(len(g.events) for g in groups.values())
    checked = (
        f"{count} compilation(s) of {len(groups)} function(s); at most {most_after} of one function "
        f"after the first step (a warning above {MAX_COMPILES_AFTER_FIRST_STEP}){unseen_words}"
    )
    return RuleOutcome(findings, checked)


def _metadata_only(ctx: Context, groups: dict[str, _Group]) -> list[tuple[str, list[ProgramSignature]]]:
    """Modules compiled several times with different shapes whose compilations the window does not show.

    `/host:metadata` keeps every module the process compiled, also before the profile started; a
    module with several different signatures and no compile event in the window was compiled again
    before (or around) the window, e.g. one JAX function called with several shapes.
    """
    seen = {name for key in groups for name in (key, ctx.trace.dialect.program_of_function(key))}
    by_module: dict[str, list[ProgramSignature]] = {}
    for signature in ctx.get(PROGRAM_SIGNATURES).values():
        by_module.setdefault(signature.module_name, []).append(signature)
    found = []
    for module in sorted(by_module):
        signatures = sorted(by_module[module], key=lambda s: (s.module_id, s.program_id or 0))
        distinct = {(tuple(s.parameters), s.result) for s in signatures}
        if module not in seen and len(signatures) > 1 and len(distinct) > 1:
            found.append((module, signatures))
    return found


def _compiled_outside_window(unseen: list[tuple[str, list[ProgramSignature]]], metadata: str) -> Finding:
    rows: list[dict[str, object]] = []
    for module, signatures in unseen:
        rows.append(
            {
                "function": module,
                "programs": len(signatures),
                "program_ids": [s.program_id for s in signatures],
                "arguments": [", ".join(s.parameters) for s in signatures],
                "results": [s.result for s in signatures],
                "what_differed": describe_signature_changes(signatures),
            }
        )
    names = ", ".join(f"`{module}` x{len(signatures)}" for module, signatures in unseen)
    first_module, first_signatures = unseen[0]
    explanation = (
        f"The profile's {metadata} holds several compiled programs of the same function with "
        f"different shapes ({names}), but no compile event inside the profile window: they were compiled "
        f"before or around it. For `{first_module}`: "
        f"{'; '.join(describe_signature_changes(first_signatures)[:4])}. "
        "One program per distinct shape is expected when a function is called with several shapes on "
        "purpose; in a training loop it means shapes change between calls."
    )
    count = sum(len(signatures) for _, signatures in unseen)
    metrics = {"functions": rows, "programs": count}
    title = f"{len(rows)} function(s) compiled for several shapes before or around the profile"
    note = "its cost cannot be measured: the compilations happened outside the profile window"
    return Finding(RULE_ID, Severity.INFO, title, explanation, metrics, [], [], None, note)


def _repeated(ctx: Context, group: _Group, metrics: dict, impact: Impact | None) -> Finding:
    n, after = metrics["compilations"], metrics["compiled_after_first_step"]
    differed = metrics.get("what_differed")
    explanation = (
        f"`{group.name}` was compiled {n} times in this profile, {after} of them after the first step "
        f"(in {', '.join(metrics['steps'])}), costing {metrics['compile_ms']} ms "
        f"({metrics['percent_of_profile']}% of the profile). The device idles while the host compiles. "
        "A function compiled again after warm-up means its input shapes, dtypes or static arguments "
        "keep changing."
    )
    if metrics.get("caller"):
        explanation += f" It is called from {short_source(metrics['caller'])}."
    changes = metrics.get("argument_changes")
    if changes:
        explanation += f" What changed between the compilations: {'; '.join(changes)}."
    elif differed:
        explanation += f" The compilations differ in: {'; '.join(differed)}."
    title = f"Recompilation: `{group.name}` compiled {n} times ({after} after the first step)"
    evidence = largest_first([event_evidence(f"compile {group.name}", t, i) for t, i in group.events])
    severity = IMPACT_THRESHOLDS.severity(impact)
    finding = Finding(
        RULE_ID, severity, title, explanation, metrics, evidence, ctx.advice_for(ADVICE), impact
    )
    if impact is None:
        finding.impact_note = NO_STEPS_NOTE
    return finding


def _caller(ctx: Context, group: _Group) -> str:
    """`file:line` of the call that traced the group's function (its programs' stacks), "" unknown."""
    ids = [s.program_id for s in group.signatures if s.program_id is not None]
    if not ids:
        return ""
    from tpuscope.analysis.op_source import caller_line  # the code's records: where a function recompiled

    code = ctx.get(PROGRAM_CODE)
    for program_id in reversed(ids):  # the latest compilation first
        program = code.get(int(program_id))
        line = caller_line(program, group.name) if program is not None else None
        if line is not None:
            return line.text
    return ""


def _summary(ctx: Context, quiet: list) -> Finding:
    count = sum(m["compilations"] for _, m in quiet)
    names = ", ".join(f"`{g.name}` x{m['compilations']}" for g, m in quiet)
    compile_ms = round(sum(m["compile_ms"] for _, m in quiet), 3)
    metrics = {"compilations": count, "compile_ms": compile_ms, "functions": [_compact(m) for _, m in quiet]}
    explanation = (
        f"{count} compilation(s) inside the profile ({names}), {compile_ms} ms in total; none of these "
        "functions was compiled more than once after the first step, which is normal warm-up."
    )
    items = [event_evidence(f"compile {g.name}", t, i) for g, _ in quiet for t, i in g.events]
    title = f"{count} compilation(s) during warm-up ({compile_ms} ms)"
    note = "warm-up compilation is paid once per process: nothing a step would get back"
    return Finding(RULE_ID, Severity.INFO, title, explanation, metrics, largest_first(items), [], None, note)


def _add_signature_metrics(group: _Group, metrics: dict, starts: np.ndarray, ends: np.ndarray) -> None:
    """Adds each compilation's argument shapes (`signatures`) and what changed (`argument_changes`).

    Compilations are paired with signatures in order only when the counts match: the metadata
    also lists modules compiled before the profile started, and then which is which is unknown.
    """
    signatures = group.signatures
    if not signatures:
        return
    order = np.argsort(starts, kind="stable")
    paired = len(signatures) == len(starts)
    steps = [metrics["steps"][k] for k in order] if paired else [None] * len(signatures)
    rows = []
    for k, signature in enumerate(signatures):
        row: dict = {}
        if paired:
            row["step"] = steps[k]
        row["program_id"] = signature.program_id
        row["arguments"] = ", ".join(signature.parameters)
        row["result"] = signature.result
        if paired:
            row["compile_ms"] = ms(ends[order[k]] - starts[order[k]])
        rows.append(row)
    metrics["signatures"] = rows
    changes = describe_signature_changes(signatures, steps)
    if changes:
        metrics["argument_changes"] = changes


def describe_signature_changes(
    signatures: list[ProgramSignature], labels: list[str | None] | None = None
) -> list[str]:
    """What differs between each compilation and the one before it, in words.

    e.g. `argument 1 changed f32[64,256] -> f32[80,256] (step 3)`; arguments are numbered from 0
    as XLA numbers its parameters (p0, p1, ...), and named when the module names them.
    """
    labels = labels if labels is not None else [None] * len(signatures)
    changes: list[str] = []
    for k in range(1, len(signatures)):
        before, after = signatures[k - 1], signatures[k]
        where = f" ({labels[k]})" if labels[k] else ""
        found = []
        if len(before.parameters) != len(after.parameters):
            found.append(f"argument count changed {len(before.parameters)} -> {len(after.parameters)}")
        for i, (old, new) in enumerate(zip(before.parameters, after.parameters, strict=False)):
            if old != new:
                found.append(f"{_argument_label(after, i)} changed {old} -> {new}")
        if before.result != after.result:
            found.append(f"result changed {before.result} -> {after.result}")
        if not found:
            found.append("same argument and result shapes (a static argument or the sharding changed)")
        changes.extend(f"{text}{where}" for text in found)
    return changes


def _argument_label(signature: ProgramSignature, index: int) -> str:
    names = signature.parameter_names
    name = names[index] if index < len(names) else ""
    return f"argument {index} ({name})" if name and name != f"p{index}" else f"argument {index}"


def _compact(metrics: dict) -> dict:
    """One function's row in the warm-up summary: its argument shapes as text, not a nested table
    (one compilation per function is the normal case there, and its step and time are already shown)."""
    row = {k: v for k, v in metrics.items() if k != "signatures"}
    if "signatures" in metrics:
        row["arguments"] = [s["arguments"] for s in metrics["signatures"]]
    return row


def _step_labels(ctx: Context, starts: np.ndarray) -> list[str]:
    p0, p1 = ctx.periods
    if len(p0) == 0:
        return ["(no steps found)"] * len(starts)
    pos = np.searchsorted(p0, starts, side="right") - 1
    labels = []
    for t, k in zip(starts, pos, strict=True):
        if k < 0:
            labels.append("before the first step")
        elif t >= p1[-1]:
            labels.append("after the last step")
        else:
            labels.append(ctx.step_label(int(k)))
    return labels


def _groups(ctx: Context) -> dict[str, _Group]:
    groups: dict[str, _Group] = {}
    primary = ctx.host_events_of(EventClass.COMPILE_FRAMEWORK)
    lowering = ctx.host_events_of(EventClass.COMPILE_LOWERING)
    if not primary and not lowering:
        primary = ctx.host_events_of(EventClass.COMPILE_RUNTIME)
    events = primary or lowering
    dispatches = {id(t): (t, idx) for t, idx in ctx.host_events_of(EventClass.PROGRAM_DISPATCH)}
    metadata_programs = _jax_program_ids(ctx)
    for track, idx in events:
        owner = _enclosing(ctx, dispatches.get(id(track)), track, idx)
        graph_hashes = _graph_hashes(ctx, track, idx)
        for k, i in enumerate(idx):
            name = track.event_name(int(i))
            key = owner[k] or ctx.trace.dialect.compiled_function_of(name) or name
            group = groups.setdefault(key, _Group(key))
            group.events.append((track, int(i)))
            if graph_hashes[k]:
                group.details.add(f"graph_hash {graph_hashes[k]}")
    signatures = ctx.get(PROGRAM_SIGNATURES)
    for key, group in groups.items():
        program = ctx.trace.dialect.program_of_function(key)
        programs = metadata_programs.get(program)
        if programs and len(programs) > 1:
            group.details.add(f"program ids of {program} in {_metadata_plane(ctx)}: {', '.join(programs)}")
        group.signatures = signatures_of_module(signatures, program) or signatures_of_module(signatures, key)
    _add_tf_retracing(ctx, groups)
    return groups


def _graph_hashes(ctx: Context, track: Track, idx: np.ndarray) -> list[str]:
    """The `graph_hash` stat of each compile event as text ('' where absent).

    PyTorch/XLA writes it as a string stat (a hex digest), whose column holds string ids.
    """
    own = track.stats.column(Stat.GRAPH_HASH)
    meta = track.plane.metadata.stats.column(Stat.GRAPH_HASH)
    column, rows = (own, idx) if own is not None else (meta, track.meta_index[idx])
    if column is None:
        return [""] * len(idx)
    n_rows = len(track) if own is not None else len(track.plane.metadata)
    present = column.present(n_rows)[rows]
    values = column.dense(n_rows, 0)[rows]
    if column.kind == "str":
        return [ctx.trace.strings[int(v)] if ok else "" for ok, v in zip(present, values, strict=True)]
    return [str(v) if ok else "" for ok, v in zip(present, values, strict=True)]


def _enclosing(ctx: Context, dispatch, track: Track, idx: np.ndarray) -> list[str | None]:
    """For each compile event, the function of the outermost program dispatch around it (JAX
    `PjitFunction(<fn>)`)."""
    if dispatch is None:
        return [None] * len(idx)
    _, d_idx = dispatch
    d_starts = track.start_ps[d_idx]
    pos = np.searchsorted(d_starts, track.start_ps[idx], side="right") - 1
    inside = (pos >= 0) & (track.end_ps[d_idx][np.maximum(pos, 0)] >= track.end_ps[idx])
    names = []
    for ok, p in zip(inside, pos, strict=True):
        if ok:
            names.append(ctx.trace.dialect.dispatch_function_of(track.event_name(int(d_idx[p]))))
        else:
            names.append(None)
    return names


def _metadata_plane(ctx: Context) -> str:
    """The name of the plane that holds the compiled programs (XPlane's `/host:metadata`), for messages."""
    for plane in ctx.trace.planes:
        if plane.kind == KIND_METADATA:
            return plane.name
    return "the program metadata"


def _jax_program_ids(ctx: Context) -> dict[str, list[str]]:
    """Module name -> program ids, from `/host:metadata` entries named `<module>(<program_id>)`."""
    found: dict[str, list[str]] = {}
    for plane in ctx.trace.planes:
        if plane.kind != KIND_METADATA or not ctx.trace.dialect.program_name:
            continue
        for name_id in plane.metadata.name_ids:
            m = re.match(ctx.trace.dialect.program_name, ctx.trace.strings[int(name_id)])
            if m and m.group(1):
                found.setdefault(m.group(1), []).append(m.group(2))
    return {k: sorted(v, key=int) for k, v in found.items()}


def _add_tf_retracing(ctx: Context, groups: dict[str, _Group]) -> None:
    """tf.function calls that traced (tf_function_call = traced-*), grouped by function name."""
    traced_call = ctx.trace.dialect.traced_call
    if not traced_call:
        return
    traced_ids = ctx.trace.strings.ids_matching(traced_call, regex=True, ignore_case=False)
    if len(traced_ids) == 0:
        return
    for track in ctx.host_tracks:
        column = track.stats.column(Stat.STAGED_FUNCTION_CALL)
        if column is None:
            continue
        values = column.dense(len(track), -1)
        for i in np.flatnonzero(column.present(len(track)) & order_statistics.isin(values, traced_ids)):
            name = track.event_name(int(i))
            groups.setdefault(name, _Group(name)).events.append((track, int(i)))
