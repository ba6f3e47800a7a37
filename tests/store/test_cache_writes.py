"""The answer does not wait for the cache: entries are written in the background, finished by a
detached child when the process exits first, never left partial, and written once when two
processes open the same file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.conftest import ROOT, TPU_TRACE
from tests.store.cache_helpers import PROFILES, columns, copied, names, run_tpuscope, trace_folder
from tpuscope.app.opener import open_trace
from tpuscope.readers.files import one_format, resolve_profile_files
from tpuscope.store import traces

# Runs in a process of its own: an open whose cache writer is told to stop at its first piece, as
# if the process ended before the write could finish; then the process ends as argv[2] says.
_OPEN_THEN_END = """
import os, signal, sys
from tpuscope.store import traces
from tpuscope.app.opener import open_trace
start = traces._start
def start_stopped(writer):
    writer.stop.set()
    start(writer)
traces._start = start_stopped
open_trace(sys.argv[1])
traces._writers[0].thread.join()
assert not traces._writers[0].finished
print(os.getpid(), flush=True)
if sys.argv[2] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _open_then_end(copy, folder, how: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, TPUSCOPE_CACHE_DIR=str(folder))
    argv = [sys.executable, "-c", _OPEN_THEN_END, str(copy), how]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def _entry(path) -> str:
    files, _ = one_format(resolve_profile_files(path, None))
    return traces.entry_name(traces.key(files))


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.parent.name)
def test_an_open_returns_and_its_entry_follows_whole(profile, tmp_path):
    copy = copied(profile, tmp_path / "profile")
    first = open_trace(copy)
    traces.wait_for_writes()
    assert names(traces.cache_dir()) == [_entry(copy)]  # the entry alone: no partial file left
    again = traces.load(one_format(resolve_profile_files(copy, None))[0])
    assert again is not None and columns(again) == columns(first)


def test_a_write_unfinished_at_exit_is_finished_by_a_detached_child(tmp_path, monkeypatch):
    copy = copied(TPU_TRACE, tmp_path / "profile")
    folder = tmp_path / "cache"
    done = _open_then_end(copy, folder, "exit")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    traces.wait_for_writes(trace_folder(folder))  # the child holds the partial file's lock until it is done
    assert names(trace_folder(folder)) == [_entry(copy)]
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(folder))
    reopened = traces.load(one_format(resolve_profile_files(copy, None))[0])
    assert reopened is not None and columns(reopened) == columns(open_trace(copy, use_cache=False))


def test_a_killed_writer_leaves_no_entry_and_the_next_open_writes_it(tmp_path, monkeypatch):
    copy = copied(TPU_TRACE, tmp_path / "profile")
    folder = tmp_path / "cache"
    killed = _open_then_end(copy, folder, "kill")
    assert killed.returncode == -signal.SIGKILL
    assert _entry(copy) not in names(trace_folder(folder))  # at most a partial file, which is no entry
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(folder))
    expected = columns(open_trace(copy, use_cache=False))
    assert columns(open_trace(copy)) == expected  # from the file
    traces.wait_for_writes()
    assert names(trace_folder(folder)) == [_entry(copy)]  # the stale partial file was taken over and renamed
    assert columns(open_trace(copy)) == expected  # from the cache


def test_two_processes_opening_one_file_at_once_both_answer_and_one_entry_is_written(tmp_path):
    copy = copied(TPU_TRACE, tmp_path / "profile")
    folder = tmp_path / "cache"
    expected = run_tpuscope("info", str(copy), "--json", "--no-cache", cache_root=folder)
    both = [run_tpuscope("info", str(copy), "--json", cache_root=folder, wait=False) for _ in range(2)]
    for process in both:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert json.loads(out) == json.loads(expected.stdout)
        assert err == ""
    traces.wait_for_writes(trace_folder(folder))
    assert names(trace_folder(folder)) == [_entry(copy)]
    reopened = run_tpuscope("info", str(copy), "--json", cache_root=folder)
    assert json.loads(reopened.stdout) == json.loads(expected.stdout)
