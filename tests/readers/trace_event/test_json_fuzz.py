"""A fuzz test of the trace-event JSON readers: structured mutations of real Kineto traces and a real
JAX `trace.json.gz` (wrong types per field, extreme numbers, deep nesting, encodings, invalid UTF-8,
ids out of range, cut and corrupted gzip, records that are not records) must each load (salvaged,
with warnings) or raise the project's ProfileError; any other exception or a numpy warning fails.
A Kineto trace with Python frames (the A100 trace given a real recording's frames,
tests/readers/trace_event/python_frames.py) is fuzzed too, its frames damaged as well: parent ids
that loop, frames that cross instead of nesting, `CallFrom` and `Call stack` of the wrong type or
text, launch flows gone; every op's code is then asked for, as `ops --json` asks.

Seeded, so a failure names a mutant that reproduces. It goes through `open_trace`, so it covers
whatever reader the registry picks for these files.
"""

from __future__ import annotations

import copy
import gzip
import json
import random
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.readers.trace_event.conftest import A100, AMD, CPU_ONLY
from tests.readers.trace_event.python_frames import grafted_trace
from tpuscope.analysis.programs import PROGRAM_CODE
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.errors import ProfileError

SEED = 26
MUTANTS_PER_FILE = 120  # 8 of each mutation
RAW = "__raw__"  # a value whose JSON text is then replaced by a literal json cannot write (1e400, NaN, deep)
VALUES = [
    None, True, 0, -1, 1.5, "", "x", [], [1, [2]], {}, {"k": {"k": 1}}, 2**63, 2**64, -(2**63) - 1,
    10**30, 1e308, -1e308, 1e20, -1e20, 2**53 + 1,
]  # fmt: skip
RAW_NUMBERS = ["1e400", "-1e400", "NaN", "Infinity", "1" + "0" * 400, "-0", "1e-400"]
RECORD_FIELDS = ["ph", "name", "cat", "pid", "tid", "ts", "dur", "id", "bp", "args", "s"]
ARG_FIELDS = [
    "name", "labels", "External id", "correlation", "stream", "device", "hlo_op", "step_num", "bytes",
    "tf_op", "group_id", "program_id", "Collective name", "Call stack", "CallFrom", "Python id",
    "Python parent id",
]  # fmt: skip
TOP_FIELDS = ["traceEvents", "schemaVersion", "deviceProperties", "distributedInfo", "displayTimeUnit",
              "baseTimeNanoseconds"]  # fmt: skip
# Past any decoder's recursion limit, and just below Python's (what the decoder builds, repr must follow).
DEPTHS = (100_000, 950)
INVALID_UTF8 = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xe2\x82", b"\x80"]

Mutation = Callable[[random.Random, dict], bytes]


def _records(document: dict, rng: random.Random, k: int) -> list[dict]:
    records = [r for r in document["traceEvents"] if isinstance(r, dict)]
    return rng.sample(records, min(k, len(records)))


def _dump(document: dict, raw: str = "") -> bytes:
    return json.dumps(document).replace(json.dumps(RAW), raw).encode()


def wrong_type_in_records(rng: random.Random, document: dict) -> bytes:
    for record in _records(document, rng, rng.randint(1, 5)):
        record[rng.choice(RECORD_FIELDS)] = copy.deepcopy(rng.choice(VALUES))
    return _dump(document)


def wrong_type_in_args(rng: random.Random, document: dict) -> bytes:
    for record in _records(document, rng, rng.randint(1, 5)):
        args = record.get("args") if isinstance(record.get("args"), dict) else record.setdefault("args", {})
        if isinstance(args, dict):
            args[rng.choice(ARG_FIELDS)] = copy.deepcopy(rng.choice(VALUES))
    return _dump(document)


def wrong_type_in_metadata(rng: random.Random, document: dict) -> bytes:
    meta = [r for r in document["traceEvents"] if isinstance(r, dict) and r.get("ph") == "M"]
    for record in rng.sample(meta, min(len(meta), rng.randint(1, 4))):
        args = record.setdefault("args", {})
        args[rng.choice(["name", "labels"])] = copy.deepcopy(rng.choice(VALUES))
    return _dump(document)


def wrong_type_at_the_top(rng: random.Random, document: dict) -> bytes:
    key = rng.choice(TOP_FIELDS)
    document[key] = copy.deepcopy(rng.choice(VALUES + [[1, "x", None], [{"id": "x", "name": 3}]]))
    return _dump(document)


def extreme_numbers(rng: random.Random, document: dict) -> bytes:
    records = _records(document, rng, rng.randint(1, 20))
    for record in records:
        record[rng.choice(["ts", "dur"])] = rng.choice([1e308, -1e308, 1e20, -1e20, 2**63, 2**64, 1e15, -1.0])
    if rng.random() < 0.5:
        records[0][rng.choice(["ts", "dur", "pid", "tid", "id"])] = RAW
        return _dump(document, rng.choice(RAW_NUMBERS))
    return _dump(document)


def ids_out_of_range(rng: random.Random, document: dict) -> bytes:
    for record in _records(document, rng, rng.randint(1, 10)):
        record[rng.choice(["pid", "tid", "id"])] = rng.choice([2**63, -(2**63) - 1, 2**64, 10**30, -(10**30)])
    return _dump(document)


def deep_nesting(rng: random.Random, document: dict) -> bytes:
    where = rng.choice(["top", "record", "args unknown", "args kept", "metadata"])
    if where == "top":
        document["unknown"] = RAW
    else:
        record = _records(document, rng, 1)[0]
        if where == "record":
            record["unknown"] = RAW
        else:
            args = record.setdefault("args", {}) if isinstance(record.get("args"), dict) else {}
            record["args"] = args
            key = {"args unknown": "unknown", "args kept": rng.choice(ARG_FIELDS), "metadata": "name"}[where]
            args[key] = RAW
            if where == "metadata":
                record.update(ph="M", name=rng.choice(["thread_name", "process_name", "process_labels"]))
    opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
    depth = rng.choice(DEPTHS)
    value = opener * depth + ("1" if opener != "[" else "") + closer * depth
    if rng.random() < 0.2:
        value = opener * depth  # never closed: deep and cut
    return _dump(document, value)


def encodings(rng: random.Random, document: dict) -> bytes:
    text = json.dumps(document)
    choice = rng.choice(
        ["bom", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-be", "blanks", "bom+blanks"]
    )
    blanks = " \n\t\r" * rng.randint(16, 25_000)
    if choice == "bom":
        return b"\xef\xbb\xbf" + text.encode()
    if choice == "blanks":
        return blanks.encode() + text.encode()
    if choice == "bom+blanks":
        return b"\xef\xbb\xbf" + blanks.encode() + text.encode()
    data = text.encode(choice)
    return data[: rng.randint(1, len(data))] if rng.random() < 0.2 else data


def invalid_utf8(rng: random.Random, document: dict) -> bytes:
    for record in _records(document, rng, rng.randint(1, 5)):
        record[rng.choice(["name", "cat"])] = "__bad__"
        if isinstance(record.get("args"), dict):
            record["args"]["name"] = "__bad__"
    data = json.dumps(document).encode()
    while b"__bad__" in data:
        data = data.replace(b"__bad__", b"x" + rng.choice(INVALID_UTF8) + b"y", 1)
    return data


def cut(rng: random.Random, document: dict) -> bytes:
    data = json.dumps(document).encode()
    return data[: rng.randint(0, len(data) - 1)]


def cut_gzip(rng: random.Random, document: dict) -> bytes:
    data = gzip.compress(json.dumps(document).encode())
    return data[: rng.randint(1, len(data) - 1)]


def corrupted_gzip(rng: random.Random, document: dict) -> bytes:
    data = bytearray(gzip.compress(json.dumps(document).encode()))
    for _ in range(rng.randint(1, 8)):
        data[rng.randrange(10, len(data))] = rng.randrange(256)
    if rng.random() < 0.3:
        data += rng.choice([b"\x00" * 10, b"garbage", gzip.compress(b"   ")])
    return bytes(data)


def flipped_bytes(rng: random.Random, document: dict) -> bytes:
    data = bytearray(json.dumps(document).encode())
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] = rng.choice(b'{}[]",:0\\ \x00\xff')
    return bytes(data)


def not_records(rng: random.Random, document: dict) -> bytes:
    events = document["traceEvents"]
    for _ in range(rng.randint(1, 5)):
        events[rng.randrange(len(events))] = copy.deepcopy(rng.choice(VALUES))
    if rng.random() < 0.3:
        return json.dumps(events).encode()  # the array form
    return _dump(document)


def python_frames(rng: random.Random, document: dict) -> bytes:
    """The Python frames damaged: ids that loop or point nowhere, frames that cross or name no file,
    `CallFrom`/`Call stack` of the wrong type or text, launch flows dropped."""
    records = [r for r in document["traceEvents"] if isinstance(r, dict)]
    frames = [r for r in records if r.get("cat") == "python_function"] or records
    ops = [r for r in records if r.get("cat") == "cpu_op"] or records
    for record in rng.sample(frames, min(len(frames), rng.randint(1, 40))):
        args = record.setdefault("args", {}) if isinstance(record.get("args"), dict) else {}
        record["args"] = args
        choice = rng.randrange(6)
        if choice == 0:
            args["Python parent id"] = args.get("Python id", 1)  # itself: a loop
        elif choice == 1:
            args[rng.choice(["CallFrom", "Python id", "Python parent id"])] = copy.deepcopy(
                rng.choice(VALUES)
            )
        elif choice == 2:
            args["CallFrom"] = rng.choice(["", ":", "a.py:", ":12", "a.py:-3", "a.py:1e3", "x" * 5000 + ":1"])
        elif choice == 3:
            record["name"] = rng.choice(["(1): f", "a.py(): f", "a.py(99999999999999999999): f", "a.py(1):"])
        elif choice == 4 and isinstance(record.get("dur"), (int, float)):
            record["dur"] = record["dur"] * rng.choice([0.0, 0.3, 3.0])  # ends inside or past its neighbours
        else:
            record["ts"] = rng.choice([-1.0, 0.0, 1e15])
    for record in rng.sample(ops, min(len(ops), rng.randint(0, 10))):
        args = record.setdefault("args", {}) if isinstance(record.get("args"), dict) else {}
        record["args"] = args
        args["Call stack"] = rng.choice(
            [copy.deepcopy(rng.choice(VALUES)), "a.py(3): f;b.py(x): g", ";" * 100, "a.py(1): f;" * 2000]
        )
    if rng.random() < 0.5:
        document["traceEvents"] = [
            r for r in document["traceEvents"]
            if not (isinstance(r, dict) and r.get("cat") == "ac2g" and rng.random() < 0.5)
        ]  # fmt: skip
    return _dump(document)


MUTATIONS: list[Mutation] = [
    wrong_type_in_records, wrong_type_in_args, wrong_type_in_metadata, wrong_type_at_the_top,
    extreme_numbers, ids_out_of_range, deep_nesting, encodings, invalid_utf8, cut, cut_gzip,
    corrupted_gzip, flipped_bytes, not_records, python_frames,
]  # fmt: skip


def _load_or_refuse(path: Path, strict: bool, ask_code: bool = False) -> str:
    """'loaded' or 'refused'; raises on anything that is neither (an exception, a numpy warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            trace = open_trace(path, use_cache=False, strict=strict)
        except ProfileError as error:
            message = str(error)
            assert "\n" not in message and message.endswith(".")
            return "refused"
        for track in trace.tracks():  # times the model holds: from the origin, no overflow
            if len(track.start_ps):
                assert track.start_ps.dtype == np.int64 and int(track.start_ps.min()) >= 0
                ends = track.start_ps.astype(np.float64) + track.duration_ps.astype(np.float64)
                assert float(ends.max()) < 2.0**63
        assert not strict or not trace.load_warnings
        analysis = TraceAnalysis(trace)  # every op's code, as `ops --json` and `--by source` ask for it
        table = analysis.op_table("op") if ask_code else None
        if table is not None:
            table.rows_json(code=analysis.get(PROGRAM_CODE))
            analysis.op_table("source").rows_json()
        return "loaded"


def _fuzz(base: Path, tmp_path: Path, seed: int, ask_code: bool = False) -> dict[str, int]:
    original = json.loads(gzip.decompress(base.read_bytes()))
    rng = random.Random(seed)
    outcomes: dict[str, int] = {}
    failures = []
    for k in range(MUTANTS_PER_FILE):
        mutation = MUTATIONS[k % len(MUTATIONS)]
        data = mutation(rng, copy.deepcopy(original))
        gzipped = data[:2] == b"\x1f\x8b"
        path = tmp_path / f"m{k}.{'pt.trace.json.gz' if gzipped else 'pt.trace.json'}"
        path.write_bytes(data)
        try:
            outcome = _load_or_refuse(path, strict=rng.random() < 0.25, ask_code=ask_code)
        except BaseException as error:  # noqa: BLE001 - every failure is collected, then reported
            failures.append(
                f"mutant {k} ({mutation.__name__}, seed {seed}): {type(error).__name__}: {error!s:.300}"
            )
            continue
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        path.unlink()
    assert not failures, "\n".join(failures)
    return outcomes


@pytest.mark.parametrize("base", [AMD, CPU_ONLY, A100], ids=["amd", "cpu-only", "a100"])
def test_mutants_of_kineto_traces_load_or_are_one_sentence(base, tmp_path):
    outcomes = _fuzz(base, tmp_path, SEED)
    assert outcomes.get("loaded", 0) > MUTANTS_PER_FILE // 3  # most damage is salvaged, not refused


def test_mutants_of_a_kineto_trace_with_python_frames_load_or_are_one_sentence(tmp_path):
    base = grafted_trace(tmp_path)
    outcomes = _fuzz(base, tmp_path, SEED + 2, ask_code=True)
    assert outcomes.get("loaded", 0) > MUTANTS_PER_FILE // 3


def test_mutants_of_a_jax_trace_json_load_or_are_one_sentence(jax_trace_json, tmp_path):
    outcomes = _fuzz(jax_trace_json, tmp_path, SEED + 1)
    assert outcomes.get("loaded", 0) > MUTANTS_PER_FILE // 3
