"""Bad trace-event JSON and odd paths, through the CLI: one sentence and exit 2, or a salvaged load
whose one warning counts what was dropped (and `--strict` makes that an error). Every mutant is a
real Kineto trace with one thing changed."""

from __future__ import annotations

import copy
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TPU_TRACE
from tests.readers.trace_event.conftest import A100, AMD
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.errors import ProfileError
from tpuscope.readers.files import MAX_GZIP_EXPANSION, read_profile_bytes

pytestmark = pytest.mark.filterwarnings("error")  # a numpy RuntimeWarning fails the test


def _document(path: Path = A100) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


ORIGINAL = _document()
ORIGINAL_EVENTS = sum(r.get("ph") in ("X", "i", "I") for r in ORIGINAL["traceEvents"])


def _mutant(change) -> bytes:
    document = copy.deepcopy(ORIGINAL)
    change(document["traceEvents"])
    return json.dumps(document).encode()


def _rows(records: list, ph: str, name: str | None = None) -> list[dict]:
    return [r for r in records if r.get("ph") == ph and (name is None or r.get("name") == name)]


def _write(tmp_path: Path, data: bytes, name: str = "t.pt.trace.json") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _cli(capsys, *args: str) -> tuple[int, list[str]]:
    code = main(["info", *args])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    return code, lines


def _refused(capsys, path: Path, cause: str, *flags: str) -> str:
    code, lines = _cli(capsys, str(path), "--no-cache", *flags)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"tpuscope: Cannot open {path}: ") and cause in lines[0], lines[0]
    return lines[0]


def _salvaged(capsys, path: Path, warning: str) -> None:
    """Loads with exactly one warning holding `warning`; `--strict` refuses with the same cause."""
    code, lines = _cli(capsys, str(path), "--no-cache")
    assert code == 0 and len(lines) == 1, lines
    assert lines[0].startswith(f"tpuscope: warning: {path}") and warning in lines[0], lines[0]
    _refused(capsys, path, warning, "--strict")


@pytest.mark.parametrize("value", [{"a": 1}, ["x"], 7], ids=["dict", "list", "number"])
def test_metadata_names_of_the_wrong_type_are_dropped_and_counted(tmp_path, capsys, value):
    def change(records):
        for record in _rows(records, "M", "thread_name"):
            record["args"]["name"] = value
        for record in _rows(records, "M", "process_labels") + _rows(records, "M", "process_name"):
            record["args"]["labels" if record["name"] == "process_labels" else "name"] = value

    document = json.loads(_mutant(change))
    count = sum(r.get("ph") == "M" and r.get("name") in ("thread_name", "process_name", "process_labels")
                for r in document["traceEvents"])  # fmt: skip
    path = _write(tmp_path, json.dumps(document).encode())
    _salvaged(capsys, path, f"{count:,} records dropped: metadata `args.")
    assert open_trace(path, use_cache=False).event_count == ORIGINAL_EVENTS


@pytest.mark.parametrize("ts", [1e308, -1e308, 1e20, 2**63], ids=["1e308", "-1e308", "1e20", "2^63"])
def test_times_the_timeline_cannot_hold_are_dropped_never_overflow(tmp_path, capsys, ts):
    def change(records):
        for record in _rows(records, "X")[:312]:
            record["ts"] = ts

    path = _write(tmp_path, _mutant(change))
    _salvaged(capsys, path, "312 records dropped: `ts` out of range")
    assert open_trace(path, use_cache=False).event_count == ORIGINAL_EVENTS - 312


def test_a_huge_duration_is_dropped(tmp_path, capsys):
    path = _write(tmp_path, _mutant(lambda records: _rows(records, "X")[0].update(dur=1e20)))
    _salvaged(capsys, path, "1 record dropped: `dur` out of range")


def test_no_numpy_warning_reaches_stderr(tmp_path):
    def change(records):
        for record in _rows(records, "X")[:5]:
            record["ts"] = 1e20

    path = _write(tmp_path, _mutant(change))
    result = subprocess.run(
        [sys.executable, "-m", "tpuscope", "info", str(path), "--no-cache"], capture_output=True, text=True
    )
    assert result.returncode == 0
    assert result.stderr.strip().splitlines() == [
        f"tpuscope: warning: {path}: 5 records dropped: `ts` out of range."
    ]


@pytest.mark.parametrize(
    "field, value, reason",
    [
        ("tid", 2**64, "`pid` or `tid` out of range"),
        ("pid", -(2**70), "`pid` or `tid` out of range"),
        ("tid", 1.5, "`tid` is not a number or a string"),
        ("ts", "soon", "`ts` is not a number"),
        ("name", ["a"], "`name` is not a string"),
        ("args", [1], "`args` is not an object"),
    ],
)
def test_one_bad_id_or_type_drops_one_record_not_the_file(tmp_path, capsys, field, value, reason):
    path = _write(tmp_path, _mutant(lambda records: _rows(records, "X")[0].update({field: value})))
    _salvaged(capsys, path, f"1 record dropped: {reason}")
    assert open_trace(path, use_cache=False).event_count == ORIGINAL_EVENTS - 1


@pytest.mark.parametrize("where", ["top level", "record", "args", "metadata name"])
def test_deep_nesting_is_bounded_before_the_decoder(tmp_path, capsys, where):
    deep = "[" * 100_000 + "]" * 100_000
    text = json.dumps(ORIGINAL)
    marker = '"__deep__"'
    if where == "top level":
        text = text[:-1] + f', "unknown": {marker}}}'
    elif where == "record":
        text = text.replace('"ph": "X"', f'"unknown": {marker}, "ph": "X"', 1)
    elif where == "args":
        text = text.replace('"args": {', f'"args": {{"unknown": {marker}, "External id": {marker}, ', 1)
    else:
        document = copy.deepcopy(ORIGINAL)
        _rows(document["traceEvents"], "M", "thread_name")[0]["args"]["name"] = "__deep__"
        text = json.dumps(document)
    path = _write(tmp_path, text.replace(marker, deep).encode())
    if where == "metadata name":
        _salvaged(capsys, path, "1 record dropped: metadata `args.name` is not a string")
        return
    code, lines = _cli(capsys, str(path), "--no-cache")
    assert code == 0 and lines == []  # an unknown key's value is skipped, a deep arg shown as text
    assert open_trace(path, use_cache=False).event_count == ORIGINAL_EVENTS


@pytest.mark.parametrize(
    "encode",
    [
        lambda text: b"\xef\xbb\xbf" + text.encode(),
        lambda text: text.encode("utf-16"),  # a byte-order mark, then little-endian
        lambda text: text.encode("utf-16-be"),  # no mark
        lambda text: text.encode("utf-32"),
        lambda text: b" \n\t\r" * 10_000 + text.encode(),  # more blanks than any sniff window
    ],
    ids=["utf-8 bom", "utf-16 bom", "utf-16-be", "utf-32", "blanks"],
)
def test_byte_order_marks_wide_encodings_and_blanks_load(tmp_path, capsys, encode):
    path = _write(tmp_path, encode(json.dumps(ORIGINAL)))
    code, lines = _cli(capsys, str(path), "--no-cache")
    assert code == 0 and lines == []
    assert open_trace(path, use_cache=False).event_count == ORIGINAL_EVENTS


def test_utf16_that_does_not_decode_names_its_encoding(tmp_path, capsys):
    path = _write(tmp_path, json.dumps(ORIGINAL).encode("utf-16")[:-1])  # half a code unit at the end
    _refused(capsys, path, "the file is UTF-16 (little-endian) text that does not decode")


def test_invalid_utf8_in_a_name_is_replaced_and_counted(tmp_path, capsys):
    text = json.dumps(ORIGINAL).encode()
    name = _rows(ORIGINAL["traceEvents"], "X")[0]["name"].encode()
    path = _write(tmp_path, text.replace(b'"' + name + b'"', b'"' + name + b'\xff"', 1))
    _salvaged(capsys, path, "1 invalid UTF-8 sequence replaced by U+FFFD")
    trace = open_trace(path, use_cache=False)
    assert trace.event_count == ORIGINAL_EVENTS
    replaced = name.decode() + "\ufffd"
    assert any(track.event_name(0) == replaced for track in trace.tracks() if len(track.start_ps))


def test_malformed_json_says_json(tmp_path, capsys):
    message = _refused(
        capsys, _write(tmp_path, b'{"traceEvents": [}'), "the file is not valid JSON (JSON is malformed"
    )
    assert "jSON" not in message


def test_a_cut_document_loads_its_complete_records(tmp_path, capsys):
    text = json.dumps(ORIGINAL).encode()
    path = _write(tmp_path, text[: len(text) // 2])
    _salvaged(capsys, path, "is cut short: it ends after ")
    kept = open_trace(path, use_cache=False).event_count
    assert 0 < kept < ORIGINAL_EVENTS


def test_a_cut_gzip_names_its_gzip_data(tmp_path, capsys):
    data = gzip.compress(json.dumps(ORIGINAL).encode())
    path = _write(tmp_path, data[: len(data) // 2], "t.pt.trace.json.gz")
    _salvaged(capsys, path, "is cut short: its gzip data ends after ")


def test_a_document_cut_inside_its_first_record(tmp_path, capsys):
    path = _write(tmp_path, b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1')
    _refused(
        capsys,
        path,
        "the file is cut short before its first complete event (it ends inside its first record)",
    )


@pytest.mark.parametrize("profile", ["json", "xplane"])
def test_strict_words_a_cut_file_alike_cached_and_uncached(tmp_path, capsys, profile):
    if profile == "json":
        text = json.dumps(ORIGINAL).encode()
        path = _write(tmp_path, text[: len(text) // 2])
    else:
        data = TPU_TRACE.read_bytes()
        path = _write(tmp_path, data[: len(data) // 2], "cut.xplane.pb")
    uncached = _refused(capsys, path, "the file is cut short: ", "--strict")
    code, lines = _cli(capsys, str(path))  # a salvaged load, written to the cache
    assert code == 0 and len(lines) == 1
    code, lines = _cli(capsys, str(path), "--strict")  # from the cache
    assert code == 2 and lines == [uncached]


def test_gzip_that_expands_past_the_bound_is_refused(tmp_path, capsys):
    padding = "0" * (64 << 20)  # compresses about 1000:1
    document = {"padding": padding, "traceEvents": ORIGINAL["traceEvents"]}
    path = _write(tmp_path, gzip.compress(json.dumps(document).encode()), "t.pt.trace.json.gz")
    _refused(capsys, path, f"its gzip data expands more than {MAX_GZIP_EXPANSION} times its compressed size")


def test_gzip_blanks_before_a_document_are_skipped_as_they_decompress(tmp_path, capsys):
    text = json.dumps(ORIGINAL).encode()
    blanks = 64 << 20
    path = tmp_path / "t.pt.trace.json.gz"
    with gzip.GzipFile(path, "wb", compresslevel=9) as compressor:
        compressor.write(b"\xef\xbb\xbf")
        for _ in range(blanks >> 20):
            compressor.write(b" " * (1 << 20))
        compressor.write(text)
    assert blanks > MAX_GZIP_EXPANSION * path.stat().st_size  # held, the blanks would pass the bound
    data, cut = read_profile_bytes(path, skip_leading_blanks=True)
    assert data == text and not cut  # the blanks were never held
    code, lines = _cli(capsys, str(path), "--no-cache")
    assert code == 0 and lines == []


def test_a_named_pipe_a_device_and_symlinks_are_named_as_what_they_are(tmp_path, capsys):
    fifo = tmp_path / "pipe.pt.trace.json"
    os.mkfifo(fifo)
    _refused(capsys, fifo, "it is a named pipe (FIFO), not a profile file")
    _refused(capsys, Path(os.devnull), "it is a character device, not a profile file")
    loop = tmp_path / "loop.pt.trace.json"
    loop.symlink_to(loop)
    _refused(capsys, loop, "it is a symbolic link loop")
    dangling = tmp_path / "dangling.pt.trace.json"
    dangling.symlink_to(tmp_path / "gone.pt.trace.json")
    _refused(
        capsys, dangling, f"it is a symbolic link to {tmp_path / 'gone.pt.trace.json'}, which does not exist"
    )


def test_a_file_name_that_is_not_utf8_loads_cached_and_is_shown_with_escapes(tmp_path, capsys):
    folder = os.fsencode(tmp_path)
    good = Path(os.fsdecode(folder + b"/caf\xe9.pt.trace.json.gz"))
    good.write_bytes(AMD.read_bytes())
    first = open_trace(good)  # the cache's key is made of the name's bytes
    again = open_trace(good)
    assert again.event_count == first.event_count > 0
    bad = Path(os.fsdecode(folder + b"/bad\xff.pt.trace.json"))
    bad.write_bytes(b"{not json")
    with pytest.raises(ProfileError) as error:
        open_trace(bad)
    assert "bad\\xff.pt.trace.json" in str(error.value)
    str(error.value).encode("utf-8")  # printable as is


def test_files_whose_clocks_are_too_far_apart_are_one_sentence(tmp_path, capsys):
    near = _write(tmp_path, json.dumps(ORIGINAL).encode(), "a.pt.trace.json")
    far = copy.deepcopy(ORIGINAL)
    for record in far["traceEvents"]:
        if "ts" in record:
            record["ts"] += 1e15  # 31 years later: each file holds, the two together do not
    _write(tmp_path, json.dumps(far).encode(), "b.pt.trace.json")
    _refused(
        capsys,
        near.parent,
        "its files' clocks are 11,574 days apart, more than one timeline holds",
        "--no-cache",
    )


def test_a_file_compressed_twice_loads_and_a_cut_inside_is_named(tmp_path, capsys):
    inner = gzip.compress(json.dumps(ORIGINAL).encode())
    path = _write(tmp_path, gzip.compress(inner), "twice.pt.trace.json.gz")
    assert open_trace(path, use_cache=False).event_count == ORIGINAL_EVENTS
    cut = _write(tmp_path, gzip.compress(inner[: len(inner) // 2]), "cut.pt.trace.json.gz")
    _salvaged(capsys, cut, "is cut short: its gzip data ends after ")


def test_gzip_that_would_take_more_than_its_share_of_free_memory_is_refused(tmp_path, capsys, monkeypatch):
    from tpuscope.readers import files

    monkeypatch.setattr(files, "GZIP_MEMORY_SHARE", 1e-6)  # the share of this machine's real free memory
    path = _write(tmp_path, gzip.compress(json.dumps(ORIGINAL).encode()), "t.pt.trace.json.gz")
    _refused(capsys, path, "more than a load may take of the ")
