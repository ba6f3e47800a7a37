"""The page shown with no profile open: open a file or folder, a recent one, or the bundled sample."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from tpuscope.readers import READERS
from tpuscope.readers.xplane import XPLANE_READER

SAMPLE_NAME = "tpu_v6e_inference_4chip" + XPLANE_READER.suffixes[0]


def _formats() -> str:
    """The registered formats with their first file ending: "XPlane (<code>*.xplane.pb</code>), ..."."""
    return ", ".join(f"{r.title} (<code>*{r.suffixes[0]}</code>)" for r in READERS.values())


def bundled_sample() -> Path | None:
    """The real TPU v6e sample shipped with tpuscope: in the package resources or the checkout's samples/."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "resources" / SAMPLE_NAME, package.parent / "samples" / SAMPLE_NAME):
        if candidate.is_file():
            return candidate
    return None


class WelcomePage(QWidget):
    openFileRequested = Signal()
    openFolderRequested = Signal()
    openPathRequested = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        title = QLabel(
            f"<h1>tpuscope</h1><p>Open a profile ({_formats()}) written by "
            "JAX, TensorFlow, PyTorch or PyTorch/XLA, a run folder, or a TensorBoard logdir. "
            "You can also drop one on this window.</p>",
            self,
        )
        title.setWordWrap(True)
        open_file = QPushButton("Open file\u2026", self)
        open_folder = QPushButton("Open folder\u2026", self)
        open_file.clicked.connect(self.openFileRequested)
        open_folder.clicked.connect(self.openFolderRequested)
        buttons = QHBoxLayout()
        buttons.addWidget(open_file)
        buttons.addWidget(open_folder)
        self.sample = bundled_sample()
        self.sample_button = QPushButton("Open the TPU v6e sample", self)
        self.sample_button.setEnabled(self.sample is not None)
        self.sample_button.clicked.connect(lambda: self.openPathRequested.emit(str(self.sample)))
        buttons.addWidget(self.sample_button)
        buttons.addStretch(1)
        self.recent = QListWidget(self)
        self.recent.itemActivated.connect(
            lambda item: self.openPathRequested.emit(item.data(Qt.ItemDataRole.UserRole))
        )
        column = QVBoxLayout()
        column.addWidget(title)
        column.addLayout(buttons)
        column.addSpacing(12)
        column.addWidget(QLabel("<b>Recent</b>", self))
        column.addWidget(self.recent, 1)
        outer = QHBoxLayout(self)
        outer.addStretch(1)
        outer.addLayout(column, 3)
        outer.addStretch(1)

    def set_recent(self, paths: list[str]) -> None:
        self.recent.clear()
        for path in paths:
            item = QListWidgetItem(path)
            item.setData(Qt.ItemDataRole.UserRole, path)
            self.recent.addItem(item)
