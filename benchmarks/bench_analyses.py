"""Analyses at decode speed: `overview` and `diagnose` against `info` on a real 1M-event JAX CPU profile.

    python benchmarks/bench_analyses.py                  # the 1M JAX CPU recording (recorded if missing)
    python benchmarks/bench_analyses.py --events 200000 --repeat 5
    python benchmarks/bench_analyses.py --pod 8          # and a run folder of 8 copies of that host file
    python benchmarks/bench_analyses.py --before SRC     # another tree too (SRC holds its tpuscope/)

`info` is the decode alone (read the file, build the columns); `overview --json` and
`diagnose --json` are the same decode and then every analysis. Each is a whole `tpuscope`
process, the commands alternate round after round (so a busy neighbour slows them alike), and
the medians and each one's ratio to `info` of the same run are printed, for the wall time and for the CPU time
(all threads). The target (issue 32):
overview and diagnose at most 1.5x info. Both trace-cache modes are timed: cache on, warmed by a
first untimed round (the decode is a cache read), and `TPUSCOPE_NO_CACHE=1` (the decode is the
file's); `--cache` or `--no-cache` times one.

The processes get this environment as it is. `--as-installed` runs them as an installed package
runs: byte-compiled modules (a bytecode cache in a temporary folder, warmed by the first round)
and a buffered stdout, where PYTHONDONTWRITEBYTECODE or PYTHONUNBUFFERED are set here.

`--before SRC` times the same commands of another tree in the same rounds (SRC holds its
`tpuscope/` with the built `.so` files, e.g. `git archive REF | tar -x -C SRC` and the `.so` files
copied), for before/after figures that one busy minute cannot skew. `--pod N` times the same
commands on a run folder holding N hard links of the host file (N hosts, one file's disk).

`--instructions` counts instead of timing: each command once under valgrind's cachegrind (the
instructions executed by all its threads, `I refs`), as installed and with the trace cache off.
On a shared 2-vCPU machine `info`'s wall time moved 0.26-0.37 s between runs of the same tree,
and the ratios with it; the counts repeat to 0.1% from run to run, so a change's own effect shows.
They are not the target (wall time is: `info` decodes on both cores, the analyses run mostly on
one), but they say what each command's work is. Needs `valgrind` (Debian's package).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_pods import link_hosts  # noqa: E402
from benchmarks.record_jax_profile import DEFAULT_DIR, find_or_record  # noqa: E402

COMMANDS = {
    "info": ["info", "{path}"],
    "overview --json": ["overview", "{path}", "--json"],
    "diagnose --json": ["diagnose", "{path}", "--json"],
}
TARGET_RATIO = 1.5  # issue 32: an analysis command takes at most this many times `info`


def environment(use_cache: bool, bytecode_dir: Path | None) -> dict[str, str]:
    """The processes' environment: the trace cache on or off, and, with a bytecode folder, as an
    installed package runs (compiled modules kept, stdout buffered)."""
    env = dict(os.environ)
    env.pop("TPUSCOPE_NO_CACHE", None)
    if not use_cache:
        env["TPUSCOPE_NO_CACHE"] = "1"
    if bytecode_dir is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("PYTHONUNBUFFERED", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode_dir)
    return env


def timed(args: list[str], tree: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (all threads, user and system) of one whole `tpuscope` process of `tree`;
    its output is read and dropped. On a shared machine the CPU seconds move less than the wall."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "tpuscope", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,
        timeout=3600,
    )
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"tpuscope {' '.join(args)} in {tree} failed: {result.stderr.strip()}")
    return seconds, _children_cpu() - cpu_before


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def alternate(
    path: Path, trees: list[Path], repeat: int, env: dict[str, str], scratch: Path
) -> dict[Path, dict[str, tuple[float, float]]]:
    """Per tree, the median wall seconds of each command; trees and commands alternate each round,
    after one untimed round (it writes the trace cache entry and the bytecode the timed ones read).
    Each tree gets its own trace cache folder under `scratch`: two versions never read each other's."""
    argv = {name: [a.format(path=path) for a in args] for name, args in COMMANDS.items()}
    envs = {tree: dict(env, TPUSCOPE_CACHE_DIR=str(scratch / f"cache{k}")) for k, tree in enumerate(trees)}
    for tree in trees:
        for args in argv.values():
            timed(args, tree, envs[tree])
    runs: dict[Path, dict[str, list[tuple[float, float]]]] = {
        tree: {name: [] for name in argv} for tree in trees
    }
    for _ in range(repeat):
        for tree in trees:
            for name, args in argv.items():
                runs[tree][name].append(timed(args, tree, envs[tree]))
    return {
        tree: {name: _medians(seconds) for name, seconds in by_name.items()} for tree, by_name in runs.items()
    }


def _medians(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(wall for wall, _ in runs), statistics.median(cpu for _, cpu in runs)


def report(
    label: str, path: Path, trees: list[Path], repeat: int, modes: list[bool], as_installed: bool
) -> None:
    for use_cache in modes:
        with tempfile.TemporaryDirectory() as scratch:
            env = environment(use_cache, Path(scratch) / "bytecode" if as_installed else None)
            medians = alternate(path, trees, repeat, env, Path(scratch))
        mode = ("cache on" if use_cache else "TPUSCOPE_NO_CACHE=1") + (
            ", as installed" if as_installed else ""
        )
        print(f"{label}, {mode}, medians of {repeat}, alternating:")
        for tree, by_name in medians.items():
            if len(trees) > 1:
                print(f"  {'this tree' if tree == ROOT else tree}:")
            info, info_cpu = by_name["info"]
            for name, (seconds, cpu) in by_name.items():
                ratio = seconds / info
                verdict = (
                    "" if name == "info" else ("  ok" if ratio <= TARGET_RATIO else f"  > {TARGET_RATIO}x")
                )
                print(
                    f"    {name:<16} {seconds:6.2f} s {ratio:5.2f}x info{verdict:<7}"
                    f"  cpu {cpu:6.2f} s {cpu / info_cpu:5.2f}x info's"
                )


def instructions(path: Path, trees: list[Path]) -> None:
    """Each command's instructions (valgrind cachegrind's `I refs`), one process per tree and command."""
    with tempfile.TemporaryDirectory() as scratch:
        env = environment(False, Path(scratch) / "bytecode")
        print(f"{path.name}, TPUSCOPE_NO_CACHE=1, as installed, instructions (valgrind cachegrind, I refs):")
        for tree in trees:
            if len(trees) > 1:
                print(f"  {'this tree' if tree == ROOT else tree}:")
            counts = {}
            for name, args in COMMANDS.items():
                argv = [a.format(path=path) for a in args]
                timed(argv, tree, env)  # writes the bytecode the counted process reads
                counts[name] = _instructions(argv, tree, env)
                ratio = counts[name] / counts["info"]
                print(f"    {name:<16} {counts[name] / 1e6:8.0f} M  {ratio:5.2f}x info")


def _instructions(args: list[str], tree: Path, env: dict[str, str]) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, "-m", "tpuscope", *args],
        capture_output=True, text=True, env=env, cwd=tree, timeout=3600,
    )  # fmt: skip
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)  # "==123== I   refs:      2,572,184,113"
    if found:
        return int(found.group(1).replace(",", ""))
    command = " ".join(args)
    raise SystemExit(f"valgrind printed no instruction count for tpuscope {command}: {done.stderr[-500:]}")


def make_run(host_file: Path, hosts: int) -> Path:
    """A run folder of `hosts` hard links of one host file (one file's disk)."""
    return link_hosts(
        host_file,
        DEFAULT_DIR / f"pod_{hosts}_of_{host_file.parent.name}" / "plugins" / "profile" / "run",
        hosts,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--cache", action="store_true", help="only with the trace cache on")
    mode.add_argument("--no-cache", action="store_true", help="only with TPUSCOPE_NO_CACHE=1")
    parser.add_argument("--as-installed", action="store_true", help="bytecode kept, stdout buffered")
    parser.add_argument("--before", type=Path, metavar="SRC", help="also time the tree SRC, alternating")
    parser.add_argument("--pod", type=int, metavar="N", help="also a run folder of N copies of the host file")
    parser.add_argument("--instructions", action="store_true", help="count instructions (valgrind) instead")
    args = parser.parse_args()
    modes = [True] if args.cache else [False] if args.no_cache else [True, False]
    trees = [args.before.resolve(), ROOT] if args.before else [ROOT]
    path = find_or_record(args.events).resolve()
    if args.instructions:
        instructions(path, trees)
        return 0
    report(path.name, path, trees, args.repeat, modes, args.as_installed)
    if args.pod:
        run = make_run(path, args.pod).resolve()
        report(f"run of {args.pod} x {path.name}", run, trees, args.repeat, modes, args.as_installed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
