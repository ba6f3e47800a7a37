"""The real main window on real profiles: open, zoom, pan, select, search, ranges, bad files, settings."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QImage, QMouseEvent, QWheelEvent
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox

from tests.conftest import GPU_TRACE, PTXLA_TRACE, TF_TRACE, TPU_TRACE
from tests.ui.conftest import JAX_STEPS, LOAD_TIMEOUT_MS, open_and_wait
from tpuscope.model.units import SHORT_SPEC, format_duration
from tpuscope.ui import window_geometry
from tpuscope.ui.main_window import MainWindow
from tpuscope.ui.timeline.layout import ROW_HEIGHT
from tpuscope.ui.timeline.palette import short_name
from tpuscope.ui.timeline.view import (
    HIGHLIGHT_COLOURS,
    LABEL_COLUMN_PX,
    PAN_FRACTION,
    SEARCH_LAYER,
    ZOOM_STEP,
)


def send_mouse(
    widget, kind, pos: QPointF, buttons=Qt.LeftButton, modifiers=Qt.NoModifier, button=Qt.LeftButton
):
    event = QMouseEvent(
        kind, QPointF(pos), QPointF(widget.mapToGlobal(pos.toPoint())), button, buttons, modifiers
    )
    QApplication.sendEvent(widget, event)


def drag(widget, start: QPointF, end: QPointF, modifiers=Qt.NoModifier) -> None:
    send_mouse(widget, QEvent.MouseButtonPress, start, modifiers=modifiers)
    for k in range(1, 6):
        point = start + (end - start) * (k / 5)
        send_mouse(widget, QEvent.MouseMove, point, modifiers=modifiers, button=Qt.NoButton)
    send_mouse(widget, QEvent.MouseButtonRelease, end, buttons=Qt.NoButton, modifiers=modifiers)


def event_position(view, track, index) -> QPointF:
    """Widget position of the middle of an event's visible part (its track scrolled into view)."""
    view.scroll_to_track(track)
    row = view.layout_.row_of(track)
    vp = view.viewport()
    start = float(track.start_ps[index])
    end = start + float(track.duration_ps[index])
    x0 = max(float(vp.x_of(start)), vp.x)
    x1 = min(float(vp.x_of(end)), vp.x + vp.width)
    y = vp.y_of(row.y + int(track.depth[index]) * ROW_HEIGHT + ROW_HEIGHT / 2)
    return QPointF((x0 + x1) / 2, y)


def longest_op_with_flops(trace):
    track = trace.find_plane("/device:TPU:0").track("XLA Ops")
    flops = track.stat_values("flops", fill=0)
    candidates = np.flatnonzero(flops > 0)
    return track, int(candidates[np.argmax(track.duration_ps[candidates])])


def window_width(view) -> float:
    return view.t1_ps - view.t0_ps


def test_starts_on_the_welcome_page_and_opens_a_real_tpu_profile(qtbot, window):
    assert window.stack.currentWidget() is window.welcome
    assert window.welcome.sample_button.isEnabled()
    trace = open_and_wait(qtbot, window, TPU_TRACE)
    assert window.trace is trace
    assert window.stack.currentWidget() is window.tabs
    # Issue 7: the first view is the Overview, the first tab; the timeline is one keypress away.
    assert window.tabs.currentWidget() is window.views["overview"] is window.tabs.widget(0)
    qtbot.keyClick(window, Qt.Key_2, Qt.ControlModifier)
    assert window.tabs.currentWidget() is window.views["timeline"]
    assert window.timeline.hasFocus()  # W/A/S/D work at once
    view = window.timeline
    groups = [r for r in view.layout_.rows if r.kind == "group"]
    # Devices first, in index order, then the counters (memory in use per allocator), then host threads.
    assert [g.group[1] for g in groups] == [
        "/device:TPU:0",
        "/device:TPU:1",
        "/device:TPU:2",
        "/device:TPU:3",
        "Counters",
        "/host:CPU",
    ]
    tpu0 = [r.track.name for r in view.layout_.rows if r.kind == "track" and r.group[1] == "/device:TPU:0"]
    assert tpu0.index("XLA Modules") < tpu0.index("XLA Ops")
    assert "Overlay" not in tpu0  # empty tracks are hidden
    window.show_empty_action.trigger()
    shown = [r.track.name for r in view.layout_.rows if r.kind == "track" and r.group[1] == "/device:TPU:0"]
    assert "Overlay" in shown and len(shown) == len(trace.find_plane("/device:TPU:0").tracks)
    window.show_empty_action.trigger()
    host = [r.track for r in view.layout_.rows if r.kind == "track" and r.group[1] == "/host:CPU"]
    assert host[0].display_name.startswith("main/")
    assert view.t0_ps <= 0 and view.t1_ps >= trace.duration_ps
    assert "26,723 events" in window.status_label.text()


def test_the_painted_timeline_shows_coloured_boxes_and_labels(qtbot, window):
    open_and_wait(qtbot, window, TPU_TRACE, view="timeline")
    view = window.timeline
    image = view.grab().toImage().convertToFormat(QImage.Format_RGB32)
    area = image.copy(LABEL_COLUMN_PX + 2, view.events_top + 2, int(view.events_width) - 4, 400)
    pixels = np.frombuffer(area.constBits(), np.uint32, area.width() * area.height())
    assert len(np.unique(pixels)) >= 8  # several event colours, not a blank canvas
    assert view.last_frame.box_count > 100
    assert view.last_frame.labels  # some boxes are wide enough for their names
    assert view.steps is not None and len(view.steps) > 10


def test_wheel_keys_and_drag_zoom_and_pan(qtbot, window):
    trace = open_and_wait(qtbot, window, TPU_TRACE, view="timeline")
    view = window.timeline
    view.setFocus()
    full = window_width(view)
    anchor_x = LABEL_COLUMN_PX + view.events_width * 0.25
    anchor_t = view.viewport().t_of(anchor_x)
    wheel = QWheelEvent(
        QPointF(anchor_x, 200),
        QPointF(view.mapToGlobal(QPoint(int(anchor_x), 200))),
        QPoint(0, 0),
        QPoint(0, 120),
        Qt.NoButton,
        Qt.NoModifier,
        Qt.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(view, wheel)
    assert window_width(view) == pytest.approx(full / ZOOM_STEP)
    assert view.viewport().t_of(anchor_x) == pytest.approx(
        anchor_t, abs=full * 1e-9
    )  # zoomed around the cursor

    for _ in range(8):
        qtbot.keyClick(view, Qt.Key_W)
    narrow = window_width(view)
    assert narrow == pytest.approx(full / ZOOM_STEP**9, rel=1e-6)
    qtbot.keyClick(view, Qt.Key_S)
    assert window_width(view) == pytest.approx(narrow * ZOOM_STEP, rel=1e-6)

    width = window_width(view)
    before = view.t0_ps
    qtbot.keyClick(view, Qt.Key_D)
    assert view.t0_ps - before == pytest.approx(PAN_FRACTION * width)
    qtbot.keyClick(view, Qt.Key_A)
    assert view.t0_ps == pytest.approx(before)

    start = QPointF(LABEL_COLUMN_PX + 600, 300)
    drag(view, start, start + QPointF(-200, 0))
    assert view.t0_ps - before == pytest.approx(200 * width / view.events_width, rel=1e-6)
    assert window_width(view) == pytest.approx(width)

    fit = next(a for a in window.menuBar().actions()[1].menu().actions() if a.text() == "Zoom to &Fit")
    fit.trigger()
    assert view.t0_ps <= 0 and view.t1_ps >= trace.duration_ps
    qtbot.keyClick(view, Qt.Key_W)
    qtbot.keyClick(view, Qt.Key_Home)
    assert view.t0_ps <= 0 and view.t1_ps >= trace.duration_ps


def test_click_shows_the_event_with_its_stats_and_metadata_stats(qtbot, window):
    trace = open_and_wait(qtbot, window, TPU_TRACE, view="timeline")
    view = window.timeline
    track, index = longest_op_with_flops(trace)
    view.zoom_to_event(track, index)
    with qtbot.waitSignal(view.eventSelected) as selected:
        qtbot.mouseClick(view, Qt.LeftButton, pos=event_position(view, track, index).toPoint())
    assert selected.args == [track, index]
    text = window.details.toPlainText()
    name = track.event_name(index)
    assert short_name(name) in text
    assert name.split(" = ")[1][:40] in text  # the full HLO expression
    meta = track.metadata_stats(index)
    assert f"{int(meta['flops']):,}" in text
    assert f"program_id\n{meta['program_id']}\n" in text  # ids are not digit-grouped
    assert "hlo_category" in text and str(meta["hlo_category"]) in text
    for stat in track.event_stats(index):
        assert stat in text
    assert "XLA Ops" in text and "/device:TPU:0" in text

    qtbot.mouseClick(view, Qt.LeftButton, pos=QPoint(LABEL_COLUMN_PX + 5, view.height() - 5))
    assert view.selected is None


def test_double_click_zooms_to_the_event(qtbot, window):
    trace = open_and_wait(qtbot, window, TPU_TRACE, view="timeline")
    view = window.timeline
    track = trace.find_plane("/host:CPU").tracks[0]
    module_track = trace.find_plane("/device:TPU:0").track("XLA Modules")
    index = int(np.argmax(module_track.duration_ps))
    view.zoom_to_range(float(module_track.start_ps[index]) - 1e9, float(module_track.end_ps[index]) + 1e9)
    pos = event_position(view, module_track, index)
    qtbot.mouseDClick(view, Qt.LeftButton, pos=pos.toPoint())
    duration = float(module_track.duration_ps[index])
    assert window_width(view) == pytest.approx(1.2 * duration, rel=1e-6)
    assert view.t0_ps < module_track.start_ps[index] < view.t1_ps
    assert view.selected == (module_track, index)
    assert track is not None


def test_search_counts_highlights_and_steps_through_matches(qtbot, window):
    trace = open_and_wait(qtbot, window, TPU_TRACE, view="timeline")
    names = [trace.strings[i] for i in range(len(trace.strings))]
    wanted = np.array([i for i, s in enumerate(names) if "fusion" in s.lower()], np.int32)
    expected = sum(int(np.isin(t.name_id, wanted).sum()) for t in trace.tracks())
    assert expected > 0
    qtbot.keyClicks(window.search.line, "FuSiOn")
    with qtbot.waitSignal(window.search.currentMatch) as first:
        qtbot.keyClick(window.search.line, Qt.Key_Return)
    assert window.search.results.count == expected
    assert window.search.count_label.text() == f"1 of {expected:,} matches"
    track, index = first.args
    assert "fusion" in track.event_name(index).lower()
    starts = [t.start_ps[i] for t, i in window.search.results.per_track]
    assert track.start_ps[index] == min(int(s.min()) for s in starts)  # the earliest match first
    view = window.timeline
    assert view.t0_ps <= track.start_ps[index] <= view.t1_ps
    assert view.selected == (track, index)
    assert window.details.toPlainText().startswith(short_name(track.event_name(index)))
    assert set(view.highlights[SEARCH_LAYER]) == {id(t) for t, _ in window.search.results.per_track}
    image = view.grab().toImage().convertToFormat(QImage.Format_RGB32)
    pixels = np.frombuffer(image.constBits(), np.uint32, image.width() * image.height())
    assert (
        pixels == (HIGHLIGHT_COLOURS[SEARCH_LAYER].rgb() & 0xFFFFFFFF)
    ).sum() > 20  # the matches are outlined on screen

    qtbot.keyClick(window.search.line, Qt.Key_Return)
    assert window.search.count_label.text() == f"2 of {expected:,} matches"
    qtbot.keyClick(window.search.line, Qt.Key_Return, Qt.ShiftModifier)
    qtbot.keyClick(window.search.line, Qt.Key_Return, Qt.ShiftModifier)
    assert window.search.count_label.text() == f"{expected:,} of {expected:,} matches"  # wrapped to the last


def test_regex_search_and_a_bad_regex(qtbot, window):
    trace = open_and_wait(qtbot, window, TPU_TRACE, view="timeline")
    window.search.regex.setChecked(True)
    qtbot.keyClicks(window.search.line, r"^%copy-start\.\d+ =")
    with qtbot.waitSignal(window.search.matchesChanged):
        qtbot.keyClick(window.search.line, Qt.Key_Return)
    expected = sum(len(i) for _, i in trace.find_events(r"^%copy-start\.\d+ =", regex=True))
    assert expected > 0 and window.search.results.count == expected
    window.search.line.clear()
    qtbot.keyClicks(window.search.line, "fusion(")
    qtbot.keyClick(window.search.line, Qt.Key_Return)
    assert "bad regex" in window.search.count_label.text()
    assert window.search.results.count == 0 and not window.search.is_searching()
    assert SEARCH_LAYER not in window.timeline.highlights


def test_a_stale_search_never_overrides_a_newer_one(qtbot, window):
    open_and_wait(qtbot, window, TF_TRACE, view="timeline")
    search = window.search
    search.line.setText("Iterator")
    search.run()
    search.line.setText("EagerExecute")
    with qtbot.waitSignal(search.matchesChanged, timeout=60_000):
        search.run()
    qtbot.waitUntil(lambda: not search._workers, timeout=60_000)
    names = {t.event_name(int(i)) for t, idx in search.results.per_track for i in idx[:50]}
    assert names and all("eagerexecute" in n.lower() for n in names)


def test_shift_drag_summarizes_the_range_per_name(qtbot, window):
    trace = open_and_wait(qtbot, window, TF_TRACE, view="timeline")
    view = window.timeline
    x0, x1 = LABEL_COLUMN_PX + 300.0, LABEL_COLUMN_PX + 700.0
    t0, t1 = view.viewport().t_of(x0), view.viewport().t_of(x1)
    with qtbot.waitSignal(window.rangeSummarized, timeout=LOAD_TIMEOUT_MS):
        with qtbot.waitSignal(view.rangeSelected) as selected:
            drag(view, QPointF(x0, 200), QPointF(x1, 220), modifiers=Qt.ShiftModifier)
    assert selected.args[0] == pytest.approx(t0) and selected.args[1] == pytest.approx(t1)
    text = window.details.toPlainText()
    # The busiest name inside the range, counted here by brute force over the events.
    counts: dict[str, int] = {}
    for track in trace.tracks():
        inside = np.flatnonzero((track.start_ps < t1) & (track.end_ps > t0))
        for i in inside.tolist():
            name = track.event_name(i)
            counts[name] = counts.get(name, 0) + 1
    assert counts
    assert f"{sum(counts.values()):,} events" in text
    assert f"{len(counts):,} names on the {sum(1 for _ in trace.tracks() if len(_))} expanded tracks" in text
    assert view.range == pytest.approx((t0, t1))
    # A newer range wins even when an older summary finishes later.
    shown = []
    window.rangeSummarized.connect(shown.append)
    window.router.summarize_range(0.0, float(trace.duration_ps))
    window.router.summarize_range(t0, (t0 + t1) / 2)
    qtbot.waitUntil(lambda: not window.jobs, timeout=LOAD_TIMEOUT_MS)
    assert len(shown) == 1
    assert window.details.toPlainText().startswith(f"Range {format_duration((t1 - t0) / 2, SHORT_SPEC)}")


def test_a_bad_file_shows_the_loader_message_and_keeps_the_old_trace(qtbot, window, tmp_path, monkeypatch):
    trace = open_and_wait(qtbot, window, TPU_TRACE, view="timeline")
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *args, **kw: shown.append(args) or QMessageBox.Ok)
    bad = tmp_path / "broken.xplane.pb"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0f not a profile")
    with qtbot.waitSignal(window.loadFailed, timeout=LOAD_TIMEOUT_MS) as failed:
        window.open_path(bad)
    message = failed.args[0]
    assert message.startswith(f"Cannot open {bad}")
    assert len(shown) == 1 and shown[0][2] == message
    assert window.trace is trace
    assert window.timeline.trace is trace
    assert window.stack.currentWidget() is window.tabs
    assert str(bad) not in window.recent_paths()


def test_cancel_keeps_the_previous_trace(qtbot, window):
    trace = open_and_wait(qtbot, window, PTXLA_TRACE, view="timeline")
    window.open_path(TF_TRACE)
    assert window.is_loading() and window.cancel_button.isVisible()
    window.cancel_button.click()
    qtbot.waitUntil(lambda: not window.workers, timeout=LOAD_TIMEOUT_MS)
    assert window.trace is trace
    assert window.status_label.text() == "Loading cancelled."
    assert not window.cancel_button.isVisible()


def test_a_newer_load_wins_over_a_stale_one(qtbot, window):
    loaded = []
    window.traceLoaded.connect(loaded.append)
    window.open_path(TF_TRACE)
    window.open_path(GPU_TRACE)
    qtbot.waitUntil(lambda: not window.workers and bool(loaded), timeout=LOAD_TIMEOUT_MS)
    assert len(loaded) == 1
    assert window.path == GPU_TRACE
    assert window.trace.sources == [GPU_TRACE]


def test_recent_files_and_window_state_persist(qtbot, settings, tmp_path):
    first = MainWindow(settings)
    qtbot.addWidget(first)
    first.show()
    open_and_wait(qtbot, first, PTXLA_TRACE)
    open_and_wait(qtbot, first, GPU_TRACE)
    first.details_dock.hide()  # the window state (docks) must come back as it was left
    first.close()
    second = MainWindow(settings)
    qtbot.addWidget(second)
    assert second.recent_paths() == [str(GPU_TRACE.resolve()), str(PTXLA_TRACE.resolve())]
    assert [second.welcome.recent.item(i).text() for i in range(2)] == second.recent_paths()
    assert [a.text() for a in second.recent_menu.actions()] == second.recent_paths()
    second.show()
    assert settings.value(window_geometry.screen_key(second.screen())) is not None
    assert not second.details_dock.isVisible()
    with qtbot.waitSignal(second.traceLoaded, timeout=LOAD_TIMEOUT_MS):
        second.recent_menu.actions()[1].trigger()
    assert second.path == PTXLA_TRACE.resolve()
    with qtbot.waitSignal(second.traceLoaded, timeout=LOAD_TIMEOUT_MS):
        second.welcome.recent.itemActivated.emit(second.welcome.recent.item(1))
    assert second.path == GPU_TRACE.resolve()
    qtbot.waitUntil(lambda: not second.workers, timeout=LOAD_TIMEOUT_MS)


def test_the_welcome_page_opens_the_bundled_sample(qtbot, window):
    with qtbot.waitSignal(window.traceLoaded, timeout=LOAD_TIMEOUT_MS) as loaded:
        window.welcome.sample_button.click()
    assert window.path == window.welcome.sample
    assert loaded.args[0].sources == [window.welcome.sample]
    assert window.timeline.layout_.rows[0].label.startswith("/device:TPU:0")


def test_dropping_a_file_opens_it(qtbot, window):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(GPU_TRACE))])
    enter = QDragEnterEvent(QPointF(50, 50), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    window.dragEnterEvent(enter)
    assert enter.isAccepted()
    event = QDropEvent(QPointF(50, 50), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    with qtbot.waitSignal(window.traceLoaded, timeout=LOAD_TIMEOUT_MS):
        window.dropEvent(event)
    assert window.path == GPU_TRACE


def test_groups_collapse_and_expand_and_names_have_tooltips(qtbot, window):
    open_and_wait(qtbot, window, TPU_TRACE, view="timeline")
    view = window.timeline
    rows = len(view.layout_.rows)
    header = view.layout_.rows[0]
    y = view.events_top + header.y + header.height // 2
    qtbot.mouseClick(view, Qt.LeftButton, pos=QPoint(40, y))
    assert view.layout_.rows[0].collapsed
    assert len(view.layout_.rows) < rows
    # The collapsed group still shows its busiest track's activity inside its header row.
    summary = view.layout_.rows[0].summary
    assert summary is not None and summary.name == "XLA Ops"
    view.grab()
    header_top, header_bottom = view.events_top + header.y, view.events_top + header.y + header.height
    ys = np.concatenate([r[:, 1] for r in view.last_frame.rects_by_colour.values()])
    assert ((ys >= header_top) & (ys < header_bottom)).sum() > 10
    qtbot.mouseClick(view, Qt.LeftButton, pos=QPoint(40, y))
    assert len(view.layout_.rows) == rows
    track_row = next(r for r in view.layout_.rows if r.kind == "track" and r.group[1] == "/host:CPU")
    view.scroll_to_track(track_row.track)
    tip = view.tooltip_at(QPoint(30, int(view.viewport().y_of(track_row.y) + 5)))
    assert track_row.track.display_name in tip


def test_jax_cpu_profile_has_a_step_band_and_step_stats(qtbot, window, jax_cpu_profile):
    trace = open_and_wait(qtbot, window, jax_cpu_profile.parent, view="timeline")
    view = window.timeline
    assert view.steps is not None
    assert sorted(view.steps.number.tolist()) == list(range(JAX_STEPS))
    found = trace.events_named("train")
    track, indices = next((t, i) for t, i in found if "step_num" in t.event_stats(int(i[0])))
    index = int(indices[2])
    view.zoom_to_event(track, index)
    qtbot.mouseClick(view, Qt.LeftButton, pos=event_position(view, track, index).toPoint())
    assert view.selected == (track, index)
    text = window.details.toPlainText()
    assert "step_num" in text and str(track.event_stats(index)["step_num"]) in text


def test_tooltips_tell_folded_boxes_and_the_step_source(qtbot, window):
    open_and_wait(qtbot, window, TF_TRACE, view="timeline")
    view = window.timeline
    vp = view.viewport()
    found = None
    for row in view.layout_.rows:
        if row.track is None or row.y + row.height > vp.y_shift + view.height() - view.events_top:
            continue
        for depth_lod in view.lod.of(row.track).depths:
            boxes = depth_lod.window(vp.t0_ps, vp.t1_ps, vp.ps_per_px * 2)
            folded = np.flatnonzero(boxes.count > 1)
            if len(folded):
                i = folded[0]
                x = float(vp.x_of((boxes.start_ps[i] + boxes.end_ps[i]) / 2))
                y = vp.y_of(row.y + depth_lod.depth * ROW_HEIGHT + ROW_HEIGHT / 2)
                found = (QPoint(int(x), int(y)), int(boxes.count[i]))
                break
        if found:
            break
    assert found is not None  # the whole TF profile at 1,100 px folds some of its 128k events
    pos, count = found
    assert view.box_at(pos)[1] >= count
    assert "events too small to draw apart here" in view.tooltip_at(pos)
    assert view.tooltip_at(QPoint(LABEL_COLUMN_PX + 50, 30)) == f"Steps: {view.steps.description}"


def test_file_open_and_open_folder_load_what_the_dialogs_return(qtbot, window, monkeypatch):
    # The dialogs themselves are the platform's; what they return is what a user picked.
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(GPU_TRACE), ""))
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(PTXLA_TRACE.parent))
    file_menu = window.menuBar().actions()[0].menu()
    open_file = next(a for a in file_menu.actions() if a.text().startswith("&Open\u2026"))
    open_folder = next(a for a in file_menu.actions() if a.text().startswith("Open &Folder"))
    with qtbot.waitSignal(window.traceLoaded, timeout=LOAD_TIMEOUT_MS):
        open_file.trigger()
    assert window.path == GPU_TRACE
    with qtbot.waitSignal(window.traceLoaded, timeout=LOAD_TIMEOUT_MS):
        open_folder.trigger()
    assert window.path == PTXLA_TRACE.parent and window.trace.sources == [PTXLA_TRACE]
    qtbot.waitUntil(lambda: not window.workers, timeout=LOAD_TIMEOUT_MS)


def test_a_file_cut_short_opens_with_a_banner_saying_what_is_missing(qtbot, window, tmp_path):
    cut = tmp_path / "cut.xplane.pb"
    data = TPU_TRACE.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    trace = open_and_wait(qtbot, window, cut)
    assert trace.event_count > 0
    assert window.notice.isVisible()
    assert window.notice.text.text() == trace.load_warnings[0] and "cut short" in window.notice.text.text()
    notice_bottom = window.notice.mapTo(window, window.notice.rect().bottomLeft()).y()
    assert notice_bottom < window.tabs.mapTo(window, window.tabs.rect().topLeft()).y()  # above the tabs
    open_and_wait(qtbot, window, TPU_TRACE)  # a whole file: the banner goes away
    assert not window.notice.isVisible()
