"""A non-modal bar above the views saying what of the open profile could not be read.

Why a bar and not a dialog: a file cut short still opens (everything before
the cut), and the user should see both the trace and, without having to
dismiss anything first, what is missing from it. The bar stays until closed
or until another profile opens.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QStyle, QToolButton, QWidget

# Amber warning colours with dark text: readable on light and dark palettes alike (our choice).
_BACKGROUND = "#fff4ce"
_BORDER = "#e0b252"
_TEXT = "#3d2e00"


class NoticeBar(QFrame):
    """One or more one-sentence warnings about the loaded profile, with a close button."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("noticeBar")
        self.setStyleSheet(
            f"QFrame#noticeBar {{ background: {_BACKGROUND}; border-bottom: 1px solid {_BORDER}; }}"
            f" QFrame#noticeBar QLabel {{ color: {_TEXT}; }}"
        )
        icon = QLabel(self)
        icon.setPixmap(self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning).pixmap(20, 20))
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.text = QLabel(self)
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton(self)
        close.setText("\u2715")
        close.setToolTip("Hide this message")
        close.setAutoRaise(True)
        close.clicked.connect(self.hide)
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 6, 6, 6)
        row.addWidget(icon)
        row.addWidget(self.text, 1)
        row.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def show_messages(self, messages: list[str]) -> None:
        """Shows `messages` (one per line); hides the bar when there are none."""
        self.text.setText("\n".join(messages))
        self.setVisible(bool(messages))
