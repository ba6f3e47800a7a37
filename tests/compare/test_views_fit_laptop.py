"""The Compare and History tabs (added on first use, so not in the registry) fit a 1280x720 window,
and 920 px beside the Details dock, as every registered view does (tests/ui/test_fits_laptop.py)."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from tests.compare.test_history_view import _logdir
from tests.ui.test_fits_laptop import LAPTOP_SIZE, layout_problems
from tests.ui.widgets import show_exposed
from tpuscope.app.history import read_history
from tpuscope.ui.compare_view import CompareView, compare_paths
from tpuscope.ui.history_view import HistoryView

SIZES = [LAPTOP_SIZE, (920, LAPTOP_SIZE[1])]  # 920: a 1280 px window less the Details dock


def _settle() -> None:
    for _ in range(3):
        QApplication.processEvents()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_compare_view_fits_and_renders_code_spans(qtbot, pair_paths, size):
    view = show_exposed(qtbot, CompareView(), *size)
    view.set_result(compare_paths(pair_paths["plain"], pair_paths["extra_op"]))
    _settle()
    assert layout_problems(view, view) == []
    assert "`" in view.result.comparison.summary  # the summary names ops as code...
    assert "<code>" in view.summary.text() and "`" not in view.summary.text()  # ...shown as code


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_history_view_fits(qtbot, tmp_path, slowed_machine_paths, monkeypatch, size):
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    view = show_exposed(qtbot, HistoryView(), *size)
    view.set_history(read_history([str(_logdir(tmp_path, slowed_machine_paths))]))
    _settle()
    assert layout_problems(view, view) == []
