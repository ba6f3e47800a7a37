"""File > Export: Chrome trace JSON that re-opens with the same events and flows."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import GPU_TRACE, SHARED_TRACES, TPU_TRACE
from tpuscope.app.opener import open_trace
from tpuscope.export.chrome_trace import export_chrome_trace

AMD = SHARED_TRACES / "kineto" / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"


@pytest.mark.parametrize("source", [AMD, TPU_TRACE, GPU_TRACE], ids=lambda p: p.name[:24])
def test_export_reopens_with_the_same_events_per_track(tmp_path, source):
    trace = open_trace(source, use_cache=False)
    out = tmp_path / "export.trace.json.gz"
    written = export_chrome_trace(trace, out)
    again = open_trace(out, use_cache=False)
    assert written == trace.event_count == again.event_count
    ours = sorted((t.plane.name, t.name, len(t)) for t in trace.tracks() if len(t))
    theirs = sorted((t.plane.name, t.name, len(t)) for t in again.tracks() if len(t))
    if source == AMD:  # Kineto processes come back as generic ones: names per track still match
        assert [n for *_, n in ours] == [n for *_, n in theirs] or sorted(n for *_, n in ours) == sorted(
            n for *_, n in theirs
        )
    else:
        assert ours == theirs
    assert len(again.flows) == len(trace.flows)


def test_export_of_a_range_holds_the_events_overlapping_it(tmp_path):
    trace = open_trace(TPU_TRACE, use_cache=False)
    t0, t1 = trace.duration_ps // 3, trace.duration_ps // 2
    expected = sum(len(t.overlapping(t0, t1)) for t in trace.tracks())
    out = tmp_path / "range.json"
    assert export_chrome_trace(trace, out, t0, t1) == expected
    records = json.loads(out.read_text())["traceEvents"]
    assert sum(r["ph"] == "X" for r in records) == expected
    assert open_trace(out, use_cache=False).event_count == expected


def test_kineto_flows_survive_the_export(tmp_path):
    trace = open_trace(AMD, use_cache=False)
    assert len(trace.flows) > 0
    out = tmp_path / "flows.json"
    export_chrome_trace(trace, out)
    again = open_trace(out, use_cache=False)
    names = lambda t: sorted(  # noqa: E731
        (t.track_list()[s].event_name(int(a)), t.track_list()[d].event_name(int(b)))
        for s, a, d, b in zip(t.flows.source_track, t.flows.source_event, t.flows.target_track,
                              t.flows.target_event, strict=True)
    )  # fmt: skip
    assert names(again) == names(trace)
    assert np.all(again.flows.category >= 0)
