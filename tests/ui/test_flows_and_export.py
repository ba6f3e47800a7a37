"""Flows on the real timeline (arrows, details links that jump) and File > Export, on a real Kineto trace."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QUrl
from PySide6.QtGui import QImage

from tests.conftest import SHARED_TRACES
from tests.ui.conftest import open_and_wait
from tpuscope.app.opener import open_trace
from tpuscope.ui.timeline.view import FLOW

AMD = SHARED_TRACES / "kineto" / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"


def _red_pixels(win) -> int:
    image = win.timeline.grab().toImage().convertToFormat(QImage.Format_RGB32)
    pixels = np.frombuffer(image.constBits(), np.uint32, image.width() * image.height())
    return int((pixels == (FLOW.rgb() & 0xFFFFFFFF)).sum())


def test_a_selected_launch_draws_its_flow_and_the_details_jump_to_the_kernel(qtbot, window):
    trace = open_and_wait(qtbot, window, AMD, view="timeline")
    ac2g = trace.strings.id_of("ac2g")
    row = int(np.flatnonzero(trace.flows.category == ac2g)[0])
    (source_number, source_event), (target_number, target_event) = trace.flows.ends(row)
    tracks = trace.track_list()
    launch, kernel = tracks[source_number], tracks[target_number]
    t0 = int(launch.start_ps[source_event]) - 50_000_000
    t1 = int(kernel.start_ps[target_event] + kernel.duration_ps[target_event]) + 50_000_000
    window.timeline.set_window(float(t0), float(t1))
    before = _red_pixels(window)
    window.timeline.select_event(launch, source_event)
    window.router.show_event_details(launch, source_event)
    assert _red_pixels(window) > before + 20  # the arrow's line and head
    assert "Flows" in window.details.toPlainText()
    link = f"flow:{target_number}:{target_event}"
    window.details.anchorClicked.emit(QUrl(link))
    assert window.timeline.selected == (kernel, target_event)
    assert kernel.event_name(target_event)[:20] in window.details.toPlainText()


def test_export_whole_trace_and_selected_range_reopen_with_the_same_events(qtbot, window, tmp_path):
    trace = open_and_wait(qtbot, window, AMD, view="timeline")
    whole = tmp_path / "whole.json.gz"
    assert window.export_to(whole) == trace.event_count
    assert open_trace(whole, use_cache=False).event_count == trace.event_count
    t0, t1 = trace.duration_ps // 4, trace.duration_ps // 2
    window.router.summarize_range(float(t0), float(t1))
    part = tmp_path / "range.json"
    expected = sum(len(t.overlapping(t0, t1)) for t in trace.tracks())
    assert window.export_to(part, window.router.selected_range) == expected
    assert open_trace(part, use_cache=False).event_count == expected
