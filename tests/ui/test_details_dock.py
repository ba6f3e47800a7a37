"""The Details dock opens when it has something to show (issue 23) and again for the user's next
selection after they closed it (issue 37)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.conftest import TPU_TRACE
from tests.ui.conftest import open_and_wait
from tests.ui.test_main_window import event_position, longest_op_with_flops
from tests.ui.widgets import show_exposed
from tpuscope.model.units import SHORT_SPEC, format_duration
from tpuscope.ui.main_window import MainWindow


def click_event(qtbot, window: MainWindow, track, index: int) -> None:
    view = window.timeline
    view.zoom_to_event(track, index)
    with qtbot.waitSignal(view.eventSelected):
        qtbot.mouseClick(view, Qt.MouseButton.LeftButton, pos=event_position(view, track, index).toPoint())


def test_the_dock_opens_with_an_event_and_again_for_the_next_one_once_closed(qtbot, window, settings):
    trace = open_and_wait(qtbot, window, TPU_TRACE, view="timeline")
    assert not window.details_dock.isVisible()  # nothing picked yet: the views get the whole width
    track, index = longest_op_with_flops(trace)
    click_event(qtbot, window, track, index)
    assert window.details_dock.isVisible()
    assert window.details_dock.width() < window.width() / 3
    assert track.event_name(index).split(" = ")[0] in window.details.toPlainText()

    window.details_dock.close()  # what its close button does
    assert not window.details_dock.isVisible()
    other = index - 1 if index else index + 1
    click_event(qtbot, window, track, other)
    assert window.details_dock.isVisible()  # the user's new selection brings it back
    start = format_duration(int(track.start_ps[other]), SHORT_SPEC)
    assert f"{start} after trace start" in window.details.toPlainText()  # and shows that event

    second = show_exposed(qtbot, MainWindow(settings), 1366, 768)
    open_and_wait(qtbot, second, TPU_TRACE, view="timeline")
    assert not second.details_dock.isVisible()  # a new window: closed until something is picked
    second.details_dock.toggleViewAction().trigger()  # View > Details
    assert second.details_dock.isVisible()
    second.wait_for_background_work()


def track_of(window: MainWindow, track):
    """The same track in the trace `window` loaded (each window loads its own)."""
    assert window.trace is not None
    return window.trace.find_plane(track.plane.name).track(track.name)
