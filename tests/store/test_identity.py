"""The one key every cache names its entries with: a file's resolved path, size and modification
time (a bucket object's URL, size and generation), salted per kind."""

from __future__ import annotations

import os
import zlib

from tests.conftest import PTXLA_TRACE
from tests.store.cache_helpers import copied
from tpuscope.store import identity, run_summaries, traces


def test_one_file_named_two_ways_has_one_key(tmp_path, monkeypatch):
    copy = copied(PTXLA_TRACE, tmp_path / "p")
    (tmp_path / "link").symlink_to(copy.parent)
    monkeypatch.chdir(tmp_path)
    key = identity.files_key([copy])
    assert key is not None and len(key) == 16
    assert identity.files_key([tmp_path / "link" / copy.name]) == key
    assert identity.files_key([copy.relative_to(tmp_path)]) == key


def test_a_changed_file_has_a_new_key_and_a_missing_one_none(tmp_path):
    copy = copied(PTXLA_TRACE, tmp_path / "p")
    key = identity.files_key([copy])
    st = copy.stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    touched = identity.files_key([copy])
    assert touched != key
    with open(copy, "ab") as handle:
        handle.write(b"\0")
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # same time, one byte more
    assert identity.files_key([copy]) not in (key, touched)
    assert identity.files_key([copy, tmp_path / "gone.xplane.pb"]) is None


def test_the_salt_sets_kinds_apart_and_the_order_of_files_counts(tmp_path):
    a, b = copied(PTXLA_TRACE, tmp_path / "a"), copied(PTXLA_TRACE, tmp_path / "b")
    assert identity.files_key([a], salt="pods|light") != identity.files_key([a], salt="pods|full")
    assert identity.files_key([a], salt="pods|light") != identity.files_key([a])
    assert identity.files_key([a, b]) != identity.files_key([b, a])


def test_trace_entries_written_before_the_shared_key_are_still_found(tmp_path):
    """Format 12's entry name: two checksums of 'resolved path|size|mtime_ns', one line per file."""
    a, b = copied(PTXLA_TRACE, tmp_path / "a"), copied(PTXLA_TRACE, tmp_path / "b")
    lines = [f"{f.resolve()}|{f.stat().st_size}|{f.stat().st_mtime_ns}" for f in (a, b)]
    data = "\n".join(lines).encode()
    assert traces.key([a, b]) == f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def test_a_bucket_objects_new_generation_is_a_new_run_summary_key():
    url = "gs://bucket/logdir/run1/host0.xplane.pb"
    before = run_summaries.remote_stamp([(url, 100, "1700000000000001")])
    after = run_summaries.remote_stamp([(url, 100, "1700000000000002")])
    assert before != after
    assert identity.key_of([url, before]) != identity.key_of([url, after])
