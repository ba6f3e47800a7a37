"""The C decoder (tpuscope/readers/trace_event/_jsontok.c through native.py) against the msgspec path it
replaces: the same columns, strings and warnings on every real trace-event file (the shared Kineto
traces, the Kineto trace with Python frames beside these tests, a real JAX recording's
`trace.json.gz`) and on the fuzz corpus of test_json_fuzz.py, whose mutants the C decoder either reads
the same way or declines (then the msgspec path reads them; the reasons are counted below).
"""

from __future__ import annotations

import copy
import gzip
import json
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SHARED_TRACES
from tests.readers.trace_event.conftest import A100, AMD, CPU_ONLY
from tests.readers.trace_event.python_frames import grafted_trace
from tests.readers.trace_event.test_json_fuzz import MUTANTS_PER_FILE, MUTATIONS, SEED
from tpuscope.errors import ProfileError
from tpuscope.model.trace import Trace
from tpuscope.readers.trace_event import native
from tpuscope.readers.trace_event.build import load_json_files
from tpuscope.readers.trace_event.parse import TraceEventFile
from tpuscope.readers.trace_event.reader import _choose, read_file

HERE = Path(__file__).parent
REAL_FILES = sorted(SHARED_TRACES.glob("*/*.json*")) + sorted((HERE / "data").glob("*.json*"))


def _with_c(path: Path) -> TraceEventFile:
    return read_file(path, use_c=True)


def _without_c(path: Path) -> TraceEventFile:
    return read_file(path, use_c=False)


TOP_FIELDS = (
    "process_names", "process_labels", "thread_names", "schema_version", "device_properties",
    "distributed_info", "display_time_unit", "base_time_ns", "counters_skipped", "losses",
)  # fmt: skip


def assert_same_file(old: TraceEventFile, new: TraceEventFile) -> None:
    for name in ("phase", "name", "category", "thread", "ts_us", "dur_us"):
        a, b = getattr(old.events, name), getattr(new.events, name)
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), name
    assert old.events.names == new.events.names
    assert old.events.categories == new.events.categories
    assert old.events.threads == new.events.threads
    assert list(old.events.args) == list(new.events.args)
    for attribute, (rows, values) in old.events.args.items():
        new_rows, new_values = new.events.args[attribute]
        assert np.array_equal(rows, new_rows), attribute
        values, new_values = _as_list(values), _as_list(new_values)
        assert [(type(v), v) for v in values] == [(type(v), v) for v in new_values], attribute
    for name in ("phase", "flow_id", "category", "thread", "ts_us", "binds_enclosing"):
        a, b = getattr(old.flows, name), getattr(new.flows, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    for name in TOP_FIELDS:
        assert getattr(old, name) == getattr(new, name), name


def _as_list(values: list | native.ArgValues) -> list:
    return values.tolist() if isinstance(values, native.ArgValues) else values


def assert_same_trace(old: Trace, new: Trace) -> None:
    """Every track's columns and stat columns, the string table, flows and warnings."""
    assert old.strings.as_list() == new.strings.as_list()
    assert old.warnings == new.warnings and old.load_warnings == new.load_warnings
    old_tracks, new_tracks = old.track_list(), new.track_list()
    assert [t.name for t in old_tracks] == [t.name for t in new_tracks]
    for a, b in zip(old_tracks, new_tracks, strict=True):
        for column in ("start_ps", "duration_ps", "name_id", "meta_index"):
            assert np.array_equal(getattr(a, column), getattr(b, column)), (a.name, column)
        assert sorted(a.stats.columns) == sorted(b.stats.columns), a.name
        for name, stat in a.stats.columns.items():
            other = b.stats.columns[name]
            assert stat.kind == other.kind, (a.name, name)
            assert (stat.rows is None) == (other.rows is None) and (
                stat.rows is None or np.array_equal(stat.rows, other.rows)
            ), (a.name, name)
            assert stat.values.dtype == other.values.dtype, (a.name, name)
            assert np.array_equal(stat.values, other.values, equal_nan=True), (a.name, name)
    for name in ("source_track", "source_event", "target_track", "target_event", "category"):
        assert np.array_equal(getattr(old.flows, name), getattr(new.flows, name)), name


def _compare(path: Path) -> str:
    """Old and new readers on one file: the same file or the same one-sentence error; the decoder
    the new reader used ("c", else why the C decoder declined)."""
    try:
        old = _without_c(path)
    except ProfileError as error:
        with pytest.raises(ProfileError) as raised:
            _with_c(path)
        assert str(raised.value) == str(error)
        return "refused"
    new = _with_c(path)
    assert_same_file(old, new)
    return new.decoder


@pytest.mark.parametrize("path", REAL_FILES, ids=[p.name for p in REAL_FILES])
def test_real_files_read_the_same_through_the_c_decoder(path):
    old, new = _without_c(path), _with_c(path)
    assert new.decoder == "c"  # no real file falls back
    assert_same_file(old, new)
    assert_same_trace(load_json_files([path], _without_c, _choose), load_json_files([path], _with_c, _choose))


def test_a_jax_trace_json_reads_the_same_through_the_c_decoder(jax_trace_json):
    old, new = _without_c(jax_trace_json), _with_c(jax_trace_json)
    assert new.decoder == "c"
    assert_same_file(old, new)
    files = [jax_trace_json]
    assert_same_trace(load_json_files(files, _without_c, _choose), load_json_files(files, _with_c, _choose))


def test_the_kineto_trace_with_python_frames_reads_the_same(tmp_path):
    path = grafted_trace(tmp_path)
    assert _with_c(path).decoder == "c"
    assert_same_trace(load_json_files([path], _without_c, _choose), load_json_files([path], _with_c, _choose))


def test_a_document_in_pieces_reads_as_the_whole_document(tmp_path):
    """Records, strings, escapes and numbers cut by a piece's end are read again with the next piece."""
    text = gzip.decompress(A100.read_bytes())
    whole = native.decode_text(A100, text)
    assert isinstance(whole, TraceEventFile)
    for size in (1, 7, 4096):
        decoder = native.new_decoder()
        assert native._feed(decoder, iter([text[i : i + size] for i in range(0, len(text), size)])) is None
        pieces = native._file_from(A100, decoder.finish())
        assert isinstance(pieces, TraceEventFile)
        assert_same_file(whole, pieces)


def test_gzip_members_and_zero_padding_are_streamed(tmp_path):
    text = gzip.decompress(AMD.read_bytes())
    middle = len(text) // 2
    path = tmp_path / "members.pt.trace.json.gz"
    path.write_bytes(gzip.compress(text[:middle]) + b"\0" * 1000 + gzip.compress(text[middle:]))
    new = _with_c(path)
    assert new.decoder == "c"
    assert_same_file(_without_c(path), new)


# Why the C decoder declines, by mutation, over the fuzz corpus (the same mutants as test_json_fuzz.py).
# Mutations whose mutants stay valid, well-typed JSON are read by the C decoder; the others (damage the
# msgspec path repairs or refuses) fall back to it.
READ_BY_C = {"python_frames"}
ALWAYS_DECLINED = {"cut", "cut_gzip"}


def _fuzz_corpus(base: Path, tmp_path: Path, seed: int) -> dict[str, Counter[str]]:
    original = json.loads(gzip.decompress(base.read_bytes()))
    rng = random.Random(seed)
    by_mutation: dict[str, Counter[str]] = {}
    for k in range(MUTANTS_PER_FILE):
        mutation = MUTATIONS[k % len(MUTATIONS)]
        data = mutation(rng, copy.deepcopy(original))
        rng.random()  # test_json_fuzz.py draws `strict` here: the same mutants follow
        gzipped = data[:2] == b"\x1f\x8b"
        path = tmp_path / f"m{k}.{'pt.trace.json.gz' if gzipped else 'pt.trace.json'}"
        path.write_bytes(data)
        outcome = _compare(path)
        by_mutation.setdefault(mutation.__name__, Counter())[outcome] += 1
        path.unlink()
    return by_mutation


def _check_counts(by_mutation: dict[str, Counter[str]]) -> None:
    for name in READ_BY_C & set(by_mutation):
        assert by_mutation[name]["c"] == sum(by_mutation[name].values()), (name, by_mutation[name])
    for name in ALWAYS_DECLINED & set(by_mutation):
        assert by_mutation[name]["c"] == 0, (name, by_mutation[name])
    assert sum(counts["c"] for counts in by_mutation.values()) > 0


@pytest.mark.parametrize("base", [AMD, CPU_ONLY, A100], ids=["amd", "cpu-only", "a100"])
def test_fuzz_mutants_read_the_same_or_are_declined(base, tmp_path):
    by_mutation = _fuzz_corpus(base, tmp_path, SEED)
    _check_counts(by_mutation)
    print({name: dict(counts) for name, counts in by_mutation.items()})


def test_fuzz_mutants_of_a_jax_trace_json_read_the_same_or_are_declined(jax_trace_json, tmp_path):
    _check_counts(_fuzz_corpus(jax_trace_json, tmp_path, SEED + 1))


def test_fuzz_mutants_with_python_frames_read_the_same_or_are_declined(tmp_path):
    _check_counts(_fuzz_corpus(grafted_trace(tmp_path), tmp_path, SEED + 2))


# Documents at the edges of the JSON grammar and of the typed decode, each read the same by both
# decoders (or refused with the same sentence). `@` stands for a complete event's fields.
_EVENT = '"ph": "X", "pid": 1, "tid": 2, "ts": 10.5, "dur": 2'
EDGE_DOCUMENTS = {
    "escapes": '[{@, "name": "a\\u00e9\\ud83d\\ude00\\/\\"\\\\\\n\\t", "cat": "\\u0063pu"}]',
    "escaped keys": '[{"p\\u0068": "X", "n\\u0061me": "k", "ts": 1, "dur": 1}]',
    "numbers": '[{@, "args": {"stream": -0, "device": 1e-400, "flops": 12345678901234567890123,'
    ' "bytes": 1.5E+3, "correlation": 9223372036854775807, "group_id": -9223372036854775808,'
    ' "step_num": 9223372036854775808, "program_id": 0.1}}]',
    "times": '[{"ph": "X", "ts": 1700000000123456.789, "dur": 1e-7},'
    ' {"ph": "i", "ts": 12345678901234567890}]',
    "repeated keys": '[{@, "name": "a", "name": "b", "args": {"stream": 1}, "args": {"device": 2}}]',
    "repeated arg": '[{@, "args": {"stream": 1, "stream": null, "device": 3, "device": "x"}}]',
    "null args": '[{@, "args": null}, {@, "args": {"stream": null}}]',
    "other values": '[{@, "args": {"stream": [1, {"a": true}], "device": true, "dtype": {"x": null},'
    ' "Call stack": 5, "CallFrom": "a.py:3"}}]',
    "string ids": '[{"ph": "X", "pid": "p", "tid": "1", "ts": 1}, {"ph": "s", "id": "f", "pid": "p",'
    ' "tid": "1", "ts": 1, "cat": "c"}, {"ph": "f", "id": "f", "bp": "e", "pid": 1, "tid": 1, "ts": 2}]',
    "blanks": ' \n\t[ { "ph" : "X" , "ts" : 1 } , { } ] \r\n',
    "object form": '{"displayTimeUnit": "ns", "traceEvents": [{"ph": "X", "ts": 1}], "schemaVersion": 1,'
    ' "deviceProperties": [{"id": 0, "name": "GPU"}], "other": {"deep": [[[1]]]}, "traceName": "t"}',
    "metadata": '[{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "host"}},'
    ' {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": 7}}, {"ph": "X", "ts": 1}]',
    "other phases": '[{"ph": "B", "ts": 1}, {"ph": "C", "ts": 1, "args": {"x": 1}}, {"ph": "X", "ts": 1},'
    ' {"ph": "XX", "ts": 1}, {"ph": "", "ts": 1}]',
    "times out of range": '[{"ph": "X", "ts": 1}, {"ph": "X", "ts": 1e300},'
    ' {"ph": "X", "ts": 2, "dur": -1e300}, {"ph": "s", "ts": 1e300, "id": 1}]',
    "empty": '{"traceEvents": []}',
    "no events": '[{"ph": "M", "name": "process_name", "args": {"name": "x"}}]',
    "two documents": '[{"ph": "X", "ts": 1}] [{"ph": "X", "ts": 1}]',
}


REFUSED_BY_BOTH = {"two documents"}


@pytest.mark.parametrize("name", EDGE_DOCUMENTS)
def test_edge_documents_read_the_same_and_by_the_c_decoder(name, tmp_path):
    path = tmp_path / "edge.json"
    path.write_text(EDGE_DOCUMENTS[name].replace("@", _EVENT), encoding="utf-8")
    assert _compare(path) == ("refused" if name in REFUSED_BY_BOTH else "c")
