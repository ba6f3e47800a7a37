"""The shared host-name index finds exactly what a string-table scan plus np.isin per track finds."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.conftest import ALL_SHARED_TRACES, require_shared_traces
from tpuscope.analysis import host_names
from tpuscope.analysis.facts.waits import USER_INPUT_PATTERN
from tpuscope.analysis.host_names import COMPARED_NAMES, HostNameIndex, _is_one_of
from tpuscope.app.opener import open_trace
from tpuscope.model.id_columns import SLICE, distinct
from tpuscope.model.vocabulary import EventClass
from tpuscope.readers.xla_dialect import COMPILE_PATTERN, INPUT_PATTERN, LAUNCH_PATTERN, SYNC_PATTERN

PATTERNS = [
    LAUNCH_PATTERN,
    COMPILE_PATTERN,
    SYNC_PATTERN,
    INPUT_PATTERN,
    r"(?i)" + USER_INPUT_PATTERN,
    r"^aten::",
    r"Execute",  # found anywhere in the name
    r"^no event is called this$",
]


def _by_scan(trace, pattern, tracks):
    ids = trace.strings.ids_matching(pattern, regex=True, ignore_case=False)
    return trace.events_with_name_ids(ids, tracks)


@pytest.mark.parametrize("joined", [True, False], ids=["joined names", "track by track"])
@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.parent.name)
def test_matches_equal_the_string_table_scan(path, joined, monkeypatch):
    """Both ways of looking names up: one joined copy (few host events) and each track's own column
    (many: here every profile is made to take that way)."""
    require_shared_traces()
    if not joined:
        monkeypatch.setattr(host_names, "JOINED_EVENTS", -1)
    trace = open_trace(path)
    tracks = [t for p in trace.host_planes() for t in p.tracks if len(t)]
    index = HostNameIndex(trace, tracks)
    assert (index._joined is not None) == joined
    found_any = 0
    for pattern in PATTERNS:
        expected = _by_scan(trace, pattern, tracks)
        got = index.matching(pattern)
        assert [id(t) for t, _ in got] == [id(t) for t, _ in expected], pattern
        for (_, a), (_, b) in zip(got, expected, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b), pattern
        found_any += sum(len(i) for _, i in got)
    assert found_any > 0


def test_user_input_pattern_without_the_surrounding_wildcards_matches_the_same_names():
    """input_bound dropped `.*` around the pattern (quadratic backtracking): the same names match."""
    names = ["train/load_batch", "DataLoader.__next__", "step", "x" * 3000 + "get_batch", "a\nfetch_batch"]
    old = re.compile(r"(?i).*" + USER_INPUT_PATTERN + r".*")
    new = re.compile(r"(?i)" + USER_INPUT_PATTERN)
    assert [bool(old.search(n)) for n in names] == [bool(new.search(n)) for n in names]
    assert sum(bool(new.search(n)) for n in names) == 4


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.parent.name)
def test_name_classes_read_from_the_index_equal_the_trace_own_pass(path):
    """The index hands its distinct names to `Trace.name_classes`: the classes of its own pass over the
    host events, bit for bit."""
    require_shared_traces()
    trace = open_trace(path)
    own = trace.name_classes().copy()
    trace._name_classes = None
    HostNameIndex(trace).matching_class(EventClass.LAUNCH)
    assert trace._name_classes is not None
    assert trace._name_classes.dtype == own.dtype and np.array_equal(trace._name_classes, own)


@pytest.mark.parametrize("wanted_count", [0, 1, 3, COMPARED_NAMES, COMPARED_NAMES + 1, 200])
def test_names_are_found_by_comparison_or_table_as_by_isin(wanted_count):
    """A few names are compared, more looked up slice by slice: both find exactly np.isin's events,
    over several slices (the last one partial) and both id widths."""
    rng = np.random.default_rng(wanted_count)
    ids = rng.integers(0, 300, 3 * SLICE + 123)
    wanted = np.sort(rng.choice(300, wanted_count, replace=False)).astype(np.int64)
    for dtype in (np.uint16, np.int32):
        found = _is_one_of(ids.astype(dtype), wanted, 300)
        assert found.dtype == bool and np.array_equal(found, np.isin(ids, wanted))  # noqa: TID251
    for dtype in (np.uint16, np.int32, np.int64):
        assert np.array_equal(distinct(ids.astype(dtype)), np.unique(ids))
