"""Flags on the timeline: times the user marks (M, as in Perfetto) to come back to and measure from.

A flag is a time from the start of the trace. M marks the time under the cursor (else the start of
the selected event or range, else the middle of the window); M on a flag removes it. Flags are
drawn as a line through the tracks with a marker in the ruler, listed in the command palette, and
kept per profile in the window's settings (`FlagStore`), so they are there when the profile opens
again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from PySide6.QtCore import QPointF, QRectF, QSettings
from PySide6.QtGui import QColor, QPainter, QPen, QPolygonF

from tpuscope.ui.timeline.scene import Viewport

FLAG_COLOUR = QColor("#7b1fa2")  # a purple no op colour of the palette uses
FLAG_SNAP_PX = 4  # M this close to a flag removes it (our heuristic: a few pixels of aim)
FLAG_MARKER_PX = 8  # the marker's size in the ruler
SETTINGS_GROUP = "flags"  # flags/<profile key> = JSON list of times in ps


def toggled(flags: list[float], t_ps: float, snap_ps: float) -> list[float]:
    """`flags` with a flag at `t_ps` added, or, when one lies within `snap_ps`, that one removed."""
    near = [f for f in flags if abs(f - t_ps) <= snap_ps]
    if near:
        closest = min(near, key=lambda f: abs(f - t_ps))
        return [f for f in flags if f != closest]
    return sorted([*flags, float(t_ps)])


def paint_flags(painter: QPainter, view: Viewport, flags: list[float], ruler_px: int, bottom: float) -> None:
    """Each visible flag: a line from the ruler down through the tracks and a marker in the ruler."""
    if not flags:
        return
    painter.save()
    pen = QPen(FLAG_COLOUR, 1)
    pen.setDashPattern([4.0, 3.0])
    for t in flags:
        x = float(view.x_of(t))
        if not view.x <= x <= view.x + view.width:
            continue
        painter.setPen(pen)
        painter.drawLine(QPointF(x, ruler_px), QPointF(x, bottom))
        painter.setPen(QPen(FLAG_COLOUR, 1))
        painter.setBrush(FLAG_COLOUR)
        top = ruler_px - FLAG_MARKER_PX - 2
        marker = QPolygonF(
            [
                QPointF(x, top),
                QPointF(x + FLAG_MARKER_PX, top + FLAG_MARKER_PX / 2),
                QPointF(x, top + FLAG_MARKER_PX),
            ]
        )
        painter.drawPolygon(marker)
        painter.drawLine(QPointF(x, top), QPointF(x, ruler_px))
    painter.restore()


def marker_rect(view: Viewport, t_ps: float, ruler_px: int) -> QRectF:
    x = float(view.x_of(t_ps))
    return QRectF(x - 2, ruler_px - FLAG_MARKER_PX - 2, FLAG_MARKER_PX + 4, FLAG_MARKER_PX + 2)


class FlagStore:
    """Each profile's flags in the window's settings, keyed by the profile's path (hashed: a path can
    hold characters a settings key cannot)."""

    def __init__(self, settings: QSettings):
        self.settings = settings

    @staticmethod
    def key(path: str | Path) -> str:
        digest = hashlib.sha1(str(path).encode("utf-8"), usedforsecurity=False).hexdigest()[:20]
        return f"{SETTINGS_GROUP}/{digest}"

    def load(self, path: str | Path) -> list[float]:
        raw = self.settings.value(self.key(path))
        try:
            values = json.loads(raw) if isinstance(raw, str) else []
        except ValueError:  # a settings file edited by hand: no flags rather than an error
            return []
        return sorted(float(v) for v in values if isinstance(v, (int, float)))

    def save(self, path: str | Path, flags: list[float]) -> None:
        if flags:
            self.settings.setValue(self.key(path), json.dumps([float(f) for f in flags]))
        else:
            self.settings.remove(self.key(path))
