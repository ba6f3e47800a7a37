"""The trace cache's bound: its size limit and where it comes from, least-recently-used entries
removed to make room, entries of older formats and unheld partial files removed, and `tpuscope cache`
(its listing of every kind, and `clear`). The other kinds under the same cap and switch:
tests/store/test_one_store.py."""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.conftest import GPU_TRACE, PTXLA_TRACE, TPU_TRACE
from tests.store.cache_helpers import columns, copied, names, trace_folder
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.readers.files import one_format, resolve_profile_files
from tpuscope.store import cache_limit, traces


def _entry_name(path) -> str:
    files, _ = one_format(resolve_profile_files(path, None))
    return traces.entry_name(traces.key(files))


def _open_and_write(path):
    trace = open_trace(path)
    traces.wait_for_writes()
    time.sleep(0.02)  # entries' mtimes apart, whatever the file system's clock resolution
    return trace


@pytest.mark.parametrize(("text", "expected"), [
    ("2G", 2 << 30), ("500M", 500 << 20), ("1.5GiB", 3 << 29), ("64k", 64 << 10), ("123", 123), ("0", 0),
    (" 3 GB ", 3 << 30), ("1t", 1 << 40),
])  # fmt: skip
def test_sizes_parse_as_powers_of_1024(text, expected):
    assert traces.parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "two gigs", "-1G", "2X", "1e9"])
def test_a_size_that_is_none_says_so(text):
    with pytest.raises(ValueError, match="is not a size"):
        traces.parse_size(text)


def test_the_limit_comes_from_the_environment_then_the_app_then_the_default(monkeypatch):
    monkeypatch.delenv(traces.MAX_ENV, raising=False)
    monkeypatch.setattr(cache_limit, "_app_limit", None)
    assert traces.configured_limit() == (None, "default")
    assert 0 < traces.size_limit() <= traces.DEFAULT_MAX_BYTES
    traces.set_size_limit(3 << 20)
    assert traces.configured_limit() == (3 << 20, "the app's setting") and traces.size_limit() == 3 << 20
    monkeypatch.setenv(traces.MAX_ENV, "2G")
    assert traces.configured_limit() == (2 << 30, traces.MAX_ENV)


def test_least_recently_used_entries_make_room_for_a_new_one(tmp_path, monkeypatch):
    a, b, c = (copied(p, tmp_path / "profiles") for p in (TPU_TRACE, PTXLA_TRACE, GPU_TRACE))
    folder, root = traces.cache_dir(), os.environ["TPUSCOPE_CACHE_DIR"]
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(tmp_path / "elsewhere"))
    _open_and_write(c)
    (c_entry,) = trace_folder(tmp_path / "elsewhere").iterdir()
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", root)
    _open_and_write(a)
    _open_and_write(b)
    sizes = [p.stat().st_size for p in folder.iterdir()]
    # Room for all three entries but the smaller of the first two.
    monkeypatch.setenv(traces.MAX_ENV, str(sum(sizes) + c_entry.stat().st_size - 1))
    assert traces.load(one_format(resolve_profile_files(a, None))[0]) is not None  # a hit: a is used last
    time.sleep(0.02)
    expected_c = columns(_open_and_write(c))
    assert names(traces.cache_dir()) == sorted([_entry_name(a), _entry_name(c)])  # b was used least recently
    assert columns(open_trace(c)) == expected_c
    total = sum(p.stat().st_size for p in traces.cache_dir().iterdir())
    assert total <= traces.size_limit()


def test_an_entry_larger_than_the_limit_is_not_written_and_removes_nothing(tmp_path, monkeypatch):
    small, big = copied(PTXLA_TRACE, tmp_path / "p"), copied(TPU_TRACE, tmp_path / "p")
    _open_and_write(small)
    monkeypatch.setenv(traces.MAX_ENV, str(next(traces.cache_dir().iterdir()).stat().st_size + 1024))
    expected = columns(_open_and_write(big))
    assert names(traces.cache_dir()) == [_entry_name(small)]
    assert columns(open_trace(big)) == expected  # from the file again


def test_a_zero_limit_turns_the_cache_off(tmp_path, monkeypatch):
    copy = copied(TPU_TRACE, tmp_path / "p")
    _open_and_write(copy)
    monkeypatch.setenv(traces.MAX_ENV, "0")
    assert traces.load(one_format(resolve_profile_files(copy, None))[0]) is None
    other = copied(PTXLA_TRACE, tmp_path / "p")
    _open_and_write(other)
    assert names(traces.cache_dir()) == [_entry_name(copy)]


def test_older_formats_and_unheld_partial_files_go_when_an_entry_is_written(tmp_path):
    folder = traces.cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    stale = {
        "0123456789abcdef.trace": b"TPUSCOPE format 11",  # two zlib checksums, before format 12
        "0123456789abcdef0123456789abcdef.trace": b"TPUSCOPE sha-256 named",  # before the key change
        "0123456789abcdef-v11.trace": b"an older format's",
        ".0123456789abcdef.4242.140000.partial": b"a killed writer's (format 11 naming)",
        ".fedcba9876543210-v12.trace.partial": b"a killed writer's",
    }
    kept = {"0123456789abcdef-v99.trace": b"a newer tpuscope's", "notes.txt": b"not ours"}
    for name, data in {**stale, **kept}.items():
        (folder / name).write_bytes(data)
    copy = copied(TPU_TRACE, tmp_path / "p")
    _open_and_write(copy)
    assert names(folder) == sorted([*kept, _entry_name(copy)])


def test_the_cache_command_lists_trace_entries_and_clear_empties_the_folder(tmp_path, capsys):
    copy = copied(TPU_TRACE, tmp_path / "p")
    trace = _open_and_write(copy)
    folder = traces.cache_dir()
    (folder / "pods").mkdir()
    (folder / "pods" / "summary").write_bytes(b"x" * 100)  # where an older tpuscope kept pod results
    (folder / "0123456789abcdef.trace").write_bytes(b"old")
    assert main(["cache", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["folder"] == str(folder) and shown["format_version"] == traces.FORMAT_VERSION
    assert shown["root"] == os.environ["TPUSCOPE_CACHE_DIR"] and shown["caching"] is True
    by_name = {e["name"]: e for e in shown["entries"]}
    entry = by_name[_entry_name(copy)]
    assert entry["sources"] == [os.path.abspath(copy)] and entry["events"] == trace.event_count
    assert entry["state"] == "current" and by_name["0123456789abcdef.trace"]["state"] == "older format"
    kinds = {k["kind"]: k for k in shown["kinds"]}
    assert kinds["traces"]["bytes"] == shown["entry_bytes"] == sum(e["bytes"] for e in shown["entries"])
    legacy = kinds["older layout"]
    assert (legacy["folder"], legacy["files"], legacy["bytes"]) == (shown["root"], 1, 100)
    assert shown["bytes"] == shown["entry_bytes"] + 100
    assert main(["cache"]) == 0
    text = capsys.readouterr().out
    assert shown["root"] in text and str(copy) in text and "older format" in text and "older layout:" in text
    assert main(["cache", "clear"]) == 0
    assert "Removed 3 files" in capsys.readouterr().out
    assert names(folder) == []
    assert columns(open_trace(copy)) == columns(trace)  # from the file after the clear
