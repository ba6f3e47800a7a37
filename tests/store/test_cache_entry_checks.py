"""A cache entry proves itself before it is used (issue 39): flipped bytes in its header and in each
column buffer, truncations, pages of zeros, an entry of other contents of the profile, a FIFO, a
folder or a link in its place. Every open answers `info --json` as the uncached open does, says
once that the entry was dropped, and leaves a good entry behind.

The CLI runs in-process (`tpuscope.cli.main`), but where a FIFO could block the process forever: there
it runs as its own process, with a time limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT, TPU_TRACE
from tests.degenerate.profiles import xspace
from tests.store.cache_helpers import copied, trace_folder
from tpuscope.cli import main
from tpuscope.readers.files import one_format, resolve_profile_files
from tpuscope.store import traces

FIFO_TIME_LIMIT_S = 60  # a blocked open never returns; a working one takes about a second
PAGE = 4096
# Column buffers whose damage `info --json` is also compared for (every buffer is checked by load).
INFO_SAMPLES = 8


def _files(profile: Path) -> list[Path]:
    return one_format(resolve_profile_files(profile, None))[0]


def _entry(profile: Path) -> Path:
    return traces.cache_dir() / traces.entry_name(traces.key(_files(profile)))


def _info(profile: Path, capsys, *flags: str) -> tuple[dict, list[str]]:
    """`info --json` in this process: the answer, and the lines it wrote on stderr."""
    assert main(["info", str(profile), "--json", *flags]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err.splitlines()


def _buffers(raw: bytes) -> list[tuple[int, int]]:
    """(offset, length) of each column buffer of a whole entry, from its buffer table."""
    _, _, label_length, pickle_length, n_buffers, _, _ = traces._HEADER.unpack_from(raw, 0)
    table_start = traces._HEADER.size + label_length + pickle_length
    columns = traces._TABLE_COLUMNS
    table = np.frombuffer(raw, "<u8", n_buffers * columns, table_start).reshape(-1, columns)
    return [(offset, length) for offset, length, *_ in table.tolist()]


def _flipped(raw: bytes, at: int) -> bytes:
    return raw[:at] + bytes([raw[at] ^ 0x5A]) + raw[at + 1 :]


def _zero_page(raw: bytes, at: int) -> bytes:
    return raw[:at] + bytes(PAGE) + raw[at + PAGE :]


@pytest.fixture
def cached(tmp_path, capsys, monkeypatch) -> tuple[Path, bytes, dict]:
    """A profile copy, its whole cache entry's bytes, and its uncached `info --json`."""
    monkeypatch.setattr(traces, "_warned", False)
    profile = copied(TPU_TRACE, tmp_path / "profile")
    expected, _ = _info(profile, capsys, "--no-cache")
    _info(profile, capsys)
    traces.wait_for_writes()
    return profile, _entry(profile).read_bytes(), expected


def _check_reopen(profile: Path, expected: dict, capsys, monkeypatch, damaged: bool = True) -> None:
    """The damaged entry opens as the uncached profile, with one warning; then a good entry serves."""
    monkeypatch.setattr(traces, "_warned", False)
    answer, errors = _info(profile, capsys)
    assert answer == expected
    if damaged:
        (warning,) = errors
        assert "the trace cache entry" in warning and "read from its files" in warning
    traces.wait_for_writes()
    assert traces.load(_files(profile)) is not None  # written anew, and it passes every check
    assert capsys.readouterr().err == ""


def _damages(raw: bytes) -> dict[str, Callable[[bytes], bytes]]:
    """Damage to the header, label, pickle and table, truncations and pages of zeros."""
    _, _, label_length, pickle_length, n_buffers, total, _ = traces._HEADER.unpack_from(raw, 0)
    label_start = traces._HEADER.size
    pickle_start = label_start + label_length
    table_start = pickle_start + pickle_length
    largest_offset, largest_length = max(_buffers(raw), key=lambda buffer: buffer[1])
    inside_largest = largest_offset + (largest_length // 2 // PAGE) * PAGE
    found: dict[str, Callable[[bytes], bytes]] = {}
    for name, at in [("magic", 0), ("version", 8), ("label_length", 12), ("pickle_length", 16),
                     ("buffer_count", 24), ("total_length", 32), ("checksum", 40)]:  # fmt: skip
        found[f"header_{name}"] = lambda data, at=at: _flipped(data, at)
    found["label"] = lambda data: _flipped(data, label_start + label_length // 2)
    found["pickle"] = lambda data: _flipped(data, pickle_start + pickle_length // 2)
    found["buffer_table"] = lambda data: _flipped(data, table_start + 8 * n_buffers)
    found["empty"] = lambda data: b""
    found["cut_in_header"] = lambda data: data[: traces._HEADER.size // 2]
    found["cut_after_table"] = lambda data: data[: table_start + 8 * traces._TABLE_COLUMNS * n_buffers]
    found["cut_in_largest_buffer"] = lambda data: data[:inside_largest]
    found["one_byte_short"] = lambda data: data[: total - 1]
    found["one_byte_longer"] = lambda data: data + b"\0"
    found["all_zeros"] = lambda data: bytes(len(data))
    found["zero_first_page"] = lambda data: _zero_page(data, 0)
    found["zero_page_in_largest_buffer"] = lambda data: _zero_page(data, inside_largest)
    return found


def test_the_damage_cases_damage_what_they_name(cached):
    _, raw, _ = cached
    for name, damage in _damages(raw).items():
        assert damage(raw) != raw, name


@pytest.mark.parametrize("damage", [
    "header_magic", "header_version", "header_label_length", "header_pickle_length",
    "header_buffer_count", "header_total_length", "header_checksum", "label", "pickle", "buffer_table",
    "empty", "cut_in_header", "cut_after_table", "cut_in_largest_buffer", "one_byte_short",
    "one_byte_longer", "all_zeros", "zero_first_page", "zero_page_in_largest_buffer",
])  # fmt: skip
def test_a_damaged_entry_opens_as_the_uncached_profile(damage, cached, capsys, monkeypatch):
    profile, raw, expected = cached
    _entry(profile).write_bytes(_damages(raw)[damage](raw))
    _check_reopen(profile, expected, capsys, monkeypatch)


def test_a_flipped_byte_in_any_column_buffer_drops_the_entry(cached, capsys, monkeypatch):
    """Every non-empty buffer, one at a time, by the loader (fast); `info --json` for a spread sample."""
    profile, raw, expected = cached
    entry, files = _entry(profile), _files(profile)
    buffers = [(offset, length) for offset, length in _buffers(raw) if length]
    assert len(buffers) > 100  # the TPU sample's entry: one buffer per column of each track
    sampled = {round(k * (len(buffers) - 1) / (INFO_SAMPLES - 1)) for k in range(INFO_SAMPLES)}
    for index, (offset, length) in enumerate(buffers):
        entry.write_bytes(_flipped(raw, offset + length // 2))
        if index in sampled:
            _check_reopen(profile, expected, capsys, monkeypatch)
            continue
        monkeypatch.setattr(traces, "_warned", False)
        assert traces.load(files) is None, f"buffer {index} at {offset}"
        (warning,) = capsys.readouterr().err.splitlines()
        assert f"column buffer {_buffers(raw).index((offset, length))} of" in warning
        assert not entry.exists()


def test_an_entry_of_the_profiles_earlier_contents_is_not_served(tmp_path, capsys, monkeypatch):
    """A profile rewritten in place with the same size and modification time (a copy that keeps
    times, a rerun within the clock's resolution): the same key, other contents."""
    profile = xspace(tmp_path / "run.xplane.pb", [(1_000_000, 5_000_000)] * 100)
    times = os.stat(profile).st_atime_ns, os.stat(profile).st_mtime_ns
    _info(profile, capsys)
    traces.wait_for_writes()
    earlier_size = profile.stat().st_size
    xspace(profile, [(1_000_000, 6_000_000)] * 100)  # the same encoded length, other durations
    os.utime(profile, ns=times)
    assert profile.stat().st_size == earlier_size
    expected, _ = _info(profile, capsys, "--no-cache")
    _check_reopen(profile, expected, capsys, monkeypatch)


def test_a_folder_or_a_link_in_the_entrys_place_is_not_read(cached, tmp_path, capsys, monkeypatch):
    profile, raw, expected = cached
    entry = _entry(profile)
    entry.unlink()
    entry.mkdir()
    _check_reopen(profile, expected, capsys, monkeypatch)
    outside = tmp_path / "elsewhere.trace"
    outside.write_bytes(raw)  # a whole entry, but out of the folder
    entry.unlink()
    entry.symlink_to(outside)
    _check_reopen(profile, expected, capsys, monkeypatch)
    assert outside.read_bytes() == raw  # what the link named is left alone


def test_a_folder_that_cannot_be_removed_in_the_entrys_place_costs_one_warning(cached, capsys, monkeypatch):
    profile, _, expected = cached
    entry = _entry(profile)
    entry.unlink()
    entry.mkdir()
    (entry / "someone's").write_text("kept")
    monkeypatch.setattr(traces, "_warned", False)
    answer, errors = _info(profile, capsys)
    assert answer == expected
    (warning,) = errors
    assert "could not be removed" in warning
    assert (entry / "someone's").read_text() == "kept"


def _tpuscope(*args: str, cache_root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, TPUSCOPE_CACHE_DIR=str(cache_root))
    return subprocess.run([sys.executable, "-m", "tpuscope", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=FIFO_TIME_LIMIT_S)  # fmt: skip


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("where", ["entry", "partial"])
def test_a_fifo_in_place_of_the_entry_or_its_partial_file_never_blocks(where, tmp_path):
    profile = copied(TPU_TRACE, tmp_path / "profile")
    root = tmp_path / "cache"
    expected = json.loads(_tpuscope("info", str(profile), "--json", "--no-cache", cache_root=root).stdout)
    folder = trace_folder(root)
    folder.mkdir(parents=True)
    name = traces.entry_name(traces.key(_files(profile)))
    fifo = folder / (name if where == "entry" else f".{name}{traces.PARTIAL_SUFFIX}")
    os.mkfifo(fifo)
    listing = _tpuscope("cache", "--json", cache_root=root)  # lists it, without opening it
    assert listing.returncode == 0, listing.stderr
    done = _tpuscope("info", str(profile), "--json", cache_root=root)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == expected
    assert len(done.stderr.splitlines()) <= 1
    traces.wait_for_writes(folder)
    again = _tpuscope("info", str(profile), "--json", cache_root=root)
    assert json.loads(again.stdout) == expected and again.stderr == ""
    assert (folder / name).is_file() and not (folder / name).is_symlink()
    listing = _tpuscope("cache", "--json", cache_root=root)
    assert listing.returncode == 0 and any(
        e["state"] == "current" for e in json.loads(listing.stdout)["entries"]
    )


def test_the_buffer_checksum_summed_piece_by_piece_is_the_whole_buffers_and_sees_damage():
    """The writer sums each write piece (whole checksum blocks) as it goes; the reader the whole buffer."""
    block = traces.CHECKSUM_BLOCK_BYTES
    data = np.random.default_rng(7).integers(0, 256, 5 * block + 13, dtype=np.uint8).tobytes()
    whole = traces.buffer_checksum(memoryview(data))
    pieces = [traces.buffer_checksum(memoryview(data)[at : at + 2 * block], at // block, len(data))
              for at in range(0, len(data), 2 * block)]  # fmt: skip
    mask = (1 << 64) - 1
    assert whole == (sum(p[0] for p in pieces) & mask, sum(p[1] for p in pieces) & mask)
    for at in (0, 7, block + 3, len(data) - 1):  # any byte, the zero-padded tail's too
        assert traces.buffer_checksum(memoryview(_flipped(data, at))) != whole
    swapped = data[block : 2 * block] + data[:block] + data[2 * block :]  # the same sum, blocks moved
    assert traces.buffer_checksum(memoryview(swapped)) != whole
    assert traces.buffer_checksum(memoryview(_zero_page(data, 2 * block))) != whole
    small = data[: block - 1]  # under a block: CRC-32
    assert traces.buffer_checksum(memoryview(small)) != traces.buffer_checksum(memoryview(_flipped(small, 5)))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_clearing_the_store_removes_fifos_and_links_never_what_a_link_names(tmp_path):
    from tpuscope.store import inventory

    folder = traces.cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / "stray.trace")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "theirs.txt").write_text("kept")
    (folder / "linked").symlink_to(elsewhere, target_is_directory=True)
    (traces_usage,) = [kind for kind in inventory.usage() if kind.kind == "traces"]
    assert traces_usage.files == 2
    inventory.clear()
    assert list(folder.iterdir()) == []
    assert (elsewhere / "theirs.txt").read_text() == "kept"
