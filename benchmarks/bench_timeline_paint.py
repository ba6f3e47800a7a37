"""Timeline paint time on a 10M-event trace, from fully zoomed out to single events.

    python benchmarks/bench_timeline_paint.py [--events 10000000] [--path FILE] [--json]

Opens (generating first if needed, with benchmarks/generate_xspace.py) a
TPU-shaped profile, puts the real TimelineView in a fixed 1600x1000 viewport
(offscreen), and paints it into an image along a scripted sequence: the window
shrinks geometrically from the whole trace to a few events, and at every zoom
level it pans left and right; the same sequence is repeated scrolled down to
the nested host threads. Each paint includes the level-of-detail selection
and merging done for that frame, nothing is cached between steps that move
the window. Reports median and p95 paint time, frames per second, the slowest
steps, and the memory the view adds (its level-of-detail index) against the
model's. Targets (issue 3): p95 < 16 ms at every step; view memory < 10% of
the model's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from PySide6.QtGui import QImage, QPainter  # noqa: E402

from tpuscope.model.load import open_trace  # noqa: E402
from tpuscope.ui.app import application  # noqa: E402
from tpuscope.ui.timeline.lod import TimelineLod  # noqa: E402
from tpuscope.ui.timeline.view import TimelineView  # noqa: E402

VIEWPORT = (1600, 1000)
ZOOM_LEVELS = 28  # window widths from the whole trace down to ~100 ns, geometric
PANS_PER_LEVEL = 4
TARGET_P95_MS = 16.0  # one frame at 60 Hz (issue 3)
TARGET_MEMORY_SHARE = 0.10  # view memory / model memory (issue 3)


def trace_path(events: int, path: Path | None) -> Path:
    if path is not None:
        return path
    import generate_xspace

    found = generate_xspace.default_path(events)
    if not found.exists():
        print(f"generating {found} ...", file=sys.stderr)
        generate_xspace.generate(events, found)
    return found


def script(duration_ps: float, centre_ps: float) -> list[tuple[str, float, float]]:
    """(label, t0, t1) steps: zoom in geometrically around `centre_ps`, panning at each level."""
    steps = []
    narrowest = 100_000.0  # 100 ns: a handful of single ops on the generated TPU planes
    for level in range(ZOOM_LEVELS):
        width = duration_ps * (narrowest / duration_ps) ** (level / (ZOOM_LEVELS - 1))
        t0 = min(max(centre_ps - width / 2, 0.0), max(0.0, duration_ps - width))
        steps.append((f"zoom {width:.3g} ps", t0, t0 + width))
        for k in range(1, PANS_PER_LEVEL + 1):
            shift = (0.3 * width) * (1 if k % 2 else -1) * ((k + 1) // 2)
            steps.append((f"pan {width:.3g} ps", t0 + shift, t0 + shift + width))
    return steps


def paint_once(view: TimelineView, image: QImage) -> float:
    painter = QPainter(image)
    began = time.perf_counter()
    view.paint(painter)
    elapsed = time.perf_counter() - began
    painter.end()
    return elapsed * 1000


def run(events: int, path: Path | None) -> dict:
    app = application()  # noqa: F841 - Qt needs the application for fonts
    file = trace_path(events, path)
    began = time.perf_counter()
    trace = open_trace(file)
    load_s = time.perf_counter() - began
    began = time.perf_counter()
    lod = TimelineLod(trace)
    index_s = time.perf_counter() - began
    view = TimelineView()
    view.resize(*VIEWPORT)
    view.set_trace(trace, lod)
    image = QImage(*VIEWPORT, QImage.Format_ARGB32_Premultiplied)
    paint_once(view, image)  # warm-up: fonts, caches of Qt
    duration = float(trace.duration_ps)
    busiest = max((t for t in trace.tracks()), key=len)
    centre = float(busiest.start_ps[len(busiest) // 2])
    results = []
    for scroll, where in ((0, "devices"), (view.scrollbar.maximum(), "host threads")):
        view.scrollbar.setValue(scroll)
        for label, t0, t1 in script(duration, centre):
            view.t0_ps, view.t1_ps = t0, t1
            ms = paint_once(view, image)
            results.append((f"{where}: {label}", ms, view.last_frame.box_count))
    times = np.array([ms for _, ms, _ in results])
    model_bytes = trace.nbytes()
    view_bytes = lod.nbytes()
    slowest = sorted(results, key=lambda r: -r[1])[:5]
    return {
        "file": str(file),
        "events": trace.event_count,
        "viewport": list(VIEWPORT),
        "steps": len(results),
        "load_s": round(load_s, 2),
        "index_build_s": round(index_s, 2),
        "paint_median_ms": round(float(np.median(times)), 2),
        "paint_p95_ms": round(float(np.percentile(times, 95)), 2),
        "paint_max_ms": round(float(times.max()), 2),
        "fps_at_median": round(1000 / float(np.median(times)), 1),
        "max_boxes_per_frame": int(max(b for _, _, b in results)),
        "model_mb": round(model_bytes / 1e6, 1),
        "view_mb": round(view_bytes / 1e6, 2),
        "view_share_of_model": round(view_bytes / model_bytes, 4),
        "slowest": [{"step": s, "ms": round(ms, 2), "boxes": b} for s, ms, b in slowest],
        "meets_p95_target": bool(np.percentile(times, 95) < TARGET_P95_MS),
        "meets_memory_target": bool(view_bytes / model_bytes < TARGET_MEMORY_SHARE),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--path", type=Path, help="an existing profile instead of the generated one")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(args.events, args.path)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            if key != "slowest":
                print(f"{key:>22}: {value}")
        print("slowest steps:")
        for row in report["slowest"]:
            print(f"    {row['ms']:7.2f} ms  {row['boxes']:6d} boxes  {row['step']}")
    return 0 if report["meets_p95_target"] and report["meets_memory_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
