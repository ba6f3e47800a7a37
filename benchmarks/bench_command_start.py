"""What `overview` and `diagnose` pay beyond `tpuscope info` before and around their analyses: the
modules they import and the cyclic garbage collector's passes (issue 32: whole processes at most 1.5x
`info`).

    python benchmarks/bench_command_start.py                      # the real 1M JAX CPU recording
    python benchmarks/bench_command_start.py --repeat 9
    python benchmarks/bench_command_start.py --baseline DIR       # also an older tree (with its built .so)
    python benchmarks/bench_command_start.py --file F.xplane.pb

Imports: each command runs under `python -X importtime`; a module's cost is its own ("self") time,
the least over the trials (the machine is shared: the least is the cost without other processes'
interference), and a command's extra is the sum over the modules `info` does not import, grouped
by package. Collections: each command runs once more with a gc.callbacks probe around
`console_main` (as the `tpuscope` script runs it), summing the time of every collection. Both as
installed (bytecode kept), trace cache off, trials alternating between the trees.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_FILE = HERE / "data" / "jax_cpu_1M" / "plugins" / "profile" / "2026_12_03_13_40_37" / "vm.xplane.pb"
COMMANDS = {"info": (), "overview": ("--json",), "diagnose": ("--json",)}
TOP_GROUPS = 8  # packages listed per command, largest first
_IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|( *)(\S+)")

# Runs the `tpuscope` script's console_main with a gc.callbacks probe; prints "<collections> <ms>".
_GC_PROBE = """
import gc, os, sys, time
spent, started = [], [0.0]
def probe(phase, info):
    if phase == "start":
        started[0] = time.perf_counter()
    else:
        spent.append(time.perf_counter() - started[0])
gc.callbacks.append(probe)
from tpuscope.cli import console_main
sys.argv = ["tpuscope", *sys.argv[1:]]
real_stdout, sys.stdout = sys.stdout, open(os.devnull, "w")
console_main()
sys.stdout = real_stdout
print(len(spent), sum(spent) * 1000)
"""


def _env(tree: Path) -> dict[str, str]:
    """As installed: bytecode kept (see bench_start.py), the tree's own modules first, no trace cache."""
    env = dict(os.environ, PYTHONPATH=str(tree), TPUSCOPE_NO_CACHE="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _argv(name: str, file: Path) -> list[str]:
    return [name, str(file), *COMMANDS[name]]


def import_self_times(tree: Path, name: str, file: Path) -> dict[str, int]:
    """Each imported module's own import time (us) in one `python -X importtime -m tpuscope` run."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "tpuscope", *_argv(name, file)],
                          env=_env(tree), cwd=tree, capture_output=True, text=True, check=True)  # fmt: skip
    return {m.group(3): int(m.group(1)) for m in _IMPORT_LINE.finditer(done.stderr)}


def collections(tree: Path, name: str, file: Path) -> tuple[int, float]:
    """How many collections one run makes, and their total time in ms."""
    done = subprocess.run([sys.executable, "-c", _GC_PROBE, *_argv(name, file)],
                          env=_env(tree), cwd=tree, capture_output=True, text=True, check=True)  # fmt: skip
    count, ms = done.stdout.split()[-2:]
    return int(count), float(ms)


def _group(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:3]) if parts[0] == "tpuscope" else parts[0]


Runs = dict[str, list[dict[str, int]]]  # command -> each trial's import self times (us) by module
Passes = dict[str, list[tuple[int, float]]]  # command -> each trial's (collections, ms)


def report(label: str, imports: Runs, gcs: Passes) -> None:
    least = {name: _least(runs) for name, runs in imports.items()}
    base = least["info"]
    for name in COMMANDS:
        count, ms = min(gcs[name], key=lambda c: c[1])
        line = f"{label:9} {name:9} gc {count:3} collections {ms:5.1f} ms"
        if name != "info":
            extra = {m: t for m, t in least[name].items() if m not in base}
            groups: dict[str, int] = {}
            for module, us in extra.items():
                groups[_group(module)] = groups.get(_group(module), 0) + us
            top = ", ".join(
                f"{g} {us / 1000:.1f}" for g, us in sorted(groups.items(), key=lambda x: -x[1])[:TOP_GROUPS]
            )
            line += (
                f" | imports beyond info: {len(extra)} modules, {sum(extra.values()) / 1000:.1f} ms ({top})"
            )
        else:
            line += f" | imports: {len(base)} modules, {sum(base.values()) / 1000:.1f} ms"
        print(line)


def _least(runs: list[dict[str, int]]) -> dict[str, int]:
    modules = set().union(*runs)
    return {m: min(run[m] for run in runs if m in run) for m in modules}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="an older tree of tpuscope to compare with")
    args = parser.parse_args()
    if not args.file.exists():
        sys.exit(f"{args.file} is missing (benchmarks/record_jax_profile.py records it)")
    trees = {"this": ROOT}
    if args.baseline:
        trees["baseline"] = args.baseline.resolve()
    for tree in trees.values():  # each tree's bytecode written once, before any trial
        for name in COMMANDS:
            import_self_times(tree, name, args.file)
    imports: dict[str, Runs] = {t: {n: [] for n in COMMANDS} for t in trees}
    gcs: dict[str, Passes] = {t: {n: [] for n in COMMANDS} for t in trees}
    for trial in range(args.repeat):
        order = list(trees) if trial % 2 == 0 else list(reversed(trees))
        for label in order:
            for name in COMMANDS:
                imports[label][name].append(import_self_times(trees[label], name, args.file))
                gcs[label][name].append(collections(trees[label], name, args.file))
    print(f"{args.file.name}: least of {args.repeat} trials (import self times, collection time)")
    for label in trees:
        report(label, imports[label], gcs[label])


if __name__ == "__main__":
    main()
