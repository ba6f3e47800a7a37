"""Selection that stays put (issue 37), in the real main window on the TPU v6e profile: Next/Previous
step within the op table, Details reopens for a new selection, and switching tabs changes nothing."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from tests.conftest import TPU_TRACE
from tests.ui.conftest import open_and_wait
from tests.ui.test_details_dock import click_event
from tests.ui.test_main_window import longest_op_with_flops
from tpuscope.model.units import SHORT_SPEC, format_duration
from tpuscope.ui.timeline.view import PICKED_LAYER


def _occurrences_in_time_order(events):
    starts = np.concatenate([t.start_ps[i] for t, i in events])
    order = np.argsort(starts, kind="stable")
    pairs = [(t, int(j)) for t, i in events for j in i]
    return [pairs[k] for k in order]


def test_next_twice_stays_in_the_op_table_and_details_follows_the_occurrence(qtbot, window):
    open_and_wait(qtbot, window, TPU_TRACE, view="ops")
    ops = window.views["ops"]
    with qtbot.waitSignal(ops.highlightRequested) as picked:
        ops.table_view.selectRow(0)
    occurrences = _occurrences_in_time_order(picked.args[0])
    for step in (1, 2):
        qtbot.mouseClick(ops.stepper.next_button, Qt.MouseButton.LeftButton)
        assert window.tabs.currentWidget() is ops  # the user stays where they step
        assert ops.stepper.current == step - 1
        assert f"{step} of {len(occurrences):,}" in ops.stepper.occurrence_label.text()
        track, index = occurrences[step - 1]
        timeline = window.timeline
        assert timeline.selected == (track, index)  # drawn as the current one, apart from the outlines
        assert timeline.t0_ps < track.start_ps[index] and timeline.t1_ps > track.end_ps[index]
        text = window.details.toPlainText()
        start = format_duration(int(track.start_ps[index]), SHORT_SPEC)
        assert f"{start} after trace start" in text
        assert format_duration(int(track.duration_ps[index]), SHORT_SPEC) in text
        assert track.plane.name in text  # its device
    assert occurrences[0][0].start_ps[occurrences[0][1]] < occurrences[1][0].start_ps[occurrences[1][1]]
    # The op's other occurrences are still outlined; the current one is the timeline's selection.
    outlined = window.timeline.highlights[PICKED_LAYER]
    assert {lod.track for lod in outlined.values()} == {t for t, _ in occurrences}
    window.show_view("timeline")
    assert window.timeline.selected == occurrences[1]


def test_details_reopens_when_the_user_selects_after_closing_it(qtbot, window):
    trace = open_and_wait(qtbot, window, TPU_TRACE, view="timeline")
    track, index = longest_op_with_flops(trace)
    click_event(qtbot, window, track, index)
    assert window.details_dock.isVisible()
    window.details_dock.close()  # its close button
    assert not window.details_dock.isVisible()
    click_event(qtbot, window, track, index - 1 if index else index + 1)
    assert window.details_dock.isVisible()  # a new selection brings it back
    # and in another view: a row of the op table
    window.details_dock.close()
    window.show_view("ops")
    window.views["ops"].table_view.selectRow(1)
    assert window.details_dock.isVisible()
    # View > Details has a key, the one the Keys page lists from the action table
    action = window.menus.actions["view.details"]
    assert action.shortcut() == QKeySequence("Ctrl+Shift+D")
    action.trigger()
    assert not window.details_dock.isVisible()
    action.trigger()
    assert window.details_dock.isVisible()


def test_switching_to_source_and_back_keeps_the_selected_op(qtbot, window):
    open_and_wait(qtbot, window, TPU_TRACE, view="ops")
    ops = window.views["ops"]
    ops.table_view.selectRow(0)
    chosen = ops.model.table_row(0)
    window.details.wait_for_code()
    qtbot.waitUntil(lambda: window.details.code is not None)  # the op's code, shown a moment later
    details = window.details.toPlainText()
    outlined = window.timeline.highlights[PICKED_LAYER]  # replaced by any new highlight
    window.show_view("source")
    source = window.views["source"]
    window.hub.wait()
    qtbot.waitUntil(lambda: source.model.table is not None, timeout=60_000)
    assert source.lines_view.selectionModel().selectedRows() == []  # nothing picked for the user
    window.show_view("ops")
    assert [ops.model.table_row(i.row()) for i in ops.table_view.selectionModel().selectedRows()] == [chosen]
    assert window.details.toPlainText() == details
    assert window.timeline.highlights[PICKED_LAYER] is outlined
    assert ops.model.outlined_rows() == []  # no source line's ops marked over the user's op
