"""The Source tab and an op's code in the Details dock, on a real JAX CPU recording of a program run
from a file (tests/jax_recordings.py SOURCE_PROGRAM) and on the TPU v6e sample."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QSettings, Qt

from tests.conftest import TPU_TRACE, require_shared_traces
from tests.jax_recordings import record_source_profile
from tests.ui.conftest import open_and_wait
from tpuscope.app.opener import open_trace
from tpuscope.ui.details import DetailsPanel
from tpuscope.ui.source_files import logdir_of, read_source
from tpuscope.ui.source_view import SourceView


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    program, profile = record_source_profile(tmp_path_factory.mktemp("source_view"))
    lines = program.read_text().splitlines()
    big_matmul = next(k for k, line in enumerate(lines, 1) if "BIG_MATMUL" in line)
    return program, profile, big_matmul


def _view(qtbot, settings, trace) -> SourceView:
    view = SourceView(settings=settings)
    qtbot.addWidget(view)
    view.resize(1366, 768)
    view.set_trace(trace)
    view.show()
    qtbot.waitExposed(view)
    view.hub.wait()
    return view


def test_the_biggest_line_is_picked_and_its_file_shown_with_time_per_line(qtbot, settings, recording):
    program, profile, big_matmul = recording
    trace = open_trace(profile)
    view = _view(qtbot, settings, trace)
    table = view.hub.analysis.op_table("source")
    assert table is not None and view.model.table is table
    assert view.model.rowCount() == len(table)
    assert view.model.data(view.model.index(0, 0)) == f"{program}:{big_matmul}"
    assert view.model.data(view.model.index(0, 1)) == "layer"
    assert view.shown_file == str(program)
    assert view.editor.text() == program.read_text()
    assert view.editor.current_line() == big_matmul
    # The gutter holds each line's self time, the same as the table's rows of that file.
    by_line = {
        int(n.rsplit(":", 1)[1]): int(table.self_ps[r]) for r, n in enumerate(table.names()) if ":" in n
    }
    assert view.editor.times == by_line
    assert max(view.editor.times, key=view.editor.times.get) == big_matmul
    view.editor.grab()  # paints the gutter


def test_picking_a_line_outlines_its_ops(qtbot, settings, recording):
    program, profile, big_matmul = recording
    trace = open_trace(profile)
    view = _view(qtbot, settings, trace)
    table = view.model.table
    assert table is not None
    row = next(r for r, n in enumerate(table.names()) if n.startswith(str(program)) and r > 0)
    with qtbot.waitSignal(view.highlightRequested) as outlined, qtbot.waitSignal(view.opsOutlined) as ops:
        view.lines_view.selectRow(row)
    expected = table.events_of_row(row)
    assert [(t, list(i)) for t, i in outlined.args[0]] == [(t, list(i)) for t, i in expected]
    assert ops.args[0] == set(table.folded_ops[row])
    assert view.editor.current_line() == int(table.names()[row].rsplit(":", 1)[1])
    # A click on a line of the file picks its row back.
    view.lines_view.clearSelection()
    line_height = view.editor.fontMetrics().height()
    view.editor.go_to_line(big_matmul)
    y = (big_matmul - 1 - view.editor.verticalScrollBar().value()) * line_height + line_height // 2
    qtbot.mouseClick(view.editor.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(200, y))
    assert view.editor.current_line() == big_matmul
    assert view.lines_view.selectionModel().selectedRows()[0].row() == 0


def test_a_moved_file_is_found_through_a_source_root_remembered_per_logdir(qtbot, tmp_path, recording):
    program, profile, big_matmul = recording
    logdir = tmp_path / "logdir"
    shutil.copytree(profile.parents[3], logdir)  # the logdir, without the program beside it
    moved = open_trace(next(logdir.glob("plugins/profile/*/*.xplane.pb")), use_cache=False)
    settings = QSettings(str(tmp_path / "tpuscope.ini"), QSettings.Format.IniFormat)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    view = _view(qtbot, settings, moved)
    assert view.shown_file == str(program)  # as recorded: still there
    program_backup = program.read_text()
    program.rename(tmp_path / "elsewhere.py")
    try:
        view.set_source_root("", "")  # forget nothing, but read the file again: it moved
        view.shown_file = ""
        view.show_file(str(program), big_matmul)
        assert view.editor.text() == "" and "not on this machine" in view.file_label.text()
        (checkout / "model.py").write_text(program_backup)
        view.set_source_root(str(program.parent), str(checkout))
        view.show_file(str(program), big_matmul)
        assert view.editor.text() == program_backup
        assert view.source is not None and view.source.path == checkout / "model.py"
        # Remembered for this logdir: a new tab on the same logdir maps it at once.
        again = _view(qtbot, settings, moved)
        assert again.root is not None and again.root.folder == str(checkout)
        assert again.editor.text() == program_backup
        assert logdir_of(moved) == str(logdir)
        # A binary file where the source should be: a note, no text.
        (checkout / "model.py").write_bytes(b"\x7fELF\0\0\0")
        assert "binary" in read_source(str(program), again.root).note
    finally:
        (tmp_path / "elsewhere.py").rename(program)


def test_a_10k_line_file_opens(qtbot, settings, tmp_path, recording):
    trace = open_trace(recording[1])
    view = _view(qtbot, settings, trace)
    big = tmp_path / "big.py"
    big.write_text("".join(f"x_{k} = {k} * 2  # line {k + 1}\n" for k in range(10_000)))
    view.show_file(str(big), 9_000)
    assert view.editor.line_count() == 10_000
    assert view.editor.current_line() == 9_000
    view.editor.grab()


def test_details_show_an_ops_code_as_a_traceback(qtbot, recording):
    program, profile, big_matmul = recording
    trace = open_trace(profile)
    view = _view(qtbot, None, trace)
    details = DetailsPanel(hub=view.hub)
    qtbot.addWidget(details)
    table = view.hub.analysis.op_table("op")
    assert table is not None
    row = next(r for r, name in enumerate(table.names()) if name.startswith("ynn_fusion"))
    track, indices = table.events_of_row(row)[0]
    details.show_event(track, int(indices[0]))
    details.wait_for_code()
    qtbot.waitUntil(lambda: details.code is not None)
    text = details.toPlainText()
    assert "Traceback (most recent call last):" in text
    assert f'File "{program}", line {big_matmul}, in layer' in text
    assert details.code.code.source == f"{program}:{big_matmul}"


def test_details_of_a_tpu_fusion_list_what_it_fused(qtbot):
    require_shared_traces()
    trace = open_trace(TPU_TRACE)
    view = _view(qtbot, None, trace)
    details = DetailsPanel(hub=view.hub)
    qtbot.addWidget(details)
    device = view.hub.analysis.devices[0]
    track, indices = device.events[0]
    names = [track.event_name(int(i)) for i in indices]
    at = next(k for k, name in enumerate(names) if name.startswith("%broadcast_add_fusion.1 "))
    details.show_event(track, int(indices[at]))
    details.wait_for_code()
    qtbot.waitUntil(lambda: details.code is not None)
    text = details.toPlainText()
    assert "jit(f)/jit(main)/add" in text
    assert "host_offload_stress_test.py:29" in text
    assert text.count('  File "') == 9  # XProf's 9-frame stack, outermost first
    assert (
        "in main.<locals>.f.<locals>.process" in text.split("Traceback")[1].split("HLO")[0].splitlines()[-1]
    )
    assert "Fused instructions (4)" in text and "add(" in text


def test_the_window_outlines_a_lines_ops_in_the_op_table(qtbot, window, recording):
    program, profile, big_matmul = recording
    open_and_wait(qtbot, window, profile, view="ops")
    ops = window.views["ops"]
    window.hub.wait()
    window.show_view("source")
    source = window.views["source"]
    qtbot.waitUntil(lambda: source.model.table is not None, timeout=60_000)
    source.pick_row(0)
    names = set(source.model.table.folded_ops[0])
    marked = {ops.model.table.names()[r] for r in ops.model.outlined_rows()}
    assert marked == names and names
    # Picking an op in the op table shows its code in the Details dock.
    row = int(np.flatnonzero(np.array(ops.model.table.names()) == sorted(names)[0])[0])
    window.show_view("ops")
    ops.select_table_row(row)
    window.details.wait_for_code()
    qtbot.waitUntil(lambda: window.details.code is not None)
    assert window.details.code.code.source == f"{program}:{big_matmul}"


def test_a_pytorch_traces_lines_and_file(qtbot, tmp_path):
    """A PyTorch trace with Python frames (tests/readers/trace_event/python_frames.py: the A100 trace
    given a real torch recording's frames): the Source tab lists the lines that launched its kernels,
    and with the recorder's folder as the source root shows the file with time beside each line."""
    from tests.readers.trace_event.python_frames import RECORDER, grafted_trace, marked_line

    trace = open_trace(grafted_trace(tmp_path), use_cache=False)
    settings = QSettings(str(tmp_path / "tpuscope.ini"), QSettings.Format.IniFormat)
    view = _view(qtbot, settings, trace)
    table = view.model.table
    assert table is not None
    conv, linear = marked_line("CONV_LINE"), marked_line("LINEAR_LINE")
    lines = {view.model.data(view.model.index(r, 0)): r for r in range(view.model.rowCount())}
    assert {f"{RECORDER.name}:{conv}", f"{RECORDER.name}:{linear}"} <= set(lines)
    assert view.model.data(view.model.index(lines[f"{RECORDER.name}:{conv}"], 1)) == "forward"
    view.set_source_root("", str(RECORDER.parent))
    view.pick_row(lines[f"{RECORDER.name}:{conv}"])
    assert view.editor.text() == RECORDER.read_text()
    assert view.editor.current_line() == conv
    assert set(view.editor.times) == {conv, linear}
    with qtbot.waitSignal(view.highlightRequested) as outlined:
        view.lines_view.selectRow(lines[f"{RECORDER.name}:{linear}"])
    assert sum(len(i) for _, i in outlined.args[0]) == int(
        table.occurrences[lines[f"{RECORDER.name}:{linear}"]]
    )
