"""The TensorBoard plugin's 2021 ResNet-50 sample against the plugin's own expected results.

The sample is Kineto's 2021 format: categories `Kernel`/`Memcpy`/`Runtime`/`Operator`, launch flows as
`s`/`f` records of category `async`, and a host thread's tid written as a string ("25738") on its
events but as a number on its flow starts. The expectations are the plugin's end-to-end test file
(pytorch/kineto tb_plugin/test/result_check_file.txt, kept beside the trace): one JSON document per
line, the overview's first, the operator view's next.
"""

from __future__ import annotations

import gzip
import json

import numpy as np

from tests.kineto.conftest import RESNET, RESNET_RESULTS
from tpuscope.analysis.ops import op_breakdown
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.analysis.steps import find_steps
from tpuscope.model.vocabulary import TrackKind

PS_PER_US = 1e6
# The bounds: mean step within 2% of the plugin's, its DataLoader share within 2 points.
STEP_TOLERANCE = 0.02
SHARE_TOLERANCE_POINTS = 2.0
# The plugin's operator view shows whole microseconds.
ROUNDING_US = 1.0


def _plugin_results() -> list[dict]:
    lines = RESNET_RESULTS.read_text().splitlines()
    return [json.loads(line) for line in lines[:2]]


def _average_step() -> dict[str, float]:
    overview = _plugin_results()[0]
    (average,) = [p for p in overview["performance"] if p["name"] == "Average Step Time"]
    parts = {child["name"]: float(child["extra"]) for child in average["children"]}
    return {"step_us": float(average["value"]), **parts}


def test_every_2021_launch_flow_binds(resnet_trace):
    with gzip.open(RESNET) as handle:
        records = json.load(handle)["traceEvents"]
    starts = sum(1 for r in records if r.get("ph") == "s" and r.get("cat") == "async")
    flows = resnet_trace.flows
    launch = flows.category == resnet_trace.strings.id_of("async")
    assert int(launch.sum()) == starts > 9000
    tracks = resnet_trace.track_list()
    kinds = {
        (tracks[s].kind, tracks[t].kind)
        for s, t in zip(flows.source_track[launch], flows.target_track[launch], strict=True)
    }
    assert kinds == {(TrackKind.HOST_THREAD, TrackKind.DEVICE_OPS)}


def test_mean_step_is_the_plugin_average(resnet_trace):
    steps = find_steps(resnet_trace)
    mean_us = float(np.mean(steps.end_ps - steps.start_ps)) / PS_PER_US
    expected = _average_step()["step_us"]
    assert abs(mean_us - expected) <= STEP_TOLERANCE * expected


def test_input_bound_with_the_plugin_dataloader_share(resnet_trace):
    report = TraceAnalysis(resnet_trace).report
    (finding,) = [f for f in report.findings if f.id == "input_bound"]
    share = float(finding.metrics["input_percent_of_step_time"])
    assert abs(share - _average_step()["DataLoader"]) <= SHARE_TOLERANCE_POINTS


def test_framework_op_times_are_the_plugin_device_self_times(resnet_trace):
    operators = _plugin_results()[1]
    theirs = {name: float(value) for name, value in operators["device_self_time"]["rows"]}
    table = op_breakdown(resnet_trace, by="framework")
    ours = {name: int(total) / PS_PER_US for name, total in zip(table.names(), table.total_ps, strict=True)}
    assert set(ours) == set(theirs)
    for name, expected in theirs.items():
        assert abs(ours[name] - expected) <= ROUNDING_US, name
