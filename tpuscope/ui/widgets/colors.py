"""Colours more than one view uses, so that the same thing has the same colour on every page."""

from __future__ import annotations

from PySide6.QtGui import QColor

# Device busy: the blue of the Ops view's bars, the Overview's step chart and the NEW run in Compare.
BUSY_COLOR = QColor(66, 133, 244)
