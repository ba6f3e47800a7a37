"""Diagnosis speed: all rules (steps, framework, device busy time, every rule) on a large profile.

    python benchmarks/bench_diagnose.py                  # the 1M-event TPU-shaped file (generated if missing)
    python benchmarks/bench_diagnose.py --events 10000000

Target: diagnosing a 1M-event profile takes well under a second, so the Diagnostics view fills
about as soon as the timeline appears (it runs off the UI thread either way). Times are medians.

Peers, in the same run: XProf's converter on the same file, `overview_page` and
`input_pipeline_analyzer` (`xspace_to_tool_data`; a fresh copy per trial in a temporary folder,
as it saves a cache beside the file), the tools whose findings our rules cover (step time,
input-bound verdict, recommendations). Both sides are timed file to result: ours is `open_trace`
without the cache, then the analysis' report. Trials alternate; the real TPU sample is compared too.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_ops import REAL_TPU_SAMPLE, alternate, xprof_tool  # noqa: E402
from benchmarks.generate_xspace import default_path, generate  # noqa: E402
from tpuscope.analysis.diagnose import RULES  # noqa: E402
from tpuscope.analysis.session import FRAMEWORK, STEPS, TraceAnalysis  # noqa: E402
from tpuscope.app.opener import open_trace  # noqa: E402

XPROF_TOOLS = ("overview_page", "input_pipeline_analyzer")


def compare_with_xprof(path: Path, repeat: int) -> None:
    """Ours (file -> findings) against each XProf tool on the same file, with the ratios."""

    def ours():
        return TraceAnalysis(open_trace(path, use_cache=False)).report

    print(f"{path.name}: file -> result, medians of {repeat}, turn about")
    for tool in XPROF_TOOLS:
        ours_s, peer_s, report, (_, rows) = alternate(ours, lambda tool=tool: xprof_tool(path, tool), repeat)
        print(f"  tpuscope open_trace + diagnose   {ours_s * 1e3:8.1f} ms  {len(report.findings)} findings")
        print(f"  XProf {tool:<26} {peer_s * 1e3:8.1f} ms  {rows} table rows")
        print(f"  ratio XProf / tpuscope           {peer_s / ours_s:8.1f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-peer", action="store_true", help="skip XProf's tools")
    args = parser.parse_args()
    path = default_path(args.events)
    if not path.exists():
        generate(args.events, path)
    trace = open_trace(path)
    print(f"{path.name}: {trace.event_count:,} events")
    runs = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        report = TraceAnalysis(trace).report
        runs.append(time.perf_counter() - started)
    steps = f"{len(report.steps)} steps from {report.steps.source}"
    print(
        f"diagnose (all rules): {statistics.median(runs) * 1e3:.0f} ms median; "
        f"{len(report.findings)} findings, {steps}"
    )
    for rule_id, rule in RULES.items():
        ctx = TraceAnalysis(trace, known={STEPS: report.steps, FRAMEWORK: report.framework}).context
        started = time.perf_counter()
        rule(ctx)  # includes this rule's share of the shared, lazily computed context
        print(f"  {rule_id:<24} {(time.perf_counter() - started) * 1e3:8.0f} ms (cold context)")
    if not args.no_peer:
        for file in (path, REAL_TPU_SAMPLE):
            compare_with_xprof(file, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
