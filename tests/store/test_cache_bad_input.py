"""A cache that cannot be written (a read-only or impossible folder, a full disk) or holds a bad
entry (cut short, another format): the trace opens from its file, one warning at most, and nothing
the cache holds is damaged."""

from __future__ import annotations

import json
import os
import resource

import pytest

from tests.conftest import TPU_TRACE
from tests.store.cache_helpers import cache_warnings, columns, copied, names, run_tpuscope, trace_folder
from tpuscope.app.opener import open_trace
from tpuscope.readers.files import one_format, resolve_profile_files
from tpuscope.store import traces

ENTRY_BYTES_MAX = 64 << 10  # far below the TPU profile's 1.2 MB entry: the write hits the limit


def _expected(copy, tmp_path) -> dict:
    done = run_tpuscope("info", str(copy), "--json", "--no-cache", cache_root=tmp_path / "off")
    return json.loads(done.stdout)


def _entry_path(copy):
    files, _ = one_format(resolve_profile_files(copy, None))
    return traces.cache_dir() / traces.entry_name(traces.key(files))


def test_a_cache_folder_that_cannot_be_made_costs_one_warning_and_the_trace_opens(tmp_path):
    copy = copied(TPU_TRACE, tmp_path / "profile")
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    folder = blocker / "cache"  # ENOTDIR, whoever runs the test (root ignores a read-only mode)
    done = run_tpuscope("info", str(copy), "--json", cache_root=folder)
    assert done.returncode == 0
    assert json.loads(done.stdout) == _expected(copy, tmp_path)
    (warning,) = cache_warnings(done.stderr)
    assert str(blocker) in warning and "cannot be written" in warning
    assert blocker.read_text() == "not a folder"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder anyway")
def test_a_read_only_cache_folder_costs_one_warning_and_keeps_its_entries(tmp_path):
    copy = copied(TPU_TRACE, tmp_path / "profile")
    root = tmp_path / "cache"
    folder = trace_folder(root)
    folder.mkdir(parents=True)
    (folder / "kept-v1.trace").write_bytes(b"someone's")
    folder.chmod(0o555)
    try:
        done = run_tpuscope("info", str(copy), "--json", cache_root=root)
    finally:
        folder.chmod(0o755)
    assert done.returncode == 0 and json.loads(done.stdout) == _expected(copy, tmp_path)
    assert len(cache_warnings(done.stderr)) == 1
    assert names(folder) == ["kept-v1.trace"]


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (ENTRY_BYTES_MAX, ENTRY_BYTES_MAX))


def test_a_full_disk_while_writing_leaves_no_entry_nor_partial_file(tmp_path):
    """No file may grow past 64 KiB in the process (RLIMIT_FSIZE): each write past it fails with
    EFBIG as on a full disk (ENOSPC), halfway through the entry."""
    copy = copied(TPU_TRACE, tmp_path / "profile")
    folder = tmp_path / "cache"
    (folder).mkdir()
    done = run_tpuscope("info", str(copy), "--json", cache_root=folder, preexec_fn=_limit_file_size)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == _expected(copy, tmp_path)
    assert len(cache_warnings(done.stderr)) <= 1  # none when the detached child met the limit
    traces.wait_for_writes(trace_folder(folder))
    assert names(trace_folder(folder)) == []
    again = run_tpuscope("info", str(copy), "--json", cache_root=folder)  # no limit: the entry is written
    assert json.loads(again.stdout) == _expected(copy, tmp_path) and again.stderr == ""
    traces.wait_for_writes(trace_folder(folder))
    assert len(names(trace_folder(folder))) == 1


@pytest.mark.parametrize("damage", ["cut_short", "header_only", "other_version", "old_format_magic"])
def test_a_bad_entry_is_a_miss_and_is_replaced_whole(damage, tmp_path, monkeypatch, capfd):
    """The bad entry is removed with one warning; the next write puts a whole one in its place."""
    monkeypatch.setattr(traces, "_warned", False)  # this process's one warning is still to come
    copy = copied(TPU_TRACE, tmp_path / "profile")
    expected = columns(open_trace(copy))
    traces.wait_for_writes()
    entry = _entry_path(copy)
    raw = entry.read_bytes()
    if damage == "cut_short":
        entry.write_bytes(raw[: len(raw) - 4096])
    elif damage == "header_only":
        entry.write_bytes(raw[: traces._HEADER.size])
    elif damage == "other_version":  # a build of another format that wrote under this name
        entry.write_bytes(raw[:8] + (traces.FORMAT_VERSION + 1).to_bytes(4, "little") + raw[12:])
    else:
        entry.write_bytes(b"TPUSCOPE" + raw[8:])
    assert traces.load(one_format(resolve_profile_files(copy, None))[0]) is None
    assert columns(open_trace(copy)) == expected  # from the file
    traces.wait_for_writes()
    assert entry.read_bytes() == raw  # the next write replaced it with a whole entry
    assert columns(open_trace(copy)) == expected
    (warning,) = capfd.readouterr().err.splitlines()
    assert f"the trace cache entry {entry}" in warning and "it was removed" in warning
