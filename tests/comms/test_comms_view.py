"""The Communication tab on real profiles: the report `tpuscope comms` prints, per-step bars of exposed
and overlapped time that jump to the step, the collective ops that outline their events."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import Qt

from tests.comms.conftest import QUEUE
from tests.conftest import SAMPLES, require_shared_traces
from tpuscope.analysis.facts.intervals import canonical, window_total
from tpuscope.analysis.pod.comms_report import CommsReport
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.ui.comms_view import EXPOSED_COLUMN, NAME_COLUMN, CommsView


def _view(qtbot, path) -> CommsView:
    widget = CommsView()
    qtbot.addWidget(widget)
    widget.resize(1366, 768)
    widget.set_trace(open_trace(path))
    widget.show()
    qtbot.waitExposed(widget)
    widget.hub.wait()
    return widget


def test_bars_and_rows_are_the_reports(qtbot):
    require_shared_traces()
    view = _view(qtbot, QUEUE)
    expected = CommsReport.of(TraceAnalysis(open_trace(QUEUE)).pod)
    assert view.report is not None and view.report.to_json() == expected.to_json()
    assert "1.4% overlapped with compute" in view.summary.text()
    bars = [item for item in view.chart.getPlotItem().items if isinstance(item, pg.BarGraphItem)]
    exposed, overlapped = (np.asarray(b.opts["height"]) for b in bars)
    steps = expected.per_step()
    np.testing.assert_allclose(exposed, [s["exposed_us"] / 1e3 for s in steps])
    np.testing.assert_allclose(overlapped, [s["overlapped_us"] / 1e3 for s in steps])
    assert view.table.rowCount() == len(expected.rows)
    # Most exposed first.
    first = view.table.item(0, NAME_COLUMN).data(Qt.ItemDataRole.UserRole)
    assert expected.rows[int(first)].exposed_ps == max(r.exposed_ps for r in expected.rows)
    assert view.table.horizontalHeaderItem(EXPOSED_COLUMN).text() == "Exposed"


def test_a_step_bar_and_an_op_go_to_the_timeline(qtbot):
    require_shared_traces()
    view = _view(qtbot, QUEUE)
    report = view.report
    assert report is not None
    with qtbot.waitSignal(view.zoomRequested) as zoom:
        view._step_picked(2)
    assert zoom.args == [int(report.step_start_ps[2]), int(report.step_end_ps[2])]
    with qtbot.waitSignal(view.highlightRequested) as outlined, qtbot.waitSignal(view.eventPicked) as picked:
        view.table.selectRow(0)
    outlined_events = sum(len(i) for _, i in outlined.args[0])
    # Every kernel of that name (this job runs all its collectives as one kernel), the first one shown.
    assert outlined_events == sum(r.count for r in report.rows)
    track, index = picked.args
    assert track.event_name(index).startswith("ncclKernel_SendRecv")


def test_no_collectives_and_collectives_outside_the_steps(qtbot):
    view = _view(qtbot, SAMPLES / "jax_cpu_healthy.xplane.pb")
    assert view.summary.text().startswith("No collectives")
    view = _view(qtbot, SAMPLES / "tpu_v6e_inference_4chip.xplane.pb")
    assert view.summary.text().startswith("No communication inside the 100 steps")
    assert not view.chart.isVisible() and view.table.rowCount() == 2
    with qtbot.waitSignal(view.highlightRequested) as outlined:
        view.select("all-reduce")
    assert sum(len(i) for _, i in outlined.args[0]) == 12


def test_exposed_time_pinned_on_the_timeline_is_the_reports(qtbot):
    require_shared_traces()
    view = _view(qtbot, QUEUE)
    report = view.report
    assert report is not None and view.pin_button.isEnabled()
    with qtbot.waitSignal(view.queryTracksChanged) as pinned:
        view.pin_exposed()
    (track,) = pinned.args[0]
    assert track.label.startswith("Exposed: ")
    starts = track.track.start_ps
    ends = starts + track.track.duration_ps
    inside = window_total(canonical(starts, ends), report.step_start_ps, report.step_end_ps)
    assert inside.sum() / 1e6 == pytest.approx(report.summary()["exposed_us"], abs=0.01)
