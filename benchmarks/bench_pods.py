"""Pods host by host: `overview` and the pod page's light pass against `info`, the engine's places, memory.

Each host file is the generator's TPU-shaped XSpace (benchmarks/generate_xspace.py); the run
folder holds one hard link per host, so 64 hosts of 100 MB cost 100 MB of disk. Every figure is
a whole `tpuscope` process (peak RSS over it and its worker processes), with the one-trace load of
the same run beside it where that fits in memory. The host-by-host engine (`tpuscope.app.hosts`)
runs in process (`--workers here`), on local worker processes (`--workers N`, default one per core)
or on a Dask cluster (`--workers ADDRESS`: here a local one, `tpuscope.app.dask_hosts.local_cluster`).

    python benchmarks/bench_pods.py --hosts 16 --events-per-host 1000000
    python benchmarks/bench_pods.py --hosts 64 --events-per-host 3000000 --skip-workers
    python benchmarks/bench_pods.py --overview --hosts 16 --events-per-host 1000000 --before SRC --repeat 3
    python benchmarks/bench_pods.py --light --hosts 16 64 256 --events-per-host 20000   # scale

`--overview` times the whole `tpuscope overview RUN` process against `tpuscope info RUN` of the same
run, alternated over `--repeat N` rounds (medians), and with `--before SRC` the overview of another
tree too (SRC holds its `tpuscope/` with the built `.so` files, e.g. `git archive REF tpuscope | tar
-x -C SRC`). SRC is byte-compiled first: a copied tree has no `__pycache__`, and where
PYTHONDONTWRITEBYTECODE is set each of its processes would compile every module it imports.

`--light` times what the pod page shows first (`tpuscope.app.hosts`: each host file decoded and
summarized in worker processes, one per core) and then the full per-host diagnosis on the same
workers, beside `tpuscope info RUN` (the decode of every host, as one trace) of the same run, for
each host count given: time per host should stay flat as the hosts grow, and peak memory (the
largest process: the parent holds the summaries, each worker one host) should not grow with them.
`--before SRC` times the same pass of another tree too, alternated with this one over `--repeat N`
rounds, medians printed.

    python benchmarks/bench_pods.py --light --no-full --hosts 16 --before SRC --repeat 7
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def make_run(folder: Path, hosts: int, events: int) -> Path:
    source = folder / "host.xplane.pb"
    if not source.exists():
        subprocess.run(
            [sys.executable, str(HERE / "generate_xspace.py"), "--events", str(events), "--out", str(source)],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    return link_hosts(source, folder / "plugins" / "profile" / f"run_{hosts}", hosts)


def link_hosts(source: Path, run: Path, hosts: int) -> Path:
    """The run folder `run` holding `hosts` hard links of one host file (one file's disk)."""
    run.mkdir(parents=True, exist_ok=True)
    for i in range(hosts):
        link = run / f"host{i:03d}.xplane.pb"
        if not link.exists():
            os.link(source, link)
    return run


# Runs one command; prints its stdout, then its return code, the largest RSS among it and its
# descendants (KiB) and their CPU seconds on the last line.
_MEASURE_ECHO = (
    "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
    "sys.stderr.write(r.stderr); print(r.stdout.strip()); u = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(r.returncode, u.ru_maxrss, u.ru_utime + u.ru_stime)"
)


def timed_cpu(args: list[str], source: Path | None = None) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MB) and CPU seconds of a whole tpuscope process (of the tree at
    `source` when given, else this one)."""
    env = dict(os.environ, TPUSCOPE_NO_CACHE="1")
    if source is not None:  # ahead of the editable install on the import path (workers inherit it)
        env["PYTHONPATH"] = str(source)
    # `python -m` puts its working directory first on the import path: the tree's own folder.
    cwd = source if source is not None else HERE.parent
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE_ECHO, sys.executable, "-m", "tpuscope", *args],
        capture_output=True, text=True, env=env, timeout=3600, cwd=cwd,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    code, peak_kib, cpu = result.stdout.splitlines()[-1].split()
    if int(code) not in (0, 1):
        raise SystemExit(f"tpuscope {' '.join(args)} failed: {result.stderr.strip()}")
    return seconds, int(peak_kib) / 1024, float(cpu)


def timed(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of a whole tpuscope process (its largest process, workers included)."""
    seconds, peak, _cpu = timed_cpu(args)
    return seconds, peak


# The light pass then the full one, as the pod page runs them; prints their seconds (one JSON line).
_PASSES = """
import json, sys, time
def main():
    started = time.perf_counter()
    try:
        from tpuscope.app import hosts as engine
    except ImportError:  # a tree from before the one engine (timed beside this one)
        from tpuscope.app import pod_pass as engine
    from tpuscope.app.runs import host_files
    files = [str(f) for f in host_files(sys.argv[1])]
    pool = engine.HostPool()
    if hasattr(pool, "start"):  # the workers come up while this process imports the rest (older
        pool.start(len(files))  # checkouts, timed beside this one: the first task starts them)
    from tpuscope.store import pod_results
    from tpuscope.analysis.pod_run import combine
    light = []
    engine.pass_over(pool, files, pod_results.LIGHT, lambda: False, light.append)
    run = combine([r for o in sorted(light, key=lambda o: o.index) for r in o.results])
    shown = time.perf_counter()
    full = []
    if sys.argv[2] == "full":
        engine.pass_over(pool, files, pod_results.FULL, lambda: False, full.append)
        combine([r for o in sorted(full, key=lambda o: o.index) for r in o.results])
    pool.close()
    print(json.dumps({"light_s": shown - started, "full_s": time.perf_counter() - shown,
                      "hosts": len(run.hosts), "workers": pool.workers, "steps": run.pod.step_count}))
if __name__ == "__main__":
    main()
"""


def passes(run: Path, full: bool, source: Path | None = None) -> tuple[dict, float, float, float]:
    """The light (and full) pass of `run` in a process of its own (of the tree at `source` when
    given, else this one): its figures, wall s, peak RSS MB and CPU s (its workers' included)."""
    script = run.parent.parent.parent / "bench_pod_passes.py"
    script.write_text(_PASSES)
    env = dict(os.environ, TPUSCOPE_NO_CACHE="1")
    if source is not None:  # ahead of the editable install on the import path (workers inherit it)
        env["PYTHONPATH"] = str(source)
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE_ECHO, sys.executable, str(script), str(run), "full" if full else "light"],  # noqa: E501
        capture_output=True, text=True, env=env, timeout=3600,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    lines = result.stdout.splitlines()
    if len(lines) < 2 or not lines[0].startswith("{"):
        raise SystemExit(f"the pod passes failed: {result.stderr.strip()[-2000:]}")
    code, peak_kib, cpu = lines[-1].split()
    return json.loads(lines[0]), seconds, int(peak_kib) / 1024, float(cpu)


def light_scale(folder: Path, host_counts: list[int], events: int, full: bool) -> None:
    print(f"pod page passes vs info, {events:,} events per host (cache off; peak RSS: largest process)")
    for hosts in host_counts:
        run = make_run(folder, hosts, events)
        host_mb = (run / "host000.xplane.pb").stat().st_size / 1e6
        info_s, info_peak, info_cpu = timed_cpu(["info", str(run)])
        figures, _, peak, cpu = passes(run, full)
        light = figures["light_s"]
        line = (
            f"{hosts:4d} hosts ({host_mb:.1f} MB each): info {info_s:6.2f} s "
            f"({1000 * info_s / hosts:5.1f} ms/host, "
            f"peak {info_peak:5.0f} MB) | light pass on {figures['workers']} processes {light:6.2f} s "
            f"({1000 * light / hosts:5.1f} ms/host) = {light / info_s:.2f}x info"
        )
        if full:
            full_s = figures["full_s"]
            line += f" | full diagnosis after it {full_s:6.2f} s ({1000 * full_s / hosts:5.1f} ms/host)"
        print(line + f" | peak {peak:5.0f} MB", flush=True)
        print(
            f"{'':6}CPU: info {info_cpu:.1f} s, the passes {cpu:.1f} s "
            f"(load average {os.getloadavg()[0]:.1f})"
        )


def light_before_after(folder: Path, host_counts: list[int], events: int, before: Path, repeat: int) -> None:
    """The light pass of this tree and of `before`, alternated, beside `info` (this tree), medians."""
    compileall.compile_dir(str(before / "tpuscope"), quiet=1)
    print(f"light pass, this tree and {before}, {events:,} events per host, {repeat} rounds alternated")
    for hosts in host_counts:
        run = make_run(folder, hosts, events)
        walls: dict[str, list[float]] = {"info": [], "before": [], "now": []}
        cpus: dict[str, list[float]] = {"info": [], "before": [], "now": []}
        load = os.getloadavg()[0]
        for round_ in range(repeat):
            info_s, _, info_cpu = timed_cpu(["info", str(run)])
            walls["info"].append(info_s)
            cpus["info"].append(info_cpu)
            trees: list[tuple[str, Path | None]] = [("before", before), ("now", None)]
            for name, source in trees if round_ % 2 == 0 else trees[::-1]:
                figures, _, _, cpu = passes(run, False, source)
                walls[name].append(figures["light_s"])
                cpus[name].append(cpu)
        wall = {k: statistics.median(v) for k, v in walls.items()}
        cpu_of = {k: statistics.median(v) for k, v in cpus.items()}
        tree_figures = " | ".join(
            f"{name} {wall[name]:.2f} s = {wall[name] / wall['info']:.2f}x (best {min(walls[name]):.2f})"
            for name in ("before", "now")
        )
        print(
            f"{hosts:4d} hosts: info {wall['info']:.2f} s | {tree_figures} | CPU info {cpu_of['info']:.2f} / "
            f"before {cpu_of['before']:.2f} / now {cpu_of['now']:.2f} s "
            f"(load average {load:.1f} -> {os.getloadavg()[0]:.1f})",
            flush=True,
        )


def overview_against_info(
    folder: Path, host_counts: list[int], events: int, before: Path | None, repeat: int
) -> None:
    """Whole `overview RUN` processes (this tree's, and `before`'s) against `info RUN` of the same
    run, alternated over `repeat` rounds; medians, and each against the same rounds' info."""
    if before is not None:
        compileall.compile_dir(str(before / "tpuscope"), quiet=1)
    trees: list[tuple[str, Path | None]] = [("now", None)] + ([("before", before)] if before else [])
    print(f"overview vs info, {events:,} events per host, cache off, {repeat} rounds alternated, medians")
    for hosts in host_counts:
        run = make_run(folder, hosts, events)
        walls: dict[str, list[float]] = {"info": []} | {name: [] for name, _ in trees}
        cpus: dict[str, list[float]] = {"info": []} | {name: [] for name, _ in trees}
        peaks: dict[str, list[float]] = {"info": []} | {name: [] for name, _ in trees}
        load = os.getloadavg()[0]
        for round_ in range(repeat):
            order: list[tuple[str, Path | None, list[str]]] = [("info", None, ["info", str(run)])]
            order += [(name, source, ["overview", str(run)]) for name, source in trees]
            for name, source, args in order if round_ % 2 == 0 else order[::-1]:
                seconds, peak, cpu = timed_cpu(args, source)
                walls[name].append(seconds)
                cpus[name].append(cpu)
                peaks[name].append(peak)
        wall = {k: statistics.median(v) for k, v in walls.items()}
        figures = " | ".join(
            f"overview {name} {wall[name]:.2f} s = {wall[name] / wall['info']:.2f}x info "
            f"(CPU {statistics.median(cpus[name]):.2f} s, peak {max(peaks[name]):.0f} MB)"
            for name, _ in trees
        )
        print(
            f"{hosts:4d} hosts: info {wall['info']:.2f} s (CPU {statistics.median(cpus['info']):.2f} s, "
            f"peak {max(peaks['info']):.0f} MB) | {figures} "
            f"(load average {load:.1f} -> {os.getloadavg()[0]:.1f})",
            flush=True,
        )
        print(
            f"{'':6}rounds: "
            + "; ".join(f"{k} " + " ".join(f"{v:.2f}" for v in vs) for k, vs in walls.items())
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[16])
    parser.add_argument("--events-per-host", type=int, default=1_000_000)
    parser.add_argument("--dir", default=None, help="where to keep the generated run (default: a temp dir)")
    parser.add_argument("--skip-workers", action="store_true", help="only the in-process, host-by-host run")
    parser.add_argument("--skip-whole", action="store_true", help="skip loading the run as one trace")
    parser.add_argument(
        "--light", action="store_true", help="the pod page's passes against info, per host count"
    )
    parser.add_argument("--no-full", action="store_true", help="with --light: the light pass only")
    parser.add_argument(
        "--overview", action="store_true", help="whole `overview RUN` processes against `info RUN`"
    )
    parser.add_argument(
        "--before", type=Path, default=None, help="with --light or --overview: also time this tree"
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="with --before or --overview: rounds, alternated"
    )
    args = parser.parse_args()
    folder = Path(args.dir or tempfile.mkdtemp(prefix="tpuscope_pods_"))
    folder.mkdir(parents=True, exist_ok=True)
    if args.overview:
        before = args.before.resolve() if args.before is not None else None
        overview_against_info(folder, args.hosts, args.events_per_host, before, args.repeat)
        return
    if args.light and args.before is not None:
        light_before_after(folder, args.hosts, args.events_per_host, args.before.resolve(), args.repeat)
        return
    if args.light:
        light_scale(folder, args.hosts, args.events_per_host, not args.no_full)
        return
    args.hosts = args.hosts[0]
    run = make_run(folder, args.hosts, args.events_per_host)
    host_mb = (run / "host000.xplane.pb").stat().st_size / 1e6
    print(f"{args.hosts} hosts x {args.events_per_host:,} events ({host_mb:.0f} MB per host file)")
    seconds, peak = timed(["diagnose", str(run), "--workers", "here", "--json"])
    print(
        f"host by host, in process:      {seconds:7.1f} s, peak RSS {peak:7.0f} MB "
        f"({peak / host_mb:.1f}x one host file)"
    )
    if not args.skip_workers:
        for workers in (1, 2):
            seconds_w, peak_w = timed(["diagnose", str(run), "--workers", str(workers), "--json"])
            print(f"host by host, {workers} worker process(es): {seconds_w:7.1f} s, largest {peak_w:7.0f} MB")
        from tpuscope.app.dask_hosts import local_cluster

        with local_cluster(2) as address:
            seconds_d, peak_d = timed(["diagnose", str(run), "--workers", address, "--json"])
        print(f"host by host, a local Dask cluster of 2: {seconds_d:7.1f} s, client process {peak_d:7.0f} MB")
    if not args.skip_whole:
        seconds_all, peak_all = timed(
            ["diagnose", str(run), "--json"] if args.hosts < 16 else ["info", str(run)]
        )
        what = "diagnose" if args.hosts < 16 else "info (load only)"
        print(f"one trace of every host, {what}: {seconds_all:7.1f} s, peak RSS {peak_all:7.0f} MB")


if __name__ == "__main__":
    main()
