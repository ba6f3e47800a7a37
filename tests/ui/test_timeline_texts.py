"""Box and row labels drawn from laid-out texts: each fits the room it is given, so it needs no clip."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetricsF

from tpuscope.ui.timeline.texts import ELLIPSIS, StaticTexts

NAMES = [
    "fusion.12",
    "broadcast_add_fusion",
    "copy-start.5",
    "jit_f(12190760917235803885)",
    "x",
    "\u00e9t\u00e9",
]


@pytest.fixture
def texts(qapp):
    font = QFont()
    font.setPointSizeF(8.5)
    return StaticTexts(font)


@pytest.mark.parametrize("mode", [Qt.TextElideMode.ElideRight, Qt.TextElideMode.ElideMiddle])
def test_every_label_fits_its_room_or_is_not_drawn(texts, mode):
    metrics = QFontMetricsF(texts.font)
    for name in NAMES:
        for width in (0.0, 3.0, 9.5, 20.0, 47.3, 120.0, 400.0):
            static = texts.fitted(name, width, mode)
            if static is None:
                continue
            shown = static.text()
            assert shown and shown != ELLIPSIS
            assert metrics.horizontalAdvance(shown) <= width + 1e-6, (name, width, shown)
            if metrics.horizontalAdvance(name) <= int(width / texts.char_px) * texts.char_px:
                assert shown == name  # room enough: never elided
            else:
                assert ELLIPSIS in shown


def test_a_label_is_laid_out_once_per_room(texts):
    first = texts.fitted("broadcast_add_fusion", 60.0)
    assert first is not None
    assert texts.fitted("broadcast_add_fusion", 60.0) is first
    assert texts.fitted("broadcast_add_fusion", 2.0) is None  # not even one character and the ellipsis
