"""Diagnosis speed: all rules (steps, framework, device busy time, every rule) on a large profile.

    python benchmarks/bench_diagnose.py                  # the 1M-event TPU-shaped file (generated if missing)
    python benchmarks/bench_diagnose.py --events 10000000

Target: diagnosing a 1M-event profile takes well under a second, so the Diagnostics view fills
about as soon as the timeline appears (it runs off the UI thread either way). Times are medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.generate_xspace import default_path, generate  # noqa: E402
from tpuscope.analysis.diagnose import RULES, diagnose  # noqa: E402
from tpuscope.analysis.diagnose.context import Context  # noqa: E402
from tpuscope.model.load import open_trace  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    path = default_path(args.events)
    if not path.exists():
        generate(args.events, path)
    trace = open_trace(path)
    print(f"{path.name}: {trace.event_count:,} events")
    runs = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        report = diagnose(trace)
        runs.append(time.perf_counter() - started)
    steps = f"{len(report.steps)} steps from {report.steps.source}"
    print(
        f"diagnose (all rules): {statistics.median(runs) * 1e3:.0f} ms median; "
        f"{len(report.findings)} findings, {steps}"
    )
    for rule_id, rule in RULES.items():
        ctx = Context(trace, report.steps, report.framework)
        started = time.perf_counter()
        rule(ctx)  # includes this rule's share of the shared, lazily computed context
        print(f"  {rule_id:<24} {(time.perf_counter() - started) * 1e3:8.0f} ms (cold context)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
