"""The gzip bomb (issue 39): a gzip trace whose JSON follows a mass of blanks (a stream of blanks
compresses ~1000:1) is refused in one sentence once the blanks pass their bound, instead of being
inflated for tens of seconds; below the bound it loads. Generated in tmp_path: 200 MB of blanks,
~200 KB on disk."""

from __future__ import annotations

import json
import time
import zlib

import pytest

from tpuscope.cli import main
from tpuscope.errors import ProfileError
from tpuscope.readers.files import MAX_LEADING_BLANK_BYTES, read_profile_bytes

BLANK_BYTES = 200 * 10**6
# Generous for a loaded machine: inflating 200 MB takes under a second on one free core.
TIME_BOUND_S = 20.0
TRACE = {
    "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 10 * k, "dur": 5, "pid": 1, "tid": 1}
        for k in range(10)
    ]
}


@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    """BLANK_BYTES of blanks, then a valid Kineto trace, gzip-compressed a piece at a time."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.json.gz"
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    piece = b" " * (8 << 20)
    with open(path, "wb") as out:
        written = 0
        while written < BLANK_BYTES:
            chunk = piece[: BLANK_BYTES - written]
            out.write(compressor.compress(chunk))
            written += len(chunk)
        out.write(compressor.compress(json.dumps(TRACE).encode()))
        out.write(compressor.flush())
    assert path.stat().st_size < BLANK_BYTES // 100
    return path


def test_blanks_past_the_bound_are_refused_in_one_sentence(bomb):
    started = time.monotonic()
    with pytest.raises(ProfileError) as error:
        read_profile_bytes(bomb, skip_leading_blanks=True, max_leading_blanks=BLANK_BYTES // 4)
    assert time.monotonic() - started < TIME_BOUND_S
    sentence = str(error.value)
    assert str(bomb) in sentence and "blank space" in sentence and "48 MiB" in sentence
    assert "\n" not in sentence


def test_blanks_within_the_bound_load(bomb, capsys):
    assert BLANK_BYTES < MAX_LEADING_BLANK_BYTES
    started = time.monotonic()
    assert main(["info", str(bomb), "--json", "--no-cache"]) == 0
    assert time.monotonic() - started < TIME_BOUND_S
    assert json.loads(capsys.readouterr().out)


def test_the_bound_applies_to_blanks_only(bomb):
    """A binary profile (no blank skipping) is bounded by the expansion ratio instead."""
    with pytest.raises(ProfileError, match="expands"):
        read_profile_bytes(bomb)
