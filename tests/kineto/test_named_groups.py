"""Every group and track of a Kineto timeline has a name (issue 37: the ResNet-50 trace's "Record
Window End" marker, written with an empty pid and tid, made a group with no name holding a track
called "thread ")."""

from __future__ import annotations

import pytest

from tests.kineto.conftest import KINETO, RESNET
from tpuscope.app.opener import open_trace
from tpuscope.readers.trace_event.kineto import NO_PROCESS_NAME, NO_THREAD_NAME
from tpuscope.ui.timeline.layout import TimelineLayout

TRACES = sorted(KINETO.glob("*.json.gz"))


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name[:40])
def test_no_group_or_track_of_a_kineto_trace_is_nameless(path):
    trace = open_trace(path, use_cache=False)
    labels = [row.label for row in TimelineLayout(trace).rows if row.kind in ("group", "track")]
    assert labels and all(label.strip() and label.strip() != "thread" for label in labels)


def test_the_record_window_marker_sits_in_a_named_group():
    trace = open_trace(RESNET, use_cache=False)
    (plane,) = [p for p in trace.planes if p.name == NO_PROCESS_NAME]
    (track,) = plane.tracks
    assert track.display_name == NO_THREAD_NAME
    assert [trace.strings[int(i)] for i in track.name_id] == ["Record Window End"]
