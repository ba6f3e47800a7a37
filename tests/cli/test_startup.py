"""How `tpuscope` starts: each command imports only what it uses, and a typo is not taken for a path."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tpuscope.cli
import tpuscope.commands
from tests.conftest import ROOT, SAMPLES, SHARED_TRACES, require_shared_traces
from tpuscope.cli import EXIT_ERROR, build_parser, main
from tpuscope.commands import COMMANDS
from tpuscope.store import traces

TPU_SAMPLE = SAMPLES / "tpu_v6e_inference_4chip.xplane.pb"
# What the profile-reading commands must never import for a local file: SSH and gRPC (capture), Qt
# (the app), cloud storage (URL logdirs only) and any framework or XProf.
HEAVY_PACKAGES = ("paramiko", "cryptography", "grpc", "PySide6", "shiboken6", "pyqtgraph", "fsspec", "gcsfs",
                  "s3fs", "jax", "jaxlib", "tensorflow", "torch", "xprof")  # fmt: skip
HEAVY_TPUSCOPE = ("tpuscope.capture", "tpuscope.ui")
HEADLESS_COMMANDS = ("info", "ops", "diagnose", "overview")
# What `info` on a local file does without, each a measured cost of every start (python -X importtime,
# benchmarks/bench_start.py): protobuf, a thread pool's module and its logging, OpenSSL's hashes, tempfile.
START_COSTS = ("google.protobuf", "concurrent.futures", "logging", "hashlib", "_hashlib", "tempfile")

# Runs `python -m tpuscope ARGS` in this process, then writes the imported module names to a file.
_RUN_AND_LIST_MODULES = """
import json, os, runpy, sys
out, sys.argv = sys.argv[1], ["tpuscope", *sys.argv[2:]]
try:
    runpy.run_module("tpuscope", run_name="__main__", alter_sys=True)
except SystemExit as done:
    code = done.code
with open(out, "w") as handle:
    json.dump({"exit": code, "modules": sorted(sys.modules), "blas": os.environ.get("OPENBLAS_NUM_THREADS")},
              handle)
"""


def imported_by(tmp_path: Path, *args: str) -> tuple[int, list[str], str]:
    listing = tmp_path / "modules.json"
    env = dict(os.environ, TPUSCOPE_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("QT_QPA_PLATFORM", None)
    env.pop("OPENBLAS_NUM_THREADS", None)
    result = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST_MODULES, str(listing), *args],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    payload = json.loads(listing.read_text())
    assert payload["blas"] == "1"  # numpy's OpenBLAS starts one thread, not one per core (tpuscope.cli)
    return payload["exit"], payload["modules"], result.stdout


def heavy(modules: list[str]) -> list[str]:
    prefixes = HEAVY_PACKAGES + HEAVY_TPUSCOPE
    return [m for m in modules if m in prefixes or m.startswith(tuple(p + "." for p in prefixes))]


@pytest.mark.parametrize("command", HEADLESS_COMMANDS)
def test_reading_commands_never_import_ssh_grpc_or_qt(tmp_path, command):
    code, modules, out = imported_by(tmp_path, command, str(TPU_SAMPLE), "--json")
    assert code == 0 and json.loads(out)  # the command really ran to its end
    assert f"tpuscope.commands.{command}" in modules
    assert heavy(modules) == []
    others = {f"tpuscope.commands.{name}" for name in COMMANDS if name != command}
    assert others.isdisjoint(modules)


def test_info_starts_without_protobuf_a_thread_pool_module_openssl_or_tempfile(tmp_path):
    code, modules, out = imported_by(tmp_path, "info", str(TPU_SAMPLE), "--json")
    assert code == 0 and json.loads(out)["events"] > 0
    assert "tpuscope.readers.xplane.decode" in modules and "tpuscope.store.traces" in modules
    assert [m for m in modules if m in START_COSTS] == []
    entries = tmp_path / "cache" / "traces"  # the store's trace folder in TPUSCOPE_CACHE_DIR
    traces.wait_for_writes(entries)  # a detached child finishes the entry after the exit
    assert list(entries.glob("*.trace"))  # the cold load did write the cache


@pytest.mark.parametrize("command", ("overview", "diagnose"))
def test_analyses_of_a_local_file_import_no_remote_storage(tmp_path, command):
    """Remote storage (its sockets, thread pool, logging and temporary folders) is for a URL only:
    the run's host count of a local path asks the file system alone (tpuscope.app.runs)."""
    code, modules, out = imported_by(tmp_path, command, str(TPU_SAMPLE), "--json")
    assert code == 0 and json.loads(out)
    assert "tpuscope.app.runs" in modules  # the host count was asked
    remote = ("tpuscope.store.remote", "socket", "concurrent.futures", "logging", "tempfile")
    assert [m for m in modules if m in remote] == []


@pytest.mark.parametrize("command", ("overview", "diagnose"))
@pytest.mark.parametrize("profile", ("xplane", "kineto", "pod"))
def test_analyses_never_import_numpy_ma(tmp_path, command, profile):
    """numpy.ma (11-23 ms of import) comes with np.median, np.percentile, a plain np.unique and np.isin's
    sorting path: tpuscope.model.order_statistics gives their results without it (an XPlane file, a
    Kineto trace whose kernels have launches, and a run folder of two hosts)."""
    if profile == "xplane":
        path = TPU_SAMPLE
    else:
        require_shared_traces()
        kineto = SHARED_TRACES / "kineto"
        if profile == "kineto":
            path = kineto / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
        else:
            path = tmp_path / "run"
            path.mkdir()
            for rank in (0, 1):
                shutil.copy(
                    kineto / f"trace_filter__sampled_rank-{rank}.json.gz",
                    path / f"rank{rank}.pt.trace.json.gz",
                )
    code, modules, out = imported_by(tmp_path, command, str(path), "--json")
    assert code == 0 and json.loads(out)
    assert "numpy" in modules and "numpy.ma" not in modules


# What `overview` and `diagnose` of one trace (PyTorch/XLA on a CPU) never call, so never import
# (issue 32: each a measured cost of their start, benchmarks/bench_command_start.py): the host-by-host
# engine, the pod pass and the grouping of findings across hosts (a pod's; `tpuscope.app.where`
# decides without them) and a pod's headline metrics; the metrics' records (the rules format numbers
# with `tpuscope.analysis.metrics.format` alone); the code behind ops and its records (what `ops --by
# source` and a finding's line read; the programs' signatures and buffers are read without protobuf,
# by tpuscope.readers.xplane.wire); an allocator's memory over time (a trace with allocator events');
# the HLO text parser (the rules that read TPU ops' shapes) and the roofline's peaks (a device's that
# has them); `diagnose` makes no overview and no step breakdown.
POD_ONLY = (
    "tpuscope.app.hosts",
    "tpuscope.analysis.pod_run",
    "tpuscope.analysis.diagnose.across_hosts",
    "tpuscope.analysis.metrics.registry",
    "tpuscope.analysis.metrics.pod",
)
CODE_ONLY = ("tpuscope.analysis.op_source", "tpuscope.model.code", "tpuscope.readers.xplane.hlo_code",
             "google.protobuf")  # fmt: skip
ALLOCATORS_ONLY = ("tpuscope.analysis.memory.over_time",)
TPU_ONLY = ("tpuscope.analysis.diagnose.hlo_text", "tpuscope.analysis.roofline")
ONE_TRACE_SKIPS = {
    "overview": (*POD_ONLY, *CODE_ONLY, *ALLOCATORS_ONLY, *TPU_ONLY),
    "diagnose": (
        *POD_ONLY,
        *CODE_ONLY,
        *ALLOCATORS_ONLY,
        *TPU_ONLY,
        "tpuscope.analysis.overview",
        "tpuscope.analysis.step_breakdown",
    ),
}
ONE_TRACE = SAMPLES / "ptxla_cpu_fallback.xplane.pb"


@pytest.mark.parametrize("command", ("overview", "diagnose"))
def test_analyses_of_one_trace_import_no_module_they_do_not_call(tmp_path, command):
    code, modules, out = imported_by(tmp_path, command, str(ONE_TRACE), "--json")
    assert code == 0 and json.loads(out)["findings"]
    assert "tpuscope.analysis.diagnose.engine" in modules  # the rules did run
    assert "tpuscope.readers.xplane.wire" in modules  # the programs' HLO protos were read
    assert [m for m in modules if m in ONE_TRACE_SKIPS[command]] == []


@pytest.mark.parametrize(
    ("args", "used"),
    [
        ((str(ONE_TRACE), "--per-host", "--workers", "here"), POD_ONLY),  # the file analysed host by host
        ((str(SAMPLES / "jax_cpu_healthy.xplane.pb"),), CODE_ONLY),  # a recompiled function's caller
        ((str(SAMPLES / "jax_mi300x_attention.xplane.pb"),), ALLOCATORS_ONLY),  # the GPU's allocator
        ((str(TPU_SAMPLE),), TPU_ONLY),  # the TPU's matmuls and peaks
    ],
)
def test_the_skip_check_sees_what_uses_them(tmp_path, args, used):
    """The check above can fail: an overview that does use those modules imports them."""
    code, modules, out = imported_by(tmp_path, "overview", *args, "--json")
    assert code == 0 and json.loads(out)
    assert set(used) <= set(modules)


def test_the_import_check_sees_a_heavy_command(tmp_path):
    """The check above can fail: `capture` does import SSH and gRPC, and the listing shows it."""
    code, modules, out = imported_by(tmp_path, "capture", "--help")
    assert code == 0 and "usage: tpuscope capture" in out
    assert {"paramiko", "grpc"} <= set(heavy(modules))


def test_every_command_module_is_in_the_table_and_its_help_matches():
    package = Path(tpuscope.commands.__file__).parent
    modules = sorted(p.stem for p in package.glob("*.py") if not p.stem.startswith("_"))
    assert sorted(COMMANDS) == modules
    for name, help_line in COMMANDS.items():
        subparsers = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"tpuscope.commands.{name}").register(subparsers)
        (choice,) = subparsers._choices_actions
        assert (choice.dest, choice.help) == (name, help_line)


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for name, help_line in COMMANDS.items():
        assert f"{name} {help_line.replace('%%', '%')}" in text  # argparse help is a %-format


def test_a_chosen_command_parses_its_own_options():
    args = build_parser("ops").parse_args(["ops", str(TPU_SAMPLE), "--by", "category", "--top", "3"])
    assert (args.command, args.by, args.top) == ("ops", "category", 3)
    with pytest.raises(SystemExit):
        build_parser("info").parse_args(["ops", str(TPU_SAMPLE), "--by", "category"])


@pytest.fixture
def no_app(monkeypatch):
    """The desktop app must not start: a typo that opened it would look like a hang in a terminal."""
    started: list[list[str]] = []
    monkeypatch.setattr(tpuscope.cli, "gui_main", lambda argv: started.append(argv) or 0)
    return started


def test_a_typo_of_a_command_names_the_closest_one(capsys, no_app):
    assert main(["diagnos", "prof/"]) == EXIT_ERROR
    err = capsys.readouterr().err.strip()
    assert err == "tpuscope: 'diagnos' is neither a command nor an existing path; did you mean diagnose?"
    assert main(["overveiw", str(TPU_SAMPLE)]) == EXIT_ERROR
    assert capsys.readouterr().err.strip().endswith("did you mean overview?")
    assert no_app == []


def test_a_word_like_no_command_lists_the_commands(capsys, no_app):
    assert main(["frobnicate"]) == EXIT_ERROR  # ("flamegraph" is like `flame` and `graph` now)
    err = capsys.readouterr().err.strip()
    assert err.startswith("tpuscope: 'frobnicate' is neither a command nor an existing path; the commands")
    assert all(name in err for name in COMMANDS) and err.count(".") == 1
    assert no_app == []


def test_a_missing_profile_path_says_so(capsys, no_app, tmp_path):
    missing = tmp_path / "run" / "host.xplane.pb"
    assert main([str(missing)]) == EXIT_ERROR
    assert capsys.readouterr().err.strip() == f"tpuscope: Cannot open {missing}: the path does not exist."
    assert no_app == []


def test_an_existing_path_opens_the_app(no_app, tmp_path):
    assert main([str(TPU_SAMPLE)]) == 0
    named_like_a_typo = tmp_path / "diagnos"
    named_like_a_typo.mkdir()
    os.chdir(tmp_path)
    try:
        assert main(["diagnos"]) == 0
    finally:
        os.chdir(ROOT)
    assert no_app == [[str(TPU_SAMPLE)], ["diagnos"]]


def test_a_typo_as_a_whole_process_exits_2_at_once():
    result = subprocess.run(
        [sys.executable, "-m", "tpuscope", "diagnos", "prof/"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == EXIT_ERROR and result.stdout == ""
    assert (
        result.stderr
        == "tpuscope: 'diagnos' is neither a command nor an existing path; did you mean diagnose?\n"
    )
