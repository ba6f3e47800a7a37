"""One self-contained HTML page about a profile, to attach to a bug report or a review instead of a
screenshot or the raw profile: the overview cards, the per-step chart, the findings with their
evidence and advice, the top ops with their source lines, memory at the peak, what was checked, and
where it all came from (paths, versions, load warnings).

Self-contained means it reads anywhere, offline and years later: the style is inline CSS, the chart
inline SVG, there is no script and no remote reference (no font, image, style or script from a
network), and it prints (a print style sheet; nothing depends on hovering or clicking). The numbers are
the analyses' own records, the ones `tpuscope overview/diagnose/ops/memory --json` print, so the page
never disagrees with the command line. The output is deterministic: no time of writing is in it.
"""

from __future__ import annotations

import html
import platform
from typing import TYPE_CHECKING, Any

from tpuscope.model.units import format_bytes, format_duration, format_percent, format_percent_value

if TYPE_CHECKING:
    from tpuscope.analysis.session import TraceAnalysis

TOP_OPS = 15  # op rows in the report (the rest: `tpuscope ops`)
TOP_BUFFERS = 8  # buffers listed per program at its peak
TOP_PROGRAMS = 5  # programs listed by memory peak
TOP_EVIDENCE = 6  # evidence items listed per finding
# Steps drawn as bars; a longer run draws its first ones and says how many there are (our heuristic:
# past ~500 bars an A4 page's width gives each less than a printed line's width).
MAX_CHART_STEPS = 500
# The step parts, in the Overview tab's order and colours (colour-blind-safe Tableau 10 hues).
PARTS = (("busy", "device busy", "#4e79a7"), ("input", "waiting for input", "#f28e2b"),
         ("compile", "compiling", "#b07aa1"), ("idle", "other idle", "#bab0ac"))  # fmt: skip
SEVERITY_COLOURS = {"critical": "#c0392b", "warning": "#d68910", "info": "#5d6d7e"}

STYLE = """
body{font:14px/1.45 -apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1c2833;
  margin:0 auto;max-width:1100px;padding:24px}
h1{font-size:1.6em;margin:0 0 4px}h2{font-size:1.2em;margin:28px 0 8px;border-bottom:1px solid #d5d8dc;
  padding-bottom:4px}h3{font-size:1.07em;margin:16px 0 4px}.finding h3{margin-top:0}
.sub{color:#566573;margin:0 0 12px;word-break:break-all}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #d5d8dc;border-radius:6px;padding:8px 12px;min-width:0;flex:1 1 150px;
  overflow-wrap:anywhere}
.card .k{color:#566573;font-size:.86em}.card .v{font-size:1.2em;font-weight:600}
.card .d{color:#566573;font-size:.86em}
table{border-collapse:collapse;width:100%;font-size:.93em}
th,td{border-bottom:1px solid #eaeded;padding:4px 6px;text-align:left;vertical-align:top;
  overflow-wrap:break-word}th{white-space:nowrap}td.mono,td .mono{overflow-wrap:anywhere}
th{background:#f4f6f6}td.n{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
code,.mono{font-family:"SFMono-Regular",Consolas,"Liberation Mono",monospace;font-size:.86em;
  word-break:break-all}
.finding{border:1px solid #d5d8dc;border-left:6px solid #5d6d7e;border-radius:4px;padding:8px 12px;
  margin:10px 0}
.badge{display:inline-block;color:#fff;border-radius:3px;padding:0 6px;font-size:.8em;
  text-transform:uppercase;margin-right:6px;vertical-align:middle}
.cost{font-weight:600;margin:2px 0 6px}.muted{color:#566573}
ul{margin:4px 0 4px 18px;padding:0}
.legend span{display:inline-block;margin-right:14px;font-size:.86em}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
svg{max-width:100%;height:auto}
@media print{body{max-width:none;padding:0;font-size:12px}.card,tr,svg,.finding h3,.cost{break-inside:avoid}
  h2,h3,p.label{break-after:avoid}a{color:inherit;text-decoration:none}}
"""


def report_html(analysis: TraceAnalysis, title: str | None = None) -> str:
    """The page (see the module docstring) for one loaded profile."""
    from tpuscope.analysis.memory.report import MEMORY_REPORT
    from tpuscope.analysis.programs import PROGRAM_CODE

    trace = analysis.trace
    overview = analysis.overview.to_json(top_ops=TOP_OPS)
    report = analysis.report.to_json()
    table = analysis.op_table("op", "all") if analysis.devices else None
    ops = table.rows_json(TOP_OPS, code=analysis.get(PROGRAM_CODE)) if table is not None else []
    memory = analysis.get(MEMORY_REPORT).to_json()
    sources = [str(s) for s in trace.sources]
    heading = title or "tpuscope report: " + ", ".join(s.rsplit("/", 1)[-1] for s in sources)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(heading)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{_e(heading)}</h1>",
        f'<p class="sub">{_e(", ".join(sources))}</p>',
        _cards(overview),
        _steps_chart(overview),
        _findings(report),
        _ops(ops, table is not None and len(table) or 0),
        _memory(memory),
        _checked(report),
        _provenance(trace, overview, report),
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _card(key: str, value: str, detail: str = "") -> str:
    extra = f'<div class="d">{_e(detail)}</div>' if detail else ""
    return f'<div class="card"><div class="k">{_e(key)}</div><div class="v">{_e(value)}</div>{extra}</div>'


def _cards(o: dict[str, Any]) -> str:
    devices = o["devices"]
    label = f"{devices['count']} x {devices['type'] or devices['kind']}" if devices["count"] else "none"
    steps = o["steps"]
    cards = [
        _card(
            "Devices", label, f"{devices['active']} ran ops" if devices["active"] < devices["count"] else ""
        ),
        _card(
            "Hosts", str(len(o["hosts"])), ", ".join(o["hosts"][:4]) + (" ..." if len(o["hosts"]) > 4 else "")
        ),
        _card("Framework", o["framework"]["name"], o["framework"]["evidence"]),
        _card("Span", format_duration(o["span_us"] * 1e6)),
        _card("Steps", str(steps["count"]), steps["description"] if steps["count"] else "no steps found"),
    ]
    if o["step_time"] is not None:
        t = o["step_time"]
        spread = f"mean {format_duration(t['mean_us'] * 1e6)}, p95 {format_duration(t['p95_us'] * 1e6)}"
        cards.append(_card("Step time (median)", format_duration(t["median_us"] * 1e6), spread))
    if o["duty_cycle"] is not None:
        within = (
            "" if o["step_duty_cycle"] is None else f"{format_percent(o['step_duty_cycle'])} of step time"
        )
        cards.append(_card("Duty cycle", format_percent(o["duty_cycle"]), within))
    top = o["findings"][0] if o["findings"] else None
    cards.append(_card("Findings", str(len(o["findings"])), top["title"] if top else "no problems found"))
    return '<h2>Overview</h2><div class="cards">' + "".join(cards) + "</div>"


def _steps_chart(o: dict[str, Any]) -> str:
    """The per-step stacked bars (busy, input, compile, idle) as inline SVG, a legend and the split."""
    rows = o["per_step"]
    if not rows:
        return '<h2>Steps</h2><p class="muted">No steps were found, so there is no per-step chart.</p>'
    shown = rows[:MAX_CHART_STEPS]
    width, height, left, bottom, top = 1000, 220, 56, 24, 8
    plot_w, plot_h = width - left - 8, height - bottom - top
    longest = max((r["duration_us"] for r in shown), default=0.0) or 1.0
    bar = plot_w / len(shown)
    gap = min(1.0, bar * 0.15)
    shapes = []
    for k, r in enumerate(shown):
        x = left + k * bar
        y = float(top + plot_h)
        for part, label, colour in PARTS:
            value = r.get(f"{part}_us") or 0.0
            h = plot_h * value / longest
            if h <= 0:
                continue
            y -= h
            shapes.append(f'<rect x="{x:.2f}" y="{y:.2f}" width="{max(bar - gap, 0.3):.2f}" height="{h:.2f}" '
                          f'fill="{colour}"><title>step {r["step"]}: {_e(label)} '
                          f'{_e(format_duration(value * 1e6))}</title></rect>')  # fmt: skip
    ticks = []
    for fraction in (0.0, 0.5, 1.0):
        ty = top + plot_h * (1 - fraction)
        label_text = _e(format_duration(longest * fraction * 1e6, ".3g")) if fraction else "0"
        ticks.append(
            f'<line x1="{left - 4}" x2="{width - 8}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="#d5d8dc"/>'
            f'<text x="{left - 6}" y="{ty + 4:.1f}" text-anchor="end" font-size="11" fill="#566573">'
            f"{label_text}</text>"
        )
    first, last = shown[0]["step"], shown[-1]["step"]
    axis = (f'<text x="{left}" y="{height - 6}" font-size="11" fill="#566573">step {first}</text>'
            f'<text x="{width - 8}" y="{height - 6}" font-size="11" fill="#566573" text-anchor="end">'
            f"step {last}</text>")  # fmt: skip
    svg = (f'<svg viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="time per step">{"".join(ticks)}{"".join(shapes)}{axis}</svg>')  # fmt: skip
    legend = "".join(f'<span><i style="background:{c}"></i>{_e(label)}</span>' for _, label, c in PARTS)
    split = o["step_time_split_percent"] or {}
    said = ", ".join(f"{label} {format_percent_value(split[p])}" for p, label, _ in PARTS if p in split)
    more = f" The first {len(shown)} of {len(rows)} steps are drawn." if len(rows) > len(shown) else ""
    return (f"<h2>Time per step</h2><div class=\"legend\">{legend}</div>{svg}"
            f'<p class="muted">Step time split: {_e(said)}.{more}</p>')  # fmt: skip


def _cost(finding: dict[str, Any]) -> str:
    impact = finding.get("impact")
    if impact is None:
        return finding.get("impact_note") or "Cost not measured."
    if impact.get("percent_of_step_time") is not None:
        per_step = (
            f" ({impact['ms_per_step']:g} ms per step)" if impact.get("ms_per_step") is not None else ""
        )
        words = f"Costs {format_percent_value(impact['percent_of_step_time'])} of each step{per_step}"
    elif impact.get("bytes") is not None:
        share = impact.get("percent_of_capacity")
        words = f"{format_bytes(impact['bytes'])} at stake" + (
            f", {share:g}% of capacity" if share is not None else ""
        )
    else:
        words = "Cost not measured"
    return f"{words}: {impact['basis']}" if impact.get("basis") else words


def _evidence_item(item: dict[str, Any]) -> str:
    where = []
    if item.get("start_ps") is not None and item.get("end_ps") is not None:
        where.append(f"{format_duration(item['start_ps'])} to {format_duration(item['end_ps'])}")
    for key in ("host", "plane", "track"):
        if item.get(key):
            where.append(str(item[key]))
    tail = f' <span class="muted">({_e("; ".join(where))})</span>' if where else ""
    return f"<li>{_e(item.get('label') or item.get('kind') or 'evidence')}{tail}</li>"


def _scalar_metrics(metrics: dict[str, Any]) -> str:
    pairs = [f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v}" for k, v in metrics.items()
             if isinstance(v, (int, float, str)) and not isinstance(v, bool)]  # fmt: skip
    return f'<p class="mono muted">{_e(", ".join(pairs))}</p>' if pairs else ""


def _findings(report: dict[str, Any]) -> str:
    findings = report["findings"]
    if not findings:
        return "<h2>Findings</h2><p>No problems found (what was checked is listed below).</p>"
    blocks = []
    for f in findings:
        colour = SEVERITY_COLOURS.get(f["severity"], "#5d6d7e")
        evidence = f.get("evidence") or []
        listed = "".join(_evidence_item(e) for e in evidence[:TOP_EVIDENCE])
        more = (
            f'<li class="muted">and {len(evidence) - TOP_EVIDENCE} more</li>'
            if len(evidence) > TOP_EVIDENCE
            else ""
        )
        advice = "".join(f"<li>{_e(a)}</li>" for a in f.get("advice") or [])
        blocks.append(
            f'<div class="finding" style="border-left-color:{colour}">'
            f'<h3><span class="badge" style="background:{colour}">{_e(f["severity"])}</span>'
            f"{_e(f['title'])}</h3>"
            f'<p class="cost">{_e(_cost(f))}</p><p>{_e(f["explanation"])}</p>'
            + _scalar_metrics(f.get("metrics") or {})
            + (f'<p class="label"><b>Evidence</b></p><ul>{listed}{more}</ul>' if listed else "")
            + (f'<p class="label"><b>Advice</b></p><ul>{advice}</ul>' if advice else "")
            + f'<p class="muted mono">rule: {_e(f["id"])}</p></div>'
        )
    errors = "".join(
        f'<p class="muted">Rule {_e(rule)} could not run on this profile: {_e(error)}</p>'
        for rule, error in (report.get("rule_errors") or {}).items()
    )
    return f"<h2>Findings ({len(findings)}, worst first)</h2>" + "".join(blocks) + errors


def _ops(rows: list[dict[str, Any]], total: int) -> str:
    if not rows:
        return '<h2>Top ops</h2><p class="muted">No device ops in this profile.</p>'
    body = []
    for r in rows:
        where = r.get("source") or ""
        framework = r.get("framework_op") or ""
        body.append(
            f'<tr><td class="mono">{_e(r["name"])}<div class="muted">{_e(r.get("program") or "")}</div></td>'
            f"<td>{_e(r.get('category') or '')}</td>"
            f'<td class="n">{_e(format_duration(r["self_time_us"] * 1e6))}</td>'
            f'<td class="n">{_e(format_percent_value(r["percent"]))}</td>'
            f'<td class="n">{r["occurrences"]:,}</td><td>{_e(r["bound_by"])}</td>'
            f'<td class="mono">{_e(where) or "<span class=muted>-</span>"}'
            f'<div class="muted">{_e(framework)}</div></td></tr>'
        )
    head = ("<tr><th>op (program)</th><th>category</th><th>self time</th><th>share</th><th>count</th>"
            "<th>bound by</th><th>source line (framework op)</th></tr>")  # fmt: skip
    return (f"<h2>Top ops by self time ({len(rows)} of {total:,}; all: <code>tpuscope ops PATH</code>)</h2>"
            f"<table>{head}{''.join(body)}</table>")  # fmt: skip


def _memory(memory: dict[str, Any]) -> str:
    programs = sorted(memory["programs"], key=lambda p: -p["peak_heap_bytes"])[:TOP_PROGRAMS]
    allocators = memory["allocators"]
    if not programs and not allocators:
        return '<h2>Memory at peak</h2><p class="muted">This profile has no memory data.</p>'
    parts = ["<h2>Memory at peak</h2>"]
    if memory.get("capacity_bytes"):
        parts.append(f"<p>Capacity {_e(format_bytes(memory['capacity_bytes']))} per device "
                     f"({_e(memory.get('capacity_source') or '')}).</p>")  # fmt: skip
    for p in programs:
        share = (
            f", {100 * p['peak_heap_bytes'] / p['capacity_bytes']:.1f}% of the chip"
            if p.get("capacity_bytes")
            else ""
        )
        rows = "".join(
            f'<tr><td class="n">{_e(format_bytes(b["bytes"]))}</td><td class="mono">{_e(b["shape"])}</td>'
            f'<td class="mono">{_e(b["defined_by"])}</td><td>{_e(b["category"])}</td>'
            f'<td class="mono">{_e(b.get("framework_op") or "")}</td></tr>'
            for b in p["buffers_at_peak"][:TOP_BUFFERS]
        )
        more = len(p["buffers_at_peak"]) - TOP_BUFFERS
        parts.append(
            f'<h3 class="mono">{_e(p["name"])} [{_e(p["memory_space_name"])}]</h3>'
            f"<p>peak {_e(format_bytes(p['peak_heap_bytes']))}{_e(share)}, unpadded "
            f"{_e(format_bytes(p['peak_unpadded_heap_bytes']))}"
            + (f", at <code>{_e(p['peak_instruction'])}</code>" if p.get("peak_instruction") else "")
            + "</p>"
            + (
                "<table><tr><th>size</th><th>shape</th><th>defined by</th><th>category</th>"
                f"<th>framework op</th></tr>"
                f"{rows}</table>"
                if rows
                else ""
            )  # fmt: skip
            + (f'<p class="muted">and {more} more buffers</p>' if more > 0 else "")
        )
    if len(memory["programs"]) > len(programs):
        parts.append(f"<p class=\"muted\">{len(memory['programs']) - len(programs)} more programs: "
                     "<code>tpuscope memory PATH</code>.</p>")  # fmt: skip
    if allocators:
        rows = "".join(
            f'<tr><td class="mono">{_e(a["id"])}</td><td>{_e(a["host"])}</td>'
            f'<td class="n">{_e(format_bytes(a["peak_bytes_in_use"]))}</td>'
            f'<td class="n">{_e(format_bytes(a["capacity_bytes"]) if a.get("capacity_bytes") else "-")}</td>'
            f'<td class="n">{_e(a["peak_step"] if a.get("peak_step") is not None else "-")}</td></tr>'
            for a in allocators
        )
        parts.append("<h3>Allocators</h3><table><tr><th>allocator</th><th>host</th><th>lifetime peak</th>"
                     f"<th>capacity</th><th>step of the peak</th></tr>{rows}</table>")  # fmt: skip
    return "".join(parts)


def _checked(report: dict[str, Any]) -> str:
    checked = report.get("checked") or []
    if not checked:
        return ""
    rows = "".join(
        f'<tr><td class="mono">{_e(c["rule"])}</td><td>{_e(c["summary"])}</td></tr>' for c in checked
    )
    return f"<h2>What was checked ({len(checked)} rules)</h2><table>{rows}</table>"


def _provenance(trace: Any, o: dict[str, Any], report: dict[str, Any]) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("tpuscope")
    except PackageNotFoundError:
        ours = "unknown"
    devices = o["devices"]
    items = [
        ("Profile", ", ".join(str(s) for s in trace.sources)),
        ("Hosts", ", ".join(trace.hosts) or "-"),
        ("Devices", f"{devices['count']} {devices['type'] or devices['kind'] or ''}".strip()),
        ("Framework", f"{o['framework']['name']} ({o['framework']['evidence']})"),
        ("Steps from", o["steps"]["description"] or "-"),
        ("Events", f"{trace.event_count:,}"),
        ("Written by", f"tpuscope {ours}, Python {platform.python_version()}"),
    ]
    notes = [("Load warning", w) for w in trace.load_warnings] + [("Note", w) for w in trace.warnings]
    notes += [("Error recorded by the profiler", e) for e in trace.errors]
    rows = "".join(f'<tr><th>{_e(k)}</th><td class="mono">{_e(v)}</td></tr>' for k, v in items + notes)
    reason = report.get("incomplete_reason") or "part of the profile could not be read"
    complete = "" if report.get("complete", True) else f"<p><b>Incomplete:</b> {_e(reason)}</p>"
    return f"<h2>Provenance</h2>{complete}<table>{rows}</table>"
