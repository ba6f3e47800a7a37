"""`tpuscope.open(bytes)` reads the bytes where they are (jax-ml/jax#40258: profiler results in memory,
without a file round trip): opening an XSpace or a Kineto trace held in memory, plain or gzip, creates
no file and no temporary folder, and gives the events its file gives; a gzip bomb held in memory is
refused by the same bound as a file, naming `<memory: NAME>`."""

from __future__ import annotations

import builtins
import gzip
import io
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

import tpuscope
from tests.conftest import SHARED_TRACES, TPU_TRACE
from tpuscope.errors import ProfileError
from tpuscope.readers.files import MAX_GZIP_EXPANSION
from tpuscope.readers.registry import MemoryFile
from tpuscope.readers.trace_event.reader import read_file

KINETO_TRACE = (
    SHARED_TRACES / "kineto" / "kineto_tb__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz"
)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def events_of(profile: tpuscope.Profile) -> list[tuple]:
    trace = profile.trace
    return [
        (plane.name, track.name, track.start_ps.tobytes(), track.duration_ps.tobytes(),
         [trace.strings[int(i)] for i in np.unique(track.name_id)])
        for plane in trace.planes
        for track in plane.tracks
    ]  # fmt: skip


@pytest.fixture
def no_file_written(monkeypatch, tmp_path: Path):
    """Every way a load could write a file records the attempt and fails: open() for writing (Path's
    write_bytes and open go through it), os.open with a write or create flag, tempfile's folders and
    files; and the temporary folder is a fresh one that must stay empty. Yields the attempts."""
    attempts: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def guarded_open(file, mode="r", *args, **kwargs):
        if isinstance(mode, str) and any(c in mode for c in "wax+"):
            attempts.append(f"open({file!r}, {mode!r})")
            raise PermissionError(f"the test forbids writing {file!r}")
        return real_open(file, mode, *args, **kwargs)

    def guarded_os_open(path, flags, *args, **kwargs):
        if flags & _WRITE_FLAGS:
            attempts.append(f"os.open({path!r})")
            raise PermissionError(f"the test forbids writing {path!r}")
        return real_os_open(path, flags, *args, **kwargs)

    def refused(name: str):
        def call(*args, **kwargs):
            attempts.append(f"tempfile.{name}")
            raise PermissionError(f"the test forbids tempfile.{name}")

        return call

    fresh = tmp_path / "tmp"
    fresh.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(fresh))
    monkeypatch.setenv("TMPDIR", str(fresh))
    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(io, "open", guarded_open)
    monkeypatch.setattr(os, "open", guarded_os_open)
    for name in ("mkdtemp", "mkstemp", "TemporaryDirectory", "NamedTemporaryFile", "TemporaryFile"):
        monkeypatch.setattr(tempfile, name, refused(name))
    yield attempts
    assert not list(fresh.iterdir())


@pytest.mark.parametrize(
    ("path", "compressed"),
    [(TPU_TRACE, False), (TPU_TRACE, True), (KINETO_TRACE, False), (KINETO_TRACE, True)],
    ids=["xspace", "xspace-gzip", "kineto", "kineto-gzip"],
)
def test_bytes_open_without_writing_a_file(path: Path, compressed: bool, request):
    from_file = tpuscope.open(path, use_cache=False)  # before the guard: its imports may write .pyc files
    data = path.read_bytes()
    data = data if (data[:2] == b"\x1f\x8b") == compressed else (
        gzip.compress(data, compresslevel=1) if compressed else gzip.decompress(data)
    )  # fmt: skip
    name = path.name.removesuffix(".gz") + (".gz" if compressed else "")
    attempts = request.getfixturevalue("no_file_written")
    from_bytes = tpuscope.open(data, name=name)
    assert attempts == []
    assert from_bytes.trace.sources == [f"<memory: {name}>"]
    assert from_bytes.trace.event_count == from_file.trace.event_count > 0
    assert events_of(from_bytes) == events_of(from_file)
    if path == KINETO_TRACE:  # the same decoder as the file: the C one, fed the bytes (streamed for gzip)
        assert read_file(MemoryFile(name, data)).decoder == read_file(path).decoder == "c"


def _bomb(prefix: bytes, filler: bytes, size: int) -> bytes:
    """`prefix` then `filler` repeated to `size` bytes, gzip-compressed: it expands far more than
    MAX_GZIP_EXPANSION times (a repeated pattern compresses ~1000:1)."""
    data = gzip.compress(prefix + filler * ((size - len(prefix)) // len(filler)), compresslevel=9)
    assert size > 2 * MAX_GZIP_EXPANSION * len(data)
    return data


@pytest.mark.parametrize(
    ("name", "prefix", "filler"),
    [("bomb.xplane.pb.gz", b"", b"\0"), ("bomb.json.gz", b'{"traceEvents": [', b"0,")],
    ids=["xspace", "trace-event"],
)
def test_a_gzip_bomb_in_memory_meets_the_files_bound(
    name: str, prefix: bytes, filler: bytes, no_file_written
):
    with pytest.raises(ProfileError) as raised:
        tpuscope.open(_bomb(prefix, filler, 64 << 20), name=name)
    sentence = str(raised.value)
    assert sentence.startswith(f"Cannot open <memory: {name}>: its gzip data expands more than")
    assert "decompression bomb" in sentence and "\n" not in sentence
    assert no_file_written == []
