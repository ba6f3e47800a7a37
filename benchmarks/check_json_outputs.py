"""Proves a layout change leaves every command's `--json` output unchanged, byte for byte.

    python benchmarks/check_json_outputs.py --save DIR      # before the change
    python benchmarks/check_json_outputs.py --compare DIR   # after it

Runs `overview`, `diagnose`, `ops` (by op and by category), `memory` and `info` with `--json` on
every real profile in the shared traces ($TPUSCOPE_TRACES, else ../shared/traces: tests/paths.py),
`compare` on pairs of them, and `overview`/`diagnose --per-host` on a run folder of two ranks, each
in its own process with the trace cache off, and saves (or compares) stdout, stderr and the exit
code. `--compare` prints one line per output that changed and exits 1 when any did. An output whose
JSON holds the same values in other text (a float's notation, 1e-05 or 0.00001; NaN written as null)
is counted apart, as the same values, and does not fail the check.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.paths import SHARED_TRACES  # noqa: E402

PROFILE_SUFFIXES = (".xplane.pb", ".json.gz")
COMMANDS = (
    ("info", ["info", "{p}", "--json"]),
    ("overview", ["overview", "{p}", "--json"]),
    ("diagnose", ["diagnose", "{p}", "--json"]),
    ("ops", ["ops", "{p}", "--json"]),
    ("ops_category", ["ops", "{p}", "--by", "category", "--json"]),
    ("memory", ["memory", "{p}", "--json"]),
)


def profiles() -> list[Path]:
    found = [p for p in sorted(SHARED_TRACES.rglob("*")) if p.is_file() and p.name.endswith(PROFILE_SUFFIXES)]
    return found


def jobs(pod_folder: Path) -> list[tuple[str, list[str]]]:
    out = []
    files = profiles()
    for path in files:
        for name, args in COMMANDS:
            out.append((f"{path.name}.{name}", [a.format(p=path) for a in args]))
    by_name = {p.name: p for p in files}
    pairs = [
        ("trace_filter__sampled_rank-0.json.gz", "trace_filter__sampled_rank-1.json.gz"),
        ("tpu_v6e_inference_4chip.xplane.pb", "jax_mi300x_attention.xplane.pb"),
        ("critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
         "negative_queue_length_values_check__rank0.json.gz"),
    ]  # fmt: skip
    for base, new in pairs:
        if base in by_name and new in by_name:
            out.append(
                (f"compare.{base}.{new}", ["compare", str(by_name[base]), str(by_name[new]), "--json"])
            )
    out.append(("pod.overview", ["overview", str(pod_folder), "--json"]))
    out.append(("pod.diagnose", ["diagnose", str(pod_folder), "--json"]))
    out.append(("pod.diagnose_per_host", ["diagnose", str(pod_folder), "--json", "--per-host"]))
    return out


def run_one(args: list[str]) -> str:
    env = dict(os.environ, TPUSCOPE_NO_CACHE="1", TPUSCOPE_CACHE_MAX="0")
    done = subprocess.run(
        [sys.executable, "-m", "tpuscope", *args], capture_output=True, text=True, env=env, cwd=ROOT
    )
    return f"exit {done.returncode}\n--- stderr\n{done.stderr}--- stdout\n{done.stdout}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", type=Path)
    group.add_argument("--compare", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pod = Path(tmp) / "run"
        pod.mkdir()
        for rank in (0, 1):
            src = SHARED_TRACES / "kineto" / f"trace_filter__sampled_rank-{rank}.json.gz"
            shutil.copy(src, pod / f"rank{rank}.pt.trace.json.gz")
        todo = jobs(pod)
        with ThreadPoolExecutor(args.jobs) as pool:
            outputs = list(pool.map(lambda job: run_one(job[1]), todo))
        outputs = [o.replace(tmp, "<tmp>") for o in outputs]
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
        for (name, _), text in zip(todo, outputs, strict=True):
            (args.save / f"{name}.txt").write_text(text)
        print(f"saved {len(todo)} outputs to {args.save}")
        return 0
    changed = same_values = 0
    for (name, _), text in zip(todo, outputs, strict=True):
        before_file = args.compare / f"{name}.txt"
        before = before_file.read_text() if before_file.exists() else "(missing)\n"
        if before != text and _same_values(before, text):
            same_values += 1
        elif before != text:
            changed += 1
            diff = list(difflib.unified_diff(before.splitlines(), text.splitlines(), "before", "after", n=1))
            print(f"CHANGED {name}:\n" + "\n".join(diff[:40]))
    identical = len(todo) - changed - same_values
    print(f"{identical} identical, {same_values} the same values in other JSON text, {changed} changed")
    return 1 if changed else 0


def _same_values(before: str, after: str) -> bool:
    """Whether two saved outputs have the same exit code and stderr, and stdouts that read as the same
    JSON values (NaN and null alike)."""
    head_before, _, out_before = before.partition("--- stdout\n")
    head_after, _, out_after = after.partition("--- stdout\n")
    if head_before != head_after:
        return False
    try:
        return _nan_as_none(json.loads(out_before)) == _nan_as_none(json.loads(out_after))
    except ValueError:
        return False


def _nan_as_none(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [_nan_as_none(v) for v in value]
    if isinstance(value, dict):
        return {k: _nan_as_none(v) for k, v in value.items()}
    return value


if __name__ == "__main__":
    sys.exit(main())
