"""`cpu_fallback` on a real PyTorch/XLA profile with CPU fallbacks (samples/ptxla_cpu_fallback.xplane.pb).

The sample was recorded by samples/recorders/ptxla_cpu_fallback.py (torch 2.9.1, torch-xla 2.9.0,
PJRT_DEVICE=CPU): 6 profiled steps, `torch.median` every step and `torch.histc` every other step,
both without an XLA lowering, and a `loss.item()` read every third step, which is not a fallback.
torch_xla names the fallbacks only in its metrics report; the profile holds no `aten::` event, so
the rule finds them by their host round trip. The counts below are checked three ways: the rule's
report, an independent walk over the trace's events, and the recorder's metrics report.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import PTXLA_TRACE, SAMPLES, require_shared_traces
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.readers.xla_dialect import CPU_FALLBACK_PATTERN

SAMPLE = SAMPLES / "ptxla_cpu_fallback.xplane.pb"

# From the recorder's metrics report of the profiled steps (met.metrics_report(), saved as
# metrics.txt when the sample was recorded): fallback counters and the transfer samples they caused.
METRICS_FALLBACK_COUNTERS = {"aten::median": 6, "aten::histc": 3}
METRICS_ITEM_READS = 2  # aten::_local_scalar_dense: .item(), excluded from fallbacks
METRICS_TRANSFER_FROM_DEVICE_SAMPLES = 11  # 9 fallback inputs + 2 .item() reads
METRICS_TRANSFER_TO_DEVICE_SAMPLES = 9  # 9 fallback results
# The recorder's loop: 6 steps, histc only on even steps, .item() every third step.
RECORDED_STEPS = 6
HISTOGRAM_EVERY = 2
LOG_EVERY = 3

D2H = "PjRtComputationClient::TransferFromDevice"
H2D = "PjRtComputationClient::TransferToDevice"
GRAPH_WORK = re.compile(
    r"^(SyncTensorsGraph\w*|SyncLiveTensorsGraph|StepMarker|PjRtComputationClient::Execute\w*)$"
)


def _diagnose(path, capsys) -> dict:
    assert main(["diagnose", str(path), "--json", "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


def _finding(report: dict, rule: str) -> dict | None:
    return next((f for f in report["findings"] if f["id"] == rule), None)


def _walk_transfers(trace) -> tuple[dict[int, int], dict[int, int]]:
    """step_num -> round trips, and step_num -> one-way reads, found one event at a time
    (independent of the rule's vectorized pairing).

    A round trip: a TransferFromDevice whose next transfer/graph event on the same thread is a
    TransferToDevice, both inside the same `train_step`; any other TransferFromDevice is a one-way read.
    """
    round_trips: dict[int, int] = {}
    one_way: dict[int, int] = {}
    for track in trace.tracks():
        steps = [
            (int(track.start_ps[i]), int(track.end_ps[i]), int(track.all_stats(i)["step_num"]))
            for i in range(len(track))
            if track.event_name(i) == "train_step"
        ]
        marks = [
            (int(track.start_ps[i]), int(track.end_ps[i]), track.event_name(i))
            for i in range(len(track))
            if track.event_name(i) in (D2H, H2D) or GRAPH_WORK.match(track.event_name(i))
        ]
        marks.append((2**62, 2**62, "end of thread"))
        for (start, end, name), (next_start, next_end, next_name) in zip(marks, marks[1:], strict=False):
            if name != D2H:
                continue
            paired = next_name == H2D and next_start >= end
            last = next_end if paired else end
            step = [n for s0, s1, n in steps if s0 <= start and last <= s1]
            assert len(step) == 1, "every transfer of the sample lies inside one train_step"
            counts = round_trips if paired else one_way
            counts[step[0]] = counts.get(step[0], 0) + 1
    return round_trips, one_way


def test_sample_holds_no_aten_events_but_the_transfers_the_metrics_counted():
    trace = open_trace(SAMPLE, use_cache=False)
    names = [trace.strings[int(n)] for track in trace.tracks() for n in track.name_id]
    assert not [n for n in names if n.startswith("aten::")]  # torch_xla emits no TraceMe for fallbacks
    assert names.count(D2H) == METRICS_TRANSFER_FROM_DEVICE_SAMPLES
    assert names.count(H2D) == METRICS_TRANSFER_TO_DEVICE_SAMPLES
    assert names.count("train_step") == RECORDED_STEPS


def test_rule_reports_every_fallback_of_the_recording(capsys):
    finding = _finding(_diagnose(SAMPLE, capsys), "cpu_fallback")
    assert finding is not None
    assert finding["severity"] == "warning"
    metrics = finding["metrics"]

    walked, one_way = _walk_transfers(open_trace(SAMPLE, use_cache=False))
    expected_per_step = {
        step: 1 + (step % HISTOGRAM_EVERY == 0) for step in range(RECORDED_STEPS)
    }  # median every step, histc every other step
    assert walked == expected_per_step
    # the .item() reads copy to the host only: not counted
    assert one_way == {step: 1 for step in range(0, RECORDED_STEPS, LOG_EVERY)}
    assert sum(one_way.values()) == METRICS_ITEM_READS
    assert metrics["round_trips"] == sum(walked.values()) == sum(METRICS_FALLBACK_COUNTERS.values())
    assert metrics["round_trips_per_step"] == round(sum(walked.values()) / RECORDED_STEPS, 2)
    assert metrics["ops"] == {}  # the profile does not name them; the finding says so
    assert "does not name the op" in finding["explanation"]
    assert metrics["round_trip_ms"] > 0


def test_evidence_spans_each_round_trip(capsys):
    finding = _finding(_diagnose(SAMPLE, capsys), "cpu_fallback")
    trace = open_trace(SAMPLE, use_cache=False)
    evidence = finding["evidence"]
    assert len(evidence) == sum(METRICS_FALLBACK_COUNTERS.values())
    for item in evidence:
        track = trace.find_plane(item["plane"], item["host"]).track(item["track"])
        i = item["event_index"]
        assert track.event_name(i) == D2H
        assert item["start_ps"] == int(track.start_ps[i])
        after = (track.start_ps >= track.end_ps[i]) & (track.end_ps == item["end_ps"])
        assert [track.event_name(int(j)) for j in after.nonzero()[0]] == [H2D]
        assert finding["metrics"]["round_trip_ms"] * 1e9 >= item["end_ps"] - item["start_ps"]


def test_item_reads_alone_are_not_fallbacks(capsys):
    """`.item()` copies to the host and sends nothing back: host_device_sync's case, not this rule's."""
    require_shared_traces()
    report = _diagnose(PTXLA_TRACE, capsys)
    assert _finding(report, "cpu_fallback") is None
    assert _finding(report, "host_device_sync") is not None


@pytest.mark.parametrize(
    ("name", "is_fallback"),
    [
        # counter names seen in torch_xla 2.9 executed_fallback_ops() while choosing the recorder's ops
        ("aten::median", True),
        ("aten::_unique2", True),
        ("aten::searchsorted.Tensor", True),
        ("aten::linalg_lstsq.out", True),
        ("aten::_local_scalar_dense", False),  # .item(): expected, not an unlowered op
        ("PjRtComputationClient::TransferFromDevice", False),
    ],
)
def test_fallback_name_pattern(name, is_fallback):
    assert (re.match(CPU_FALLBACK_PATTERN, name) is not None) == is_fallback
