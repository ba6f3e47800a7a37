"""The JSON records the commands print with `--json`, built in one place so that every reader of them
(the CLI, the MCP server's tools in `tpuscope.agents`, the HTML report) gets the same numbers from
the same code, not a second formatting of the analyses that could drift.

Each function takes what the command has loaded (a `Trace`, a `TraceAnalysis`) and returns plain
dicts; a request the profile cannot answer (no device ops, a device or program it lacks, an op it
never ran) is a `RequestError` whose text is one sentence, which the CLI prints with exit 2 and the
MCP server returns as an error result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tpuscope.model.trace import Plane, Trace

if TYPE_CHECKING:  # `tpuscope info` imports this module and no analysis
    from tpuscope.analysis.op_graph import OpGraph
    from tpuscope.analysis.scope_tree import FlameTree
    from tpuscope.analysis.session import DeviceChoice, TraceAnalysis
    from tpuscope.app.history import History


class RequestError(Exception):
    """A request this profile cannot answer; str(error) is one sentence for the user."""


def plane_summary(plane: Plane) -> dict:
    return {
        "name": plane.name,
        "host": plane.host,
        "kind": plane.role,
        "device_kind": plane.kind,
        "index": plane.index,
        "device_type": plane.device_type,
        "peak_teraflops_per_second": plane.peak_teraflops_per_second,
        "peak_hbm_bw_gigabytes_per_second": plane.peak_hbm_bw_gigabytes_per_second,
        "events": plane.event_count,
        "lines": [{"name": t.name, "display_name": t.display_name, "events": len(t)} for t in plane.tracks],
    }


def trace_summary(trace: Trace) -> dict:
    """`tpuscope info --json`."""
    return {
        "sources": [str(s) for s in trace.sources],
        "hosts": trace.hosts,
        "planes": [plane_summary(p) for p in trace.planes],
        "events": trace.event_count,
        "duration_ps": trace.duration_ps,
        "errors": trace.errors,
        "warnings": trace.warnings,
        "load_warnings": trace.load_warnings,  # what the loader could not read (a file cut short)
        **trace.completeness.to_json(),  # whether that leaves the profile incomplete, and how much was read
    }


def _check_devices(analysis: TraceAnalysis, device: DeviceChoice, where: str) -> list:
    """The chosen devices; RequestError when the profile has none or none matches `device`."""
    devices = analysis.devices
    if not devices:
        raise RequestError(
            f"{where} holds no device ops: no TPU `XLA Ops`, no GPU kernels and no XLA:CPU thunks."
        )
    chosen = analysis.chosen_devices(device)
    if not chosen:
        names = ", ".join(f"{i}={d.name}" for i, d in enumerate(devices))
        raise RequestError(f"--device {device} matches no device; the profile has: {names}.")
    return chosen


def ops_rows(
    analysis: TraceAnalysis, by: str, device: DeviceChoice, top: int | None, where: str
) -> list[dict]:
    """The rows of `tpuscope ops --by BY --device DEVICE --top N` (`--json`'s `rows`, `--csv`'s lines)."""
    from tpuscope.analysis.programs import PROGRAM_CODE

    _check_devices(analysis, device, where)
    table = analysis.op_table(by, device)
    assert table is not None  # the chosen devices exist, so they have op events
    return table.rows_json(top, code=analysis.get(PROGRAM_CODE) if by == "op" else None)


def ops_json(
    analysis: TraceAnalysis,
    by: str,
    device: DeviceChoice,
    top: int | None,
    where: str,
    rows: list[dict] | None = None,
) -> dict[str, Any]:
    """`tpuscope ops --json` of one trace: the chosen devices, busy time, peaks, rows, steps."""
    devices = analysis.devices
    chosen = _check_devices(analysis, device, where)
    table = analysis.op_table(by, device)
    assert table is not None
    if rows is None:
        rows = ops_rows(analysis, by, device, top, where)
    breakdown = analysis.step_breakdown(device)
    assert breakdown is not None
    label = "all" if len(chosen) == len(devices) and len(devices) > 1 else ", ".join(d.name for d in chosen)
    steps = breakdown.to_json()
    duty_cycle = breakdown.duty_cycle
    headline = _pod_headline(analysis) if len(chosen) == len(devices) else None
    if headline is not None:  # several hosts: the pod's duty cycles, as overview --json and metrics print
        duty_cycle, steps["step_duty_cycle"] = headline["duty_cycle"], headline["step_duty_cycle"]
        steps["duty_cycles_over"] = headline["over"]
    return {
        "device": label,
        "devices": [d.label for d in chosen],
        "by": by,
        "busy_time_us": table.busy_ps / 1e6,
        "duty_cycle": duty_cycle,
        "peaks": None
        if table.peaks is None
        else {
            "teraflops_per_second": table.peaks.teraflops_per_second,
            "hbm_gigabytes_per_second": table.peaks.hbm_gigabytes_per_second,
            "source": table.peaks.source,
        },
        "rows": rows,
        "steps": steps,
    }


def _pod_headline(analysis: TraceAnalysis) -> dict[str, Any] | None:
    """A trace of several hosts: the pod's headline (`tpuscope.analysis.metrics.pod`, the mean over
    hosts), so that a key `ops --json` shares with `overview --json` and `tpuscope metrics` (the duty
    cycles) has their value; None for one host (the trace's own figures are the headline)."""
    if len(analysis.trace.hosts) < 2:
        return None
    from tpuscope.analysis.metrics.pod import headline_json, pod_metrics

    pod = analysis.pod
    return headline_json(pod_metrics(pod)) if len(pod.summaries) > 1 else None


def op_details_json(
    analysis: TraceAnalysis,
    name: str,
    program: str | None = None,
    device: DeviceChoice = "all",
    where: str = "",
) -> dict[str, Any]:
    """One op of `tpuscope ops --by op --json` with what the app's Details dock shows of it: its row,
    framework op, source line and function, stack as a traceback, HLO text and, for a fusion, the
    text of each instruction it fused. `program` picks among ops of one name in several programs."""
    from tpuscope.analysis.op_source import op_details
    from tpuscope.analysis.programs import PROGRAM_CODE

    _check_devices(analysis, device, where or "the profile")
    table = analysis.op_table("op", device)
    assert table is not None
    names = table.names()
    matches = [r for r, n in enumerate(names) if n == name]
    if program is not None:
        matches = [r for r in matches if table.program[r] and table.label(table.program[r]) == program]
    if not matches:
        in_program = f" in program {program!r}" if program is not None else ""
        raise RequestError(
            f"no op named {name!r}{in_program} ran on the chosen devices (the ops tool lists them)."
        )
    code = analysis.get(PROGRAM_CODE)
    rows = table.rows_json(max(matches) + 1, code=code)
    found = []
    for r in matches:
        details = op_details(table.events, int(table.first_event[r]), code)
        found.append(
            {
                **rows[r],
                "function": details.code.function,
                "traceback": details.traceback,
                "fused": list(details.code.fused),
                "fused_texts": list(details.fused_texts),
            }
        )
    return {"name": name, "matches": len(found), "ops": found}


def diagnose_json(analysis: TraceAnalysis, notes: list[str] | None = None) -> dict[str, Any]:
    """`tpuscope diagnose --json` of a run read as one trace: framework, steps, findings worst first,
    what was checked; a trace of several hosts adds the keys `--per-host`'s JSON has (`notes`: the
    pod's, `analysis.pod.notes()`, when not given)."""
    payload = analysis.report.to_json()
    hosts = list(analysis.trace.hosts)
    if len(hosts) < 2:
        return payload
    if notes is None:
        notes = analysis.pod.notes()
    return {**payload, "hosts": hosts, "unreadable": [], "notes": notes}


def memory_json(analysis: TraceAnalysis, program: str | None = None) -> dict[str, Any]:
    """`tpuscope memory --json [--program NAME|ID]`: programs at their peak, allocators over time."""
    from tpuscope.analysis.memory.report import MEMORY_REPORT, MemoryReport

    report = analysis.get(MEMORY_REPORT)
    if program is not None:
        chosen = report.program(program)
        if not chosen:
            known = ", ".join(sorted({p.name for p in report.programs})[:10]) or "none"
            raise RequestError(f"no program named {program!r} in this profile (programs: {known}).")
        report = MemoryReport(chosen, report.allocators, report.capacity_bytes, report.capacity_source)
    return report.to_json()


def history_json(history: History) -> dict[str, Any]:
    """`tpuscope history --json` without a gate: every run in order and how many were analysed now."""
    return {"runs": [e.to_json() for e in history.entries], "analysed_runs": history.analysed}


def metrics_json(analysis: TraceAnalysis) -> dict[str, Any]:
    """`tpuscope metrics --json` of a run read as one trace: every headline metric with its unit,
    definition and scope (`tpuscope.analysis.metrics`)."""
    from tpuscope.analysis.metrics import METRICS

    trace = analysis.trace
    return {
        "metrics": analysis.get(METRICS).to_json(),
        "analysed": "as one trace",
        "hosts": list(trace.hosts),
    }


def flame_json(
    analysis: TraceAnalysis, tree: FlameTree, by: str, fusion: str, device: DeviceChoice
) -> dict[str, Any]:
    """`tpuscope flame --format json`: the tree's nodes (`tpuscope.export.flame.tree_json`), its total
    and whether fusions' time was split by estimate."""
    from tpuscope.export.flame import ESTIMATE_FRAMES_NOTE, tree_json

    return {
        "by": by,
        "fusion": fusion,
        "devices": [d.label for d in analysis.chosen_devices(device)],
        "total_self_time_us": tree.total_self_ps / 1e6,
        "estimated": tree.has_estimates,
        "estimate_note": ESTIMATE_FRAMES_NOTE if tree.has_estimates else None,
        "nodes": tree_json(tree),
    }


def whole_flame_tree(
    analysis: TraceAnalysis, by: str, fusion: str, device: DeviceChoice, where: str
) -> FlameTree:
    """The flame tree of every op of the chosen devices (the shared result); RequestError without them."""
    from tpuscope.analysis.scope_tree import flame_tree_result

    _check_devices(analysis, device, where)
    found = analysis.get(flame_tree_result(by, fusion, device))
    assert found is not None  # the chosen devices exist, so they have op events
    return found


def op_graph_of(
    analysis: TraceAnalysis, op: str, radius: int, expand: bool, program: str | None, where: str
) -> OpGraph:
    """The HLO instructions around `op`, `radius` hops out, with their device time (`tpuscope graph`);
    RequestError (one sentence) for a radius out of range, a profile without programs or no such op."""
    from tpuscope.analysis.hlo_graph import OpNotFound
    from tpuscope.analysis.op_graph import MAX_RADIUS, NoPrograms, op_graph

    if not 0 <= radius <= MAX_RADIUS:
        raise RequestError(f"--radius must be 0 to {MAX_RADIUS} hops, not {radius}.")
    try:
        return op_graph(analysis, op, radius, expand, program)
    except NoPrograms:
        raise RequestError(
            f"{where} keeps no compiled programs (no HLO), so there is no graph to draw: XPlane "
            "profiles of XLA programs keep them in /host:metadata."
        ) from None
    except OpNotFound as missing:
        place = f" program {program}" if program else " any program of this profile"
        close = f"; close matches: {', '.join(missing.close)}" if missing.close else ""
        raise RequestError(f"No HLO op named {missing.name!r} in{place}{close}.") from None


def comms_json(analysis: TraceAnalysis) -> dict[str, Any]:
    """`tpuscope comms --json` of a run read as one trace: collectives per op, host and step, exposed
    against overlapped with compute."""
    from tpuscope.analysis.pod.comms_report import CommsReport

    return CommsReport.of(analysis.pod).to_json()
