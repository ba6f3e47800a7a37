"""`tpuscope screenshot`: the real window rendered offscreen to a PNG, and its errors as one sentence."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QImage

from tests.conftest import TPU_TRACE
from tpuscope.cli import main
from tpuscope.ui import view_router
from tpuscope.ui.registry import VIEWS, ViewSpec


def image_colours(path) -> int:
    image = QImage(str(path)).convertToFormat(QImage.Format_RGB32)
    pixels = np.frombuffer(image.constBits(), np.uint32, image.width() * image.height())
    return len(np.unique(pixels))


def test_timeline_screenshot_of_the_tpu_profile(tmp_path, capsys):
    out = tmp_path / "tpu.png"
    assert main(["screenshot", str(TPU_TRACE), str(out), "--size", "900x600"]) == 0
    image = QImage(str(out))
    assert (image.width(), image.height()) == (900, 600)
    assert image_colours(out) > 20
    assert "timeline view" in capsys.readouterr().out


@pytest.mark.parametrize("view", ["ops", "diagnostics"])
def test_other_views_select_their_tab(tmp_path, view):
    timeline, other = tmp_path / "timeline.png", tmp_path / f"{view}.png"
    assert main(["screenshot", str(TPU_TRACE), str(timeline), "--size", "800x500"]) == 0
    assert main(["screenshot", str(TPU_TRACE), str(other), "--size", "800x500", "--view", view]) == 0
    assert QImage(str(timeline)) != QImage(str(other))


def test_a_view_that_does_not_exist_yet_exits_2(tmp_path, capsys, monkeypatch):
    # As in a build where the overview module has not landed: its import finds no module.
    missing = ViewSpec("overview", "Overview", "tpuscope.ui.no_overview_here", "OverviewView")
    monkeypatch.setattr(view_router, "VIEWS", tuple(missing if s.key == "overview" else s for s in VIEWS))
    out = tmp_path / "overview.png"
    assert main(["screenshot", str(TPU_TRACE), str(out), "--view", "overview"]) == 2
    assert "The overview view does not exist in this version of tpuscope yet." in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("size", ["big", "10x10", "1600x"])
def test_bad_sizes_and_paths_are_one_sentence(tmp_path, capsys, size):
    assert main(["screenshot", str(TPU_TRACE), str(tmp_path / "x.png"), "--size", size]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tpuscope: The size") and err.count("\n") == 1


def test_bad_profile_and_missing_folder_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.xplane.pb"
    bad.write_bytes(b"garbage")
    assert main(["screenshot", str(bad), str(tmp_path / "x.png")]) == 2
    assert capsys.readouterr().err.startswith(f"tpuscope: Cannot open {bad}")
    assert main(["screenshot", str(TPU_TRACE), str(tmp_path / "nope" / "x.png")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_a_time_window_zooms_the_timeline(tmp_path, capsys):
    whole, zoomed = tmp_path / "whole.png", tmp_path / "zoomed.png"
    assert main(["screenshot", str(TPU_TRACE), str(whole), "--size", "800x500"]) == 0
    assert (
        main(["screenshot", str(TPU_TRACE), str(zoomed), "--size", "800x500", "--window-ms", "40190:41170"])
        == 0
    )
    assert QImage(str(whole)) != QImage(str(zoomed))
    assert main(["screenshot", str(TPU_TRACE), str(zoomed), "--window-ms", "5:2"]) == 2
    assert "ends before it starts" in capsys.readouterr().err
    assert main(["screenshot", str(TPU_TRACE), str(zoomed), "--window-ms", "soon"]) == 2
    assert "is not START:END in milliseconds" in capsys.readouterr().err
