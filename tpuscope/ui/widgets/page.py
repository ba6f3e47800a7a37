"""Page layout: a page that scrolls only when the window is too small, and titled panels on it."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from tpuscope.ui.widgets.labels import heading

PANEL_TITLE_GAP_PX = 10  # between a panel's title and its caption
PANEL_SPACING_PX = 4  # between a panel's header and its body


class ScrollPage(QWidget):
    """The widget of a QScrollArea. QScrollArea sizes a page whose layout has height-for-width
    (wrapped labels) to that layout's *preferred* height, which always adds a scroll bar; this page
    asks only for its minimum height, so it fills the viewport and scrolls only when the window is
    smaller.

    `floor_px` is the height below which it scrolls even when its contents would fit (the charts
    get too short): a floor under the layout's own minimum, not in place of it, since a fixed
    minimum height (setMinimumHeight) overrides the layout's and a page that grows (a section
    shown) would then be squeezed into it, its widgets drawn over each other."""

    def __init__(self, floor_px: int = 0, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.floor_px = floor_px

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(hint.width(), max(hint.height(), self.floor_px))

    def heightForWidth(self, width: int) -> int:
        # The layout's minimum at this width: its wrapped labels and cards as tall as they wrap to,
        # which is what the layout gives them (minimumSizeHint counts each label as one line).
        layout = self.layout()
        wrapped = (
            layout.minimumHeightForWidth(width) if layout is not None and layout.hasHeightForWidth() else 0
        )
        return max(self.minimumSizeHint().height(), wrapped)


def titled_panel(title: str, caption: QLabel, body: QWidget) -> QWidget:
    """`body` under a header line: the bold `title`, then `caption` (a line the view keeps updating)."""
    panel = QWidget()
    layout = QVBoxLayout(panel)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(PANEL_SPACING_PX)
    header = QHBoxLayout()
    header.addWidget(heading(title))
    header.addSpacing(PANEL_TITLE_GAP_PX)
    caption.setWordWrap(True)  # a long caption wraps under a narrow panel instead of widening the page
    header.addWidget(caption, 1)
    layout.addLayout(header)
    layout.addWidget(body, 1)
    return panel
