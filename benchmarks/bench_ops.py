"""Op breakdown speed: gathering and grouping op events, per-step busy time, and sorting the Qt table.

    python benchmarks/bench_ops.py                 # the 1M-event TPU-shaped file (generated if missing)
    python benchmarks/bench_ops.py --events 10000000
    python benchmarks/bench_ops.py --rows 100000   # rows of the synthetic table for the sort timing

Targets (the issue's): a 100k-row op table sorts "instantly" (well under 100 ms per click), and the
breakdown of a 1M-event profile is computed in well under a second. Times are medians of --repeat.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from benchmarks.generate_xspace import default_path, generate  # noqa: E402
from tpuscope.analysis.device_ops import find_devices  # noqa: E402
from tpuscope.analysis.ops import GROUPINGS, OpEvents, _Labels, aggregate, collect_op_events  # noqa: E402
from tpuscope.analysis.step_breakdown import step_breakdown  # noqa: E402
from tpuscope.model.load import open_trace  # noqa: E402


def _median_s(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def synthetic_events(rows: int, events_per_row: int = 3, seed: int = 0) -> OpEvents:
    """OpEvents with `rows` distinct ops (no trace behind them): enough to build and sort a table."""
    rng = np.random.default_rng(seed)
    labels = _Labels()
    ids = np.array([labels.add(f"fusion.{i}") for i in range(rows)], np.int32)
    n = rows * events_per_row
    op = np.repeat(ids, events_per_row)
    time_ps = rng.integers(1_000, 10_000_000, n).astype(np.int64)
    return OpEvents(
        devices=[],
        labels=labels,
        device=np.zeros(n, np.int32),
        op=op,
        category=np.full(n, labels.add("loop fusion"), np.int32),
        program=np.full(n, labels.add("jit_f(1)"), np.int32),
        framework=np.zeros(n, np.int32),
        time_ps=time_ps,
        self_ps=time_ps,
        flops=rng.random(n) * 1e9,
        bytes_accessed=rng.random(n) * 1e8,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    path = default_path(args.events)
    if not path.exists():
        generate(args.events, path)
    trace = open_trace(path, use_cache=False)
    devices = find_devices(trace)
    print(f"{path.name}: {trace.event_count:,} events, {sum(d.op_count for d in devices):,} device ops")
    events = collect_op_events(trace, devices)

    def report(label: str, fn) -> None:
        print(f"{label:<32} {_median_s(fn, args.repeat) * 1e3:8.1f} ms")

    report("collect_op_events", lambda: collect_op_events(trace, devices))
    for by in GROUPINGS:
        report(f"aggregate by {by}", lambda by=by: aggregate(events, by))
    report("step_breakdown", lambda: step_breakdown(trace, devices))

    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from tpuscope.ui.ops_view import OpsTableModel

    _app = QApplication.instance() or QApplication([])
    table = aggregate(synthetic_events(args.rows), "op")
    model = OpsTableModel()
    report(f"table of {len(table):,} rows: set_table", lambda: model.set_table(table))
    for column, name in ((0, "name"), (3, "count"), (6, "self time"), (9, "GFLOP/s")):
        for order in (Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder):
            report(f"  sort by {name} {order.name}", lambda c=column, o=order: model.sort(c, o))
    report("  filter 'fusion.99'", lambda: model.set_filter("fusion.99"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
