"""File > Open URL: a logdir in cloud storage (gs://bucket/logdir, any fsspec URL), its runs listed first.

Listing reads only the bucket's object names and sizes, in a worker thread, so a user sees which runs
and hosts there are (and how much would be downloaded) before anything is fetched; Open hands the
chosen run's folder URL to the main window, whose loader fetches and decodes it with progress and
Cancel like any other path.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from tpuscope.errors import ProfileError
from tpuscope.store.remote import RemoteRun, list_remote_runs
from tpuscope.ui.jobs import LatestJobs
from tpuscope.urls import is_url

_COLUMNS = ("Run", "Hosts", "Size")


class OpenUrlDialog(QDialog):
    """Asks for a storage URL, lists its runs, and emits the chosen run's folder URL."""

    chosen = Signal(str)
    listed = Signal(int)  # number of runs shown (tests wait for it)

    def __init__(self, parent=None, url: str = ""):
        super().__init__(parent)
        self.setWindowTitle("Open URL")
        self.resize(720, 380)
        self.runs: list[RemoteRun] = []
        self.jobs = LatestJobs(self)
        self.url_edit = QLineEdit(url)
        self.url_edit.setPlaceholderText("gs://bucket/logdir")
        self.url_edit.returnPressed.connect(self.list_runs)
        self.list_button = QPushButton("List runs")
        self.list_button.clicked.connect(self.list_runs)
        row = QHBoxLayout()
        row.addWidget(QLabel("URL:"))
        row.addWidget(self.url_edit, 1)
        row.addWidget(self.list_button)
        self.table = QTableWidget(0, len(_COLUMNS))
        self.table.setHorizontalHeaderLabels(list(_COLUMNS))
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().setVisible(False)
        self.table.doubleClicked.connect(lambda _index: self.accept())
        self.message = QLabel("Runs are listed from the bucket without downloading them.")
        self.message.setWordWrap(True)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(False)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)

    def list_runs(self) -> None:
        url = self.url_edit.text().strip()
        if not is_url(url):
            self.message.setText("Enter a storage URL such as gs://bucket/logdir.")
            return
        self.message.setText(f"Listing {url}\u2026")
        self.list_button.setEnabled(False)
        self.jobs.start(lambda: list_remote_runs(url), self._show_runs, self._show_error)

    def selected_run(self) -> RemoteRun | None:
        rows = self.table.selectionModel().selectedRows()
        return self.runs[rows[0].row()] if rows else None

    def accept(self) -> None:
        run = self.selected_run()
        if run is None:
            return
        self.chosen.emit(run.folder)
        super().accept()

    def _show_runs(self, runs: object) -> None:
        self.list_button.setEnabled(True)
        newest_first = list(reversed(list(runs)))  # type: ignore[call-overload]
        self.runs = newest_first
        self.table.setRowCount(len(newest_first))
        for row, run in enumerate(newest_first):
            names = run.hosts if len(run.hosts) <= 6 else [*run.hosts[:3], "\u2026", *run.hosts[-2:]]
            hosts = ", ".join(names)
            cells = (run.name, f"{len(run.hosts)}: {hosts}", _size_text(run.size))
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if column == 2:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, column, item)
        self.table.resizeColumnsToContents()
        if newest_first:
            self.table.selectRow(0)
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(bool(newest_first))
        self.message.setText(
            f"{len(newest_first)} run(s); the newest is selected. Open downloads its host files."
        )
        self.listed.emit(len(newest_first))

    def _show_error(self, error: Exception) -> None:
        self.list_button.setEnabled(True)
        self.runs = []
        self.table.setRowCount(0)
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(False)
        text = str(error) if isinstance(error, ProfileError) else f"Listing failed: {type(error).__name__}."
        self.message.setText(text)
        self.listed.emit(0)

    def done(self, result: int) -> None:
        self.jobs.wait()
        super().done(result)


def _size_text(size: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"
