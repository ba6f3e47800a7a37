"""The icon of a finding's severity, as the Overview and the Diagnostics lists show it."""

from __future__ import annotations

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QStyle

from tpuscope.analysis.diagnose import Severity

_PIXMAPS = {
    Severity.CRITICAL: QStyle.StandardPixmap.SP_MessageBoxCritical,
    Severity.WARNING: QStyle.StandardPixmap.SP_MessageBoxWarning,
    Severity.INFO: QStyle.StandardPixmap.SP_MessageBoxInformation,
}


def severity_icon(style: QStyle, severity: Severity) -> QIcon:
    """The style's standard message-box icon for `severity` (critical, warning, information)."""
    return QIcon(style.standardIcon(_PIXMAPS[severity]))
