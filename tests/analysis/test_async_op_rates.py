"""Rates only where they mean something (issue 33): an op's FLOP/s and GB/s only when its time is its
work's time. On the real TPU v6e sample the copy-start ops "moved" 5 GiB in a few nanoseconds (8.95e+08
to 3.15e+09 GB/s) and the copy-done ops' time is the wait for those copies: both get null rates."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import TPU_TRACE, require_shared_traces
from tpuscope.analysis.async_ops import is_async_half
from tpuscope.analysis.ops import roofline_points
from tpuscope.analysis.pod_run import merge_op_rows
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main


@pytest.fixture(scope="module")
def analysis():
    require_shared_traces()
    return TraceAnalysis(open_trace(TPU_TRACE))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("copy-start.4", True),
        ("copy-done", True),
        ("%all-reduce-start.1", True),
        ("all-gather-done.2.clone", True),
        ("collective-permute-done", True),
        ("send", True),
        ("recv-done.3", True),
        ("async-update.1", True),
        ("all-reduce", False),  # a synchronous collective: its time is the transfer's
        ("broadcast_add_fusion.1", False),
        ("copy.2", False),
        ("sender_fusion", False),
        ("loop fusion", False),
    ],
)
def test_the_predicate_knows_xla_async_opcodes(name, expected):
    assert is_async_half(name) is expected


def test_async_rows_of_the_tpu_sample_have_no_rate(analysis, capsys):
    assert main(["ops", str(TPU_TRACE), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    halves = [r for r in rows if r["category"] in ("copy-start", "copy-done")]
    assert len(halves) == 12  # six copies, each a start and a done
    for row in halves:
        assert row["bytes_accessed"] and row["bandwidth_gbps"] is None and row["flop_rate_gflops"] is None
    others = [r for r in rows if r not in halves]
    assert others and all(r["bandwidth_gbps"] is not None for r in others if r["bytes_accessed"])
    assert max(r["bandwidth_gbps"] for r in others if r["bandwidth_gbps"] is not None) < 1e4  # no 3e9 GB/s


def test_the_same_in_every_grouping_and_table(analysis):
    by_op = analysis.op_table("op")
    assert by_op is not None
    names = by_op.names()
    halves = np.array([is_async_half(n) for n in names])
    assert np.array_equal(~by_op.rate_known, halves)
    assert np.isnan(by_op.bytes_rate[halves]).all() and np.isfinite(by_op.bytes_rate[~halves]).any()
    by_category = analysis.op_table("category")
    assert by_category is not None
    rate = dict(zip(by_category.names(), by_category.bytes_rate, strict=True))
    assert np.isnan(rate["copy-start"]) and np.isnan(rate["copy-done"]) and np.isfinite(rate["loop fusion"])
    # The roofline places no async half (their FLOPs over a launch or a wait would be no rate either).
    assert not np.any(halves[roofline_points(by_op).rows])
    # A pod's op rows, merged over its hosts, read the same predicate.
    merged = merge_op_rows([by_op.rows_json(), by_op.rows_json()], by_op.peaks, None)
    for row in merged:
        assert (row["bandwidth_gbps"] is None) == (is_async_half(row["name"]) or not row["bytes_accessed"])
