"""Proves a layout change leaves every command's `--json` output unchanged, byte for byte.

    python benchmarks/check_json_outputs.py --save DIR      # before the change
    python benchmarks/check_json_outputs.py --compare DIR   # after it

Runs `overview`, `diagnose`, `ops` (by op and by category), `memory` and `info` with `--json` on
every real profile in the shared traces ($TPUSCOPE_TRACES, else ../shared/traces: tests/paths.py),
`compare` on pairs of them, and `overview`/`diagnose --per-host` on a run folder of two ranks, each
in its own process with the trace cache off, and saves (or compares) stdout, stderr and the exit
code. `--compare` prints one line per output that changed and exits 1 when any did.
"""

from __future__ import annotations

import argparse
import difflib
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
    changed = 0
    for (name, _), text in zip(todo, outputs, strict=True):
        before_file = args.compare / f"{name}.txt"
        before = before_file.read_text() if before_file.exists() else "(missing)\n"
        if before != text:
            changed += 1
            diff = list(difflib.unified_diff(before.splitlines(), text.splitlines(), "before", "after", n=1))
            print(f"CHANGED {name}:\n" + "\n".join(diff[:40]))
    print(f"{len(todo) - changed} identical, {changed} changed")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
