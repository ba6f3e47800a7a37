"""Proves a loader change leaves the loaded traces unchanged, column by column.

    python benchmarks/check_identical.py --save DIR [FILES...]     # before the change
    python benchmarks/check_identical.py --compare DIR [FILES...]  # after it

Without FILES it uses every real profile in the shared traces ($TPUSCOPE_TRACES, else
../shared/traces: tests/paths.py) plus the generated 1M-event file when present. The
snapshot holds every event column, every stat column (with strings resolved to text, so
interning order may change) and the plane/metadata tables; dtype narrowing of stat values
is allowed, value changes are not.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.paths import SHARED_TRACES  # noqa: E402
from tpuscope.app.opener import open_trace  # noqa: E402
from tpuscope.model.stats import StatTable  # noqa: E402
from tpuscope.model.trace import Trace  # noqa: E402


def _stats_snapshot(table: StatTable, trace: Trace) -> dict:
    out = {"n_rows": table.n_rows}
    for name, col in sorted(table.columns.items()):
        values = col.values
        if col.kind == "str":
            values = [trace.strings[int(v)] for v in np.unique(values)], \
                np.unique(values, return_inverse=True)[1]  # fmt: skip
        elif col.kind == "bytes":
            values = [trace.blobs[int(v)] for v in values]
        else:
            values = values.astype(np.float64 if col.kind == "float" else np.int64 if col.kind == "int" else
                                   values.dtype)  # fmt: skip
        out[name] = (col.kind, None if col.rows is None else col.rows.astype(np.int64), values)
    return out


def snapshot(trace: Trace) -> dict:
    """A plain, comparable description of everything a Trace holds."""
    planes = []
    for plane in trace.planes:
        md = plane.metadata
        tracks = []
        for t in plane.tracks:
            tracks.append({
                "ids": (t.line_id, t.display_id, t.name, t.display_name),
                "start_ps": t.start_ps.astype(np.int64), "duration_ps": t.duration_ps.astype(np.int64),
                "meta_index": t.meta_index.astype(np.int64), "depth": t.depth.astype(np.int64),
                "names": [trace.strings[int(i)] for i in np.unique(t.name_id)],
                "name_inverse": np.unique(t.name_id, return_inverse=True)[1],
                "stats": _stats_snapshot(t.stats, trace),
            })  # fmt: skip
        planes.append({
            "ids": (plane.plane_id, plane.name, plane.host), "stats": plane.stats,
            "meta_ids": md.ids.astype(np.int64), "meta_names": [trace.strings[int(i)] for i in md.name_ids],
            "display_names": list(md.display_names), "children": list(md.child_ids),
            "meta_stats": _stats_snapshot(md.stats, trace), "tracks": tracks,
        })  # fmt: skip
    return {"planes": planes, "origin_ns": trace.origin_ns, "duration_ps": trace.duration_ps,
            "hosts": trace.hosts, "errors": trace.errors, "warnings": trace.warnings,
            "event_count": trace.event_count}  # fmt: skip


def differences(a, b, path: str = "") -> list[str]:
    """Human-readable paths where two snapshots differ (empty when identical)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(a)} != {sorted(b)}"]
        return [d for k in a for d in differences(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        pairs = enumerate(zip(a, b, strict=True))
        return [d for i, (x, y) in pairs for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        same = a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
        return [] if same else [f"{path}: arrays differ"]
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return []
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def default_files() -> list[Path]:
    files = sorted(SHARED_TRACES.glob("*/*.xplane.pb"))
    generated = ROOT / "benchmarks" / "data" / "tpu_1M" / "tpu_1M.xplane.pb"
    return files + ([generated] if generated.exists() else [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", type=Path, metavar="DIR")
    mode.add_argument("--compare", type=Path, metavar="DIR")
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args(argv)
    failed = False
    for file in args.files or default_files():
        snap = snapshot(open_trace(file, use_cache=False))
        stored = (args.save or args.compare) / f"{file.name}.snapshot.pkl"
        if args.save:
            stored.parent.mkdir(parents=True, exist_ok=True)
            stored.write_bytes(pickle.dumps(snap, protocol=5))
            print(f"saved {file.name}: {snap['event_count']} events")
            continue
        diffs = differences(pickle.loads(stored.read_bytes()), snap)
        failed |= bool(diffs)
        print(f"{file.name}: " + ("identical" if not diffs else f"{len(diffs)} differences, e.g.\n  " +
                                   "\n  ".join(diffs[:10])))  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
