"""The C passes that turn a line's flat stat records into columns: grouping by stat id and interning
string keys. Each is checked against numpy doing the same the slow way, and the whole path against
protobuf's own reading of an XSpace that takes every branch (mixed kinds, refs, ids past the
counting table)."""

from __future__ import annotations

import numpy as np
import pytest

from tpuscope.readers.xplane import _linedecode
from tpuscope.readers.xplane.decode import (
    KIND_DOUBLE,
    KIND_INT,
    KIND_NONE,
    KIND_STR,
    KIND_UINT,
    decode_xspace,
)
from tpuscope.readers.xplane.xplane_pb2 import XSpace


def _records(rng: np.random.Generator, n: int, ids: np.ndarray):
    meta = rng.choice(ids, n).astype(np.int64)
    kind = rng.integers(0, 8, n).astype(np.uint8)
    value = rng.integers(-(2**62), 2**62, n).astype(np.int64)
    event = np.sort(rng.integers(0, n, n)).astype(np.int32)
    return meta, kind, value, event


def _group(meta, kind, value, event):
    n = len(meta)
    out = np.empty(n, np.uint8), np.empty(n, np.int64), np.empty(n, np.int32)
    return _linedecode.group_by_id(meta, kind, value, event, *out), out


@pytest.mark.parametrize("ids", [[3], [1, 2, 9, 40], list(range(1, 300)), [0, 65535]])
def test_group_by_id_is_a_stable_sort_by_id_with_the_kinds_of_each_group(ids):
    rng = np.random.default_rng(len(ids))
    meta, kind, value, event = _records(rng, 20_000, np.array(ids))
    groups, (out_kind, out_value, out_event) = _group(meta, kind, value, event)
    order = np.argsort(meta, kind="stable")
    assert [g[0] for g in groups] == sorted(set(meta.tolist()))
    assert np.array_equal(out_kind, kind[order])
    assert np.array_equal(out_value, value[order])
    assert np.array_equal(out_event, event[order])
    for meta_id, start, stop, present in groups:
        assert (meta[order][start:stop] == meta_id).all()
        assert present == sum(1 << int(k) for k in np.unique(kind[meta == meta_id]))


@pytest.mark.parametrize("outside", [65536, 2**40, -1])
def test_group_by_id_declines_ids_outside_its_table(outside):
    meta, kind, value, event = _records(np.random.default_rng(0), 100, np.array([1, 2]))
    meta[50] = outside
    assert _group(meta, kind, value, event)[0] is None


def test_group_by_id_refuses_columns_of_different_lengths():
    meta, kind, value, event = _records(np.random.default_rng(0), 100, np.array([1, 2]))
    with pytest.raises(ValueError):
        _group(meta, kind[:50], value, event)


@pytest.mark.parametrize("distinct", [1, 7, 5000, 200_000])
def test_intern_keys_numbers_distinct_keys_in_order_of_first_appearance(distinct):
    rng = np.random.default_rng(distinct)
    pool = np.unique(rng.integers(0, 2**64 - 1, 2 * distinct, dtype=np.uint64, endpoint=True))
    pool = rng.permutation(pool)[:distinct]  # distinct 64-bit keys, in no order
    keys = np.concatenate([pool, rng.choice(pool, 3 * distinct)])  # every key once, then repeats
    inverse = np.empty(len(keys), np.int32)
    firsts = _linedecode.intern_keys(keys, inverse)
    assert firsts == list(range(distinct))  # the pool comes first, each key new when first seen
    assert np.array_equal(keys[np.asarray(firsts)][inverse], keys)


def test_intern_keys_refuses_a_short_output():
    with pytest.raises(ValueError):
        _linedecode.intern_keys(np.zeros(10, np.uint64), np.empty(5, np.int32))


def _space_with_every_kind_of_stat() -> XSpace:
    """One line whose events carry stats of changing kinds and ids, some past the counting table."""
    space = XSpace()
    plane = space.planes.add(id=1, name="/host:CPU")
    names = {1: "count", 2: "ratio", 3: "label", 4: "mixed", 70_000: "far", 5: "ref_target", 6: "sometimes"}
    for stat_id, name in names.items():
        plane.stat_metadata[stat_id].id = stat_id
        plane.stat_metadata[stat_id].name = name
    plane.event_metadata[1].id = 1
    plane.event_metadata[1].name = "op"
    line = plane.lines.add(id=1, name="worker", timestamp_ns=1000)
    for i in range(500):
        event = line.events.add(metadata_id=1, offset_ps=i * 10, duration_ps=5)
        event.stats.add(metadata_id=1, int64_value=i - 250)
        event.stats.add(metadata_id=2, double_value=i / 7)
        if i % 3:
            event.stats.add(metadata_id=3, str_value=f"label {i % 11}")
        else:
            event.stats.add(metadata_id=3, ref_value=5)
        mixed = event.stats.add(metadata_id=4)
        if i % 2:
            mixed.uint64_value = 2**64 - 1 - i
        else:
            mixed.int64_value = i
        event.stats.add(metadata_id=70_000, uint64_value=i * 3)
        if i % 5 == 0:
            event.stats.add(metadata_id=6, double_value=0.5) if i % 10 else event.stats.add(metadata_id=6)
    return space


def _as_read(plane, raw_line) -> dict[str, dict[int, list[object]]]:
    """Each stat's values per event as protobuf reads them (an event may repeat a stat; a ref reads as
    the name of the stat metadata it points at; a stat without a value is left out)."""
    by_stat: dict[str, dict[int, list[object]]] = {}
    for row, event in enumerate(raw_line.events):
        for stat in event.stats:
            which = stat.WhichOneof("value")
            if which is None:
                continue
            value = getattr(stat, which)
            if which == "ref_value":
                value = plane.stat_metadata[value].name
            name = plane.stat_metadata[stat.metadata_id].name
            by_stat.setdefault(name, {}).setdefault(row, []).append(value)
    return by_stat


def _expected(space: XSpace) -> dict[str, dict[int, object]]:
    """The first line's stats as protobuf reads them, the last value where an event repeats one."""
    plane = space.planes[0]
    return {
        name: {row: values[-1] for row, values in rows.items()}
        for name, rows in _as_read(plane, plane.lines[0]).items()
    }


def _rows_and_values(column) -> list[tuple[int, object]]:
    """A decoded stat column as (row, value) pairs, strings looked up in its distinct values."""
    rows = range(len(column.values)) if column.rows is None else column.rows.tolist()
    uniques = column.uniques
    values = column.values.tolist() if uniques is None else [uniques[i] for i in column.values]
    return list(zip(rows, values, strict=True))


def _decoded(space: XSpace) -> dict[str, dict[int, object]]:
    line = decode_xspace(space.SerializeToString(), threads=1).planes[0].lines[0]
    return {name: dict(_rows_and_values(column)) for name, column in line.stats.items()}


def test_every_kind_of_stat_reads_as_protobuf_reads_it():
    space = _space_with_every_kind_of_stat()
    expected, decoded = _expected(space), _decoded(space)
    assert decoded.keys() == expected.keys()
    for name in ("count", "ratio", "label", "far", "sometimes"):
        assert decoded[name] == expected[name], name
    # A stat that is int64 on some events and a uint64 past int64's range on others reads as uint64 bits.
    assert {row: value % 2**64 for row, value in expected["mixed"].items()} == decoded["mixed"]


def test_kinds_the_grouping_reports_match_the_decoder_constants():
    groups, _ = _group(
        np.array([1, 1, 1, 1, 1], np.int64),
        np.array([KIND_NONE, KIND_DOUBLE, KIND_UINT, KIND_INT, KIND_STR], np.uint8),
        np.zeros(5, np.int64),
        np.arange(5, dtype=np.int32),
    )
    assert groups == [(1, 0, 5, 0b11111)]


def _space_of_nearly_regular_lines() -> XSpace:
    """Lines with two stats on every event: one regular (int, uint past int64, double), and lines that
    break the pattern at their last event (order, a string, an id twice, a second kind of value)."""
    space = XSpace()
    plane = space.planes.add(id=1, name="/device:TPU:0")
    for stat_id, name in {1: "offset", 2: "duration", 3: "ratio", 4: "label"}.items():
        plane.stat_metadata[stat_id].id = stat_id
        plane.stat_metadata[stat_id].name = name
    plane.event_metadata[1].id = 1
    plane.event_metadata[1].name = "op"
    breaks = ["none", "order", "string", "twice", "kind"]
    for line_id, broken in enumerate(breaks, start=1):
        line = plane.lines.add(id=line_id, name=f"ops {broken}", timestamp_ns=1000)
        for i in range(300):
            event = line.events.add(metadata_id=1, offset_ps=i * 10, duration_ps=5)
            last = i == 299
            first, second = (2, 1) if broken == "order" and last else (1, 2)
            event.stats.add(metadata_id=first, int64_value=i * 7)
            if broken == "string" and last:
                event.stats.add(metadata_id=4, str_value="late")
            elif broken == "twice" and last:
                event.stats.add(metadata_id=1, int64_value=5)
            elif broken == "kind" and last:
                event.stats.add(metadata_id=second, double_value=0.25)
            else:
                event.stats.add(metadata_id=second, uint64_value=2**64 - 1 - i if line_id == 1 else i)
        if broken == "none":
            for event in line.events:
                event.stats.add(metadata_id=3, double_value=event.offset_ps / 3)
    return space


def test_regular_lines_and_lines_that_break_the_pattern_read_as_protobuf_reads_them(monkeypatch):
    space = _space_of_nearly_regular_lines()
    regular_answers = []
    fill_regular = _linedecode.fill_regular

    def spy(*args):
        found = fill_regular(*args)
        regular_answers.append(found is not None)
        return found

    monkeypatch.setattr(_linedecode, "fill_regular", spy)
    decoded = decode_xspace(space.SerializeToString(), threads=1).planes[0]
    assert regular_answers == [True, False, False, False, True]  # the last: regular ids, two kinds of value
    plane = space.planes[0]
    for line, raw_line in zip(decoded.lines, plane.lines, strict=True):
        expected = _as_read(plane, raw_line)
        for name, column in line.stats.items():
            for row, value in _rows_and_values(column):
                wanted = expected[name][row]
                as_bits = [want % 2**64 if isinstance(want, int) else want for want in wanted]  # uint64 bits
                assert value in wanted + as_bits, (line.name, name, row)
    regular = decoded.lines[0].stats
    assert {name: column.kind for name, column in regular.items()} == {
        "offset": "int", "duration": "uint", "ratio": "float"
    }  # fmt: skip
    assert all(column.rows is None for column in regular.values())  # dense: one value per event


def test_the_light_count_agrees_with_the_full_one_and_counts_the_first_events_stats():
    space = _space_of_nearly_regular_lines()
    data = space.SerializeToString()
    _, planes = _linedecode.split_message(data, 1)
    offset, size = planes[0]
    _, lines = _linedecode.split_message(data[offset : offset + size], 3)
    for (line_offset, line_size), raw_line in zip(lines, space.planes[0].lines, strict=True):
        raw = data[offset + line_offset : offset + line_offset + line_size]
        light, first_event_stats = _linedecode.scan_events(raw)
        full = _linedecode.scan(raw)
        assert light[:7] == full[:7] and light[7] == -1
        assert first_event_stats == len(raw_line.events[0].stats)
        with pytest.raises(ValueError):
            _linedecode.scan_events(raw[: len(raw) // 2])  # a cut line is refused, as by scan()
