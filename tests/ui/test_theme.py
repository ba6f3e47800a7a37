"""The theme follows the desktop's light/dark setting (issue 37): the palette, the charts and the
findings' tables change colour when the style hints report a new colour scheme."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette

from tests.conftest import TPU_TRACE, require_shared_traces
from tests.ui.test_diagnostics_view import _tables
from tests.ui.widgets import show_exposed
from tpuscope.app.opener import open_trace
from tpuscope.ui import theme
from tpuscope.ui.diagnostics_view import DiagnosticsView
from tpuscope.ui.widgets.charts import make_chart


def _lightness(color) -> int:
    return color.lightness()


def test_a_dark_desktop_darkens_the_charts_and_the_findings_tables(qtbot, qapp):
    require_shared_traces()
    assert not theme.is_dark(qapp.palette())  # the offscreen platform starts light
    chart = show_exposed(qtbot, make_chart("Steps"), 400, 300)
    chart.setLabel("left", "step time", units="s")
    view = show_exposed(qtbot, DiagnosticsView(), 1280, 720)
    with qtbot.waitSignal(view.reportReady, timeout=30_000):
        view.set_trace(open_trace(TPU_TRACE, use_cache=False))
    light_page = view.detail.toHtml()
    light_tables = [t for t in _tables(view.detail.document()) if t.columns() > 2]
    assert light_tables and all(
        _lightness(t.cellAt(0, 0).format().background().color()) > theme.DARK_LIGHTNESS for t in light_tables
    )
    try:
        theme.follow_desktop(qapp)
        qapp.styleHints().colorSchemeChanged.emit(Qt.ColorScheme.Dark)  # what the desktop sends
        assert theme.is_dark(qapp.palette())
        qtbot.waitUntil(lambda: _lightness(chart.backgroundBrush().color()) < theme.DARK_LIGHTNESS)
        assert chart.backgroundBrush().color() == qapp.palette().color(QPalette.ColorRole.Base)
        assert chart.getAxis("left").textPen().color() == qapp.palette().color(QPalette.ColorRole.Text)
        assert (
            chart.getAxis("left").labelStyle["color"] == qapp.palette().color(QPalette.ColorRole.Text).name()
        )
        assert "step time" in chart.getAxis("left").label.toHtml()
        qtbot.waitUntil(lambda: view.detail.toHtml() != light_page)  # the tables' colours are redone
        tables = [t for t in _tables(view.detail.document()) if t.columns() > 2]
        assert tables  # the async wait's ops
        for table in tables:  # a dark header row under light text, not the light theme's grey
            header = table.cellAt(0, 0).format().background().color()
            assert _lightness(header) < theme.DARK_LIGHTNESS
    finally:
        qapp.styleHints().colorSchemeChanged.emit(Qt.ColorScheme.Light)
        view.shutdown()
    assert not theme.is_dark(qapp.palette())
    qtbot.waitUntil(lambda: _lightness(chart.backgroundBrush().color()) > theme.DARK_LIGHTNESS)
