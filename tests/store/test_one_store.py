"""One store for every cache: one root with a folder per kind, one switch (TPUSCOPE_NO_CACHE) and one
cap (TPUSCOPE_CACHE_MAX, the app's setting) that trace entries, pod results, run summaries and
downloads of bucket runs all honour; `tpuscope cache` lists every kind and `clear` empties them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import GPU_TRACE, PTXLA_TRACE, ROOT
from tests.store.cache_helpers import copied, names
from tpuscope.analysis.pod_run import HostResult, analyze_host
from tpuscope.app.history import read_history
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.readers.files import one_format, resolve_profile_files
from tpuscope.store import cache_limit, layout, pod_results, remote, run_summaries, traces

RUN = "2026_01_01_12_00_00"


@pytest.fixture(params=["TPUSCOPE_CACHE_MAX=0", "TPUSCOPE_NO_CACHE=1", "app setting 0"])
def switched_off(request, monkeypatch):
    """Caching off one of the three ways; calling the fixture's value turns it back on."""
    monkeypatch.delenv(cache_limit.MAX_ENV, raising=False)
    monkeypatch.delenv(cache_limit.DISABLE_ENV, raising=False)
    if request.param == "app setting 0":
        monkeypatch.setattr(cache_limit, "_app_limit", 0)
    else:
        name, value = request.param.split("=")
        monkeypatch.setenv(name, value)
    assert not cache_limit.caching_on()

    def switch_on() -> None:
        monkeypatch.delenv(cache_limit.MAX_ENV, raising=False)
        monkeypatch.delenv(cache_limit.DISABLE_ENV, raising=False)
        monkeypatch.setattr(cache_limit, "_app_limit", None)

    return switch_on


def _files(path: Path) -> list[Path]:
    """The files the opener reads for `path` (their identity keys the trace entry)."""
    return one_format(resolve_profile_files(path, None))[0]


def _stored_host(host: Path) -> list[HostResult]:
    """A host file's light pod results, computed from the file and handed to the pod results' cache."""
    trace = open_trace(host, use_cache=False)
    results = [analyze_host(trace, name, str(host), light=True) for name in (trace.hosts or [""])]
    pod_results.store(host, pod_results.LIGHT, results)
    return results


def test_every_kind_lives_in_its_own_folder_of_the_one_root(tmp_path, monkeypatch):
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(tmp_path / "root"))
    assert traces.cache_dir() == tmp_path / "root" / "traces"
    assert pod_results.folder() == tmp_path / "root" / "pods"
    assert run_summaries.folder() == tmp_path / "root" / "run_summaries"
    assert remote.remote_cache_dir() == tmp_path / "root" / "downloads"
    monkeypatch.delenv("TPUSCOPE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home_cache"))
    if sys.platform.startswith("linux"):  # the trace folder an older tpuscope used, by default
        assert traces.cache_dir() == tmp_path / "home_cache" / "tpuscope" / "traces"


def test_trace_entries_honour_the_switch(switched_off, tmp_path):
    copy = copied(PTXLA_TRACE, tmp_path / "p")
    open_trace(copy)
    traces.wait_for_writes()
    assert names(traces.cache_dir()) == [] and not traces.has_entry(_files(copy))
    switched_off()
    open_trace(copy)
    traces.wait_for_writes()
    assert traces.has_entry(_files(copy)) and traces.load(_files(copy)) is not None


def test_pod_results_honour_the_switch(switched_off, tmp_path):
    host = copied(PTXLA_TRACE, tmp_path / "run", "host0.xplane.pb")
    results = _stored_host(host)
    assert pod_results.load(host, pod_results.LIGHT) is None and names(pod_results.folder()) == []
    switched_off()
    _stored_host(host)
    again = pod_results.load(host, pod_results.LIGHT)
    assert again is not None and [r.host for r in again] == [r.host for r in results]


def _logdir(tmp_path: Path) -> Path:
    logdir = tmp_path / "logdir"
    copied(PTXLA_TRACE, logdir / "plugins" / "profile" / RUN)
    return logdir


def test_run_summaries_honour_the_switch(switched_off, tmp_path):
    logdir = _logdir(tmp_path)
    assert read_history([str(logdir)]).analysed == [RUN]
    assert read_history([str(logdir)]).analysed == [RUN]  # nothing was kept
    assert names(run_summaries.folder()) == []
    switched_off()
    assert read_history([str(logdir)]).analysed == [RUN]
    assert read_history([str(logdir)]).analysed == []  # the summary was kept
    assert len(names(run_summaries.folder())) == 1


# Fetches a run from an in-memory bucket (fsspec's memory filesystem: a real one, in this process)
# and prints where it went; the folder is looked at again after the process has exited.
_FETCH = """
import sys
from pathlib import Path
import fsspec
from tpuscope.store import remote
fs = fsspec.filesystem("memory")
fs.pipe("/bucket/logdir/run1/host0.xplane.pb", Path(sys.argv[1]).read_bytes())
fetched = remote.fetch_run("memory://bucket/logdir")
assert fetched.files[0].read_bytes() == Path(sys.argv[1]).read_bytes()
print(fetched.folder)
"""


@pytest.mark.parametrize("off", [{"TPUSCOPE_CACHE_MAX": "0"}, {"TPUSCOPE_NO_CACHE": "1"}], ids=str)
def test_downloads_work_with_caching_off_and_last_the_session_only(off, tmp_path):
    pytest.importorskip("fsspec")
    root = tmp_path / "root"
    env = {k: v for k, v in os.environ.items() if k not in (cache_limit.MAX_ENV, cache_limit.DISABLE_ENV)}
    env["TPUSCOPE_CACHE_DIR"] = str(root)

    def fetch(extra: dict) -> Path:
        argv = [sys.executable, "-c", _FETCH, str(PTXLA_TRACE)]
        done = subprocess.run(argv, cwd=ROOT, env=env | extra, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return Path(done.stdout.strip())

    session = fetch(off)
    assert not session.is_relative_to(root) and not session.exists()  # removed when the process ended
    assert not (root / "downloads").exists()
    kept = fetch({})
    assert kept.is_relative_to(root / "downloads") and (kept / "host0.xplane.pb").is_file()


def test_every_kind_counts_against_the_one_cap(tmp_path, monkeypatch):
    """A trace entry used least recently makes room for a pod result: one cap over the store."""
    trace_copy = copied(GPU_TRACE, tmp_path / "p")
    open_trace(trace_copy)
    traces.wait_for_writes()
    (entry,) = traces.cache_dir().iterdir()
    os.utime(entry, (1, 1))  # used long ago
    host_a = copied(PTXLA_TRACE, tmp_path / "run", "host0.xplane.pb")
    _stored_host(host_a)
    (result_a,) = pod_results.folder().iterdir()
    # Room for both, but not for a third file as big as the pod result.
    monkeypatch.setenv(cache_limit.MAX_ENV, str(entry.stat().st_size + result_a.stat().st_size + 1024))
    host_b = copied(PTXLA_TRACE, tmp_path / "run", "host1.xplane.pb")
    _stored_host(host_b)
    assert not entry.exists() and traces.load(_files(trace_copy)) is None  # the trace entry made the room
    assert pod_results.load(host_a, pod_results.LIGHT) is not None
    assert pod_results.load(host_b, pod_results.LIGHT) is not None


def test_the_cache_command_lists_and_clears_every_kind(tmp_path, capsys):
    trace_copy = copied(PTXLA_TRACE, tmp_path / "p")
    open_trace(trace_copy)
    traces.wait_for_writes()
    _stored_host(copied(PTXLA_TRACE, tmp_path / "run", "host0.xplane.pb"))
    read_history([str(_logdir(tmp_path))])
    traces.wait_for_writes()
    download = layout.folder(layout.DOWNLOADS) / "run1-0123"
    download.mkdir(parents=True)
    shutil.copy(PTXLA_TRACE, download / "host0.xplane.pb")
    root = layout.root()
    (root / "0123456789abcdef-v12.trace").write_bytes(b"x" * 10)  # where TPUSCOPE_CACHE_DIR held traces
    (root / "notes.txt").write_bytes(b"not ours")
    assert main(["cache", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    kinds = {k["kind"]: k for k in shown["kinds"]}
    assert list(kinds) == ["traces", "pods", "run_summaries", "downloads", "older layout"]
    assert [kinds[k]["files"] for k in kinds] == [2, 1, 1, 1, 1]  # trace entries: the file's, the run's
    assert kinds["downloads"]["bytes"] == PTXLA_TRACE.stat().st_size and not kinds["downloads"]["bounded"]
    assert shown["bytes"] == sum(k["bytes"] for k in kinds.values())
    assert main(["cache", "clear", "--json"]) == 0
    cleared = json.loads(capsys.readouterr().out)
    assert cleared["removed_files"] == 6 and cleared["freed_bytes"] == shown["bytes"]
    assert [names(layout.folder(kind)) for kind in layout.KINDS] == [[], [], [], []]
    assert [p.name for p in root.iterdir() if p.is_file()] == ["notes.txt"]
    assert read_history([str(_logdir(tmp_path))]).analysed == [RUN]  # analysed again after the clear
