"""File > Capture...: record a live trace from running programs, locally, over SSH or from a whole
Cloud TPU slice (its workers listed with the user's gcloud CLI), then open it.

The capture runs in a QThread (the window stays responsive and Cancel works);
when it succeeds the dialog emits `captured(run_folder)` and closes, and the
main window opens that folder. Settings persist in QSettings as named presets
and as "last used": hosts, ports, SSH user, key path, never a passphrase.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import platformdirs
from PySide6.QtCore import QSettings, Qt, QThread, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tpuscope.capture import gcloud
from tpuscope.capture.errors import CaptureCancelled, CaptureError, PassphraseRequired, UnknownHostKey
from tpuscope.capture.grpc_client import TracerLevels
from tpuscope.capture.session import CaptureResult, CaptureSettings, capture
from tpuscope.capture.ssh import SshOptions, trust_host_key
from tpuscope.capture.targets import parse_ssh_host, parse_targets
from tpuscope.model.records import record
from tpuscope.ui.gui_wording import for_dialog

PRESETS_GROUP = "capture/presets"
LAST_GROUP = "capture/last"
# The only keys ever written to QSettings: no passphrase or password has a place here.
SAVED_KEYS = ("targets", "duration_s", "delay_s", "host_level", "device_level", "python_level", "logdir",
              "timeout_s", "use_ssh", "ssh_hosts", "identity_file", "jump",
              "use_tpu", "tpu", "zone", "project", "tpu_workers", "internal_ip", "iap")  # fmt: skip
# The profiler port on each worker when no target is given (as the CLI's --tpu default).
DEFAULT_TPU_TARGET = "localhost:9012"
TPU_COLUMNS = ("Name", "Zone", "Accelerator", "State")
_PROGRESS_STEPS = 1000
# What each tracer level records, after the profiler's own option docs: jax.profiler.ProfileOptions and
# https://www.tensorflow.org/api_docs/python/tf/profiler/experimental/ProfilerOptions
HOST_LEVEL_TIP = (
    "Host (CPU) tracer level: what is recorded on the host.\n"
    "0: nothing from the host.\n"
    "1: critical events only: your own annotations (jax.profiler.TraceAnnotation, TraceMe).\n"
    "2 (default): also the program's execution, like the expensive XLA operations.\n"
    "3: verbose: also the cheap, low-level operations (more events, larger files)."
)
DEVICE_LEVEL_TIP = (
    "Device (TPU/GPU) tracer level.\n"
    "0: the accelerator is not traced.\n"
    "1 (default): the kernels, ops and transfers on each TPU or GPU are recorded."
)
PYTHON_LEVEL_TIP = (
    "Python tracer level.\n"
    "0 (default): Python function calls are not recorded.\n"
    "1: every Python function call is recorded (slows the program down while it records)."
)


def default_logdir() -> Path:
    return platformdirs.user_data_path("tpuscope") / "captures"


def _default_settings(parent) -> QSettings:
    shared = getattr(parent, "settings", None)  # the main window's, so one settings file serves the app
    if isinstance(shared, QSettings):
        return shared
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "tpuscope", "tpuscope")


class TpuListWorker(QThread):
    """Lists the user's TPU VMs with gcloud off the UI thread (gcloud takes seconds to answer)."""

    listed = Signal(object)  # list[TpuNode]
    failed = Signal(str)

    def __init__(self, zone: str, project: str, parent=None):
        super().__init__(parent)
        self.zone, self.project = zone, project

    def run(self) -> None:
        try:
            self.listed.emit(gcloud.list_tpus(self.zone or None, self.project or None))
        except CaptureError as error:
            self.failed.emit(str(error))


@record(frozen=True)
class TpuRequest:
    """A slice to resolve (with gcloud, in the capture's thread) into SSH routes before capturing."""

    tpu: str
    zone: str
    project: str
    workers: str = "all"
    internal_ip: bool = False
    iap: bool = False


class CaptureWorker(QThread):
    """Runs one capture off the UI thread and reports through signals."""

    progressed = Signal(float, str)
    succeeded = Signal(object)  # CaptureResult
    failed = Signal(str)
    cancelled = Signal()
    unknown_host = Signal(object)  # UnknownHostKey
    passphrase_needed = Signal(object)  # PassphraseRequired

    def __init__(self, settings: CaptureSettings, parent=None, tpu: TpuRequest | None = None):
        super().__init__(parent)
        self.settings = settings
        self.tpu = tpu
        self._cancel = False

    def cancel(self) -> None:
        self._cancel = True

    def _progress(self, fraction: float, message: str) -> bool:
        self.progressed.emit(float(fraction), message)
        return not self._cancel

    def run(self) -> None:
        try:
            settings = self.settings
            if self.tpu is not None:
                self.progressed.emit(0.0, f"finding the workers of {self.tpu.tpu} with gcloud")
                asked = self.tpu
                _, routes = gcloud.resolve_slice(asked.tpu, asked.zone, asked.project, asked.workers,
                                                 asked.internal_ip, asked.iap, settings.ssh)  # fmt: skip
                settings = replace(settings, routes=routes, keep_partial=True)
            result = capture(settings, progress=self._progress)
        except CaptureCancelled:
            self.cancelled.emit()
        except UnknownHostKey as error:
            self.unknown_host.emit(error)
        except PassphraseRequired as error:
            self.passphrase_needed.emit(error)
        except CaptureError as error:
            self.failed.emit(str(error))
        except Exception as error:  # noqa: BLE001 - shown as one sentence, never a crashed dialog
            self.failed.emit(f"The capture failed unexpectedly: {type(error).__name__} ({error}).")
        else:
            self.succeeded.emit(result)


class CaptureDialog(QDialog):
    """The capture settings, presets, a progress bar with Cancel; emits `captured(run_folder)` on success."""

    captured = Signal(str)

    def __init__(self, parent=None, settings: QSettings | None = None):
        super().__init__(parent)
        self.setWindowTitle("Capture a live profile")
        self.store = settings if settings is not None else _default_settings(parent)
        self.worker: CaptureWorker | None = None
        self.capture_result: CaptureResult | None = None
        self._passphrase: str | None = None  # in memory for this dialog only
        self._build()
        self._apply(self._read_group(LAST_GROUP))
        self._reload_presets()

    # ----- layout ------------------------------------------------------------------------------

    def _build(self) -> None:
        self.preset_box = QComboBox(self)
        self.preset_box.setMinimumContentsLength(16)
        self.preset_box.activated.connect(self._load_selected_preset)
        save_preset = QPushButton("Save as preset\u2026", self)
        save_preset.clicked.connect(self._ask_preset_name)
        self.delete_preset_button = QPushButton("Delete", self)
        self.delete_preset_button.clicked.connect(self._delete_selected_preset)
        presets = QHBoxLayout()
        presets.addWidget(QLabel("Preset:", self))
        presets.addWidget(self.preset_box, 1)
        presets.addWidget(save_preset)
        presets.addWidget(self.delete_preset_button)

        self.targets = QLineEdit(self)
        self.targets.setPlaceholderText("localhost:9012, 10.0.0.2:9012")
        self.targets.setToolTip(
            "Profiler servers (jax.profiler.start_server(PORT)) as host:port, comma separated"
        )
        self.duration = self._seconds(0.1, 3600, 2.0, "How long to record")
        self.delay = self._seconds(0.0, 600, 0.0, "Wait this long before recording")
        self.timeout = self._seconds(0.0, 3600, 0.0, "How long to wait for the answers after the window "
                                     "(0: automatic, max(60 s, duration))")  # fmt: skip
        self.timeout.setSpecialValueText("automatic")
        self.host_level = self._level(3, 2, HOST_LEVEL_TIP)
        self.device_level = self._level(1, 1, DEVICE_LEVEL_TIP)
        self.python_level = self._level(1, 0, PYTHON_LEVEL_TIP)
        self.logdir = QLineEdit(self)
        browse_logdir = QPushButton("Browse\u2026", self)
        browse_logdir.clicked.connect(self._browse_logdir)

        form = QFormLayout()
        form.addRow("Targets:", self.targets)
        form.addRow("Duration:", self.duration)
        form.addRow("Delay:", self.delay)
        levels = QHBoxLayout()
        level_boxes = (
            ("Host", self.host_level),
            ("Device", self.device_level),
            ("Python", self.python_level),
        )
        for label, box in level_boxes:
            name = QLabel(label, self)
            name.setToolTip(box.toolTip())  # the words explain the level too, not only the spin box
            levels.addWidget(name)
            levels.addWidget(box)
        levels.addStretch(1)
        form.addRow("Tracer levels:", self._wrap(levels))
        form.addRow("Save into (logdir):", self._row(self.logdir, browse_logdir))
        form.addRow("Timeout:", self.timeout)

        self.ssh_group = QGroupBox("Through SSH (remote machine)", self)
        self.ssh_group.setCheckable(True)
        self.ssh_group.setChecked(False)
        self.ssh_hosts = QLineEdit(self)
        self.ssh_hosts.setPlaceholderText("user@tpu-vm or alias from ~/.ssh/config; one, or one per target")
        self.identity = QLineEdit(self)
        self.identity.setPlaceholderText("default: ~/.ssh/config, ssh-agent, ~/.ssh/id_*")
        browse_key = QPushButton("Browse\u2026", self)
        browse_key.clicked.connect(self._browse_key)
        self.jump = QLineEdit(self)
        self.jump.setPlaceholderText("optional jump host, like ssh -J")
        ssh_form = QFormLayout(self.ssh_group)
        ssh_form.addRow("SSH host(s):", self.ssh_hosts)
        ssh_form.addRow("Key file:", self._row(self.identity, browse_key))
        ssh_form.addRow("Jump host:", self.jump)

        self.tpu_group = self._build_tpu_group()

        self.progress = QProgressBar(self)
        self.progress.setRange(0, _PROGRESS_STEPS)
        self.progress.setValue(0)
        self.progress.hide()  # an idle "0%" bar says nothing; it shows once a capture starts
        self.status = QLabel("", self)
        self.status.setWordWrap(True)
        self.buttons = QDialogButtonBox(self)
        self.start_button = self.buttons.addButton("Capture", QDialogButtonBox.ButtonRole.AcceptRole)
        self.cancel_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.start_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel_or_close)

        # The settings scroll, the progress and the buttons stay: on a 720-pixel laptop screen the
        # whole dialog was taller than the screen, its Capture button below the bottom (issue 37).
        settings = QWidget(self)
        settings_column = QVBoxLayout(settings)
        settings_column.setContentsMargins(0, 0, 0, 0)
        settings_column.addLayout(presets)
        settings_column.addLayout(form)
        settings_column.addWidget(self.ssh_group)
        settings_column.addWidget(self.tpu_group)
        settings_column.addStretch(1)
        scroll = QScrollArea(self)
        scroll.setWidget(settings)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        column = QVBoxLayout(self)
        column.addWidget(scroll, 1)
        column.addWidget(self.progress)
        column.addWidget(self.status)
        column.addWidget(self.buttons)
        self.resize(620, self.sizeHint().height())

    def _build_tpu_group(self) -> QGroupBox:
        """A Cloud TPU slice by name: the user's TPU VMs (gcloud), their workers, how to reach them."""
        group = QGroupBox("Cloud TPU slice (every worker, found with your gcloud CLI)", self)
        group.setCheckable(True)
        group.setChecked(False)
        self.zone = QLineEdit(group)
        self.zone.setPlaceholderText("e.g. us-central2-b; empty: every zone")
        self.project = QLineEdit(group)
        self.project.setPlaceholderText("default: gcloud's core/project")
        self.list_tpus_button = QPushButton("List TPU VMs", group)
        self.list_tpus_button.clicked.connect(self.list_tpus)
        self.tpu_tree = QTreeWidget(group)
        self.tpu_tree.setColumnCount(len(TPU_COLUMNS))
        self.tpu_tree.setHeaderLabels(list(TPU_COLUMNS))
        self.tpu_tree.setMinimumHeight(120)
        self.tpu_tree.itemSelectionChanged.connect(self._tpu_selected)
        self.tpu_name = QLineEdit(group)
        self.tpu_name.setPlaceholderText("[user@]tpu-name (or pick one above)")
        self.tpu_workers = QLineEdit("all", group)
        self.tpu_workers.setToolTip("all, 0, 1,4,6 or 1-3, as gcloud's --worker")
        self.internal_ip = QCheckBox("Internal IPs", group)
        self.iap = QCheckBox("Tunnel through IAP", group)
        self.tpu_listing: TpuListWorker | None = None
        self.tpu_nodes: list[gcloud.TpuNode] = []
        where = QHBoxLayout()
        for label, widget in (("Zone:", self.zone), ("Project:", self.project)):
            where.addWidget(QLabel(label, group))
            where.addWidget(widget, 1)
        where.addWidget(self.list_tpus_button)
        reach = QHBoxLayout()
        for label, widget in (("TPU:", self.tpu_name), ("Workers:", self.tpu_workers)):
            reach.addWidget(QLabel(label, group))
            reach.addWidget(widget, 1)
        reach.addWidget(self.internal_ip)
        reach.addWidget(self.iap)
        layout = QVBoxLayout(group)
        layout.addLayout(where)
        layout.addWidget(self.tpu_tree)
        layout.addLayout(reach)
        return group

    def list_tpus(self) -> None:
        """Fills the list with the user's TPU VMs in the zone (gcloud, off the UI thread)."""
        if self.tpu_listing is not None and self.tpu_listing.isRunning():
            return
        self.list_tpus_button.setEnabled(False)
        self._show_status("listing TPU VMs with gcloud\u2026")
        listing = TpuListWorker(self.zone.text().strip(), self.project.text().strip(), self)
        listing.listed.connect(self._show_tpus)
        listing.failed.connect(self._tpu_list_failed)
        self.tpu_listing = listing
        listing.start()

    def _listing_done(self) -> None:
        if self.tpu_listing is not None:
            self.tpu_listing.wait()
        self.list_tpus_button.setEnabled(True)

    def _show_tpus(self, nodes: list) -> None:
        self._listing_done()
        self.tpu_nodes = list(nodes)
        self.tpu_tree.clear()
        for node in self.tpu_nodes:
            item = QTreeWidgetItem([node.name, node.zone, node.accelerator_type, node.state])
            for worker in node.workers:
                external = f", external {worker.external_ip}" if worker.external_ip else ""
                addresses = worker.internal_ip + external
                item.addChild(QTreeWidgetItem([f"worker {worker.index}", addresses, "", ""]))
            self.tpu_tree.addTopLevelItem(item)
        self.tpu_tree.expandAll()
        for column in range(len(TPU_COLUMNS)):
            self.tpu_tree.resizeColumnToContents(column)
        zone = self.zone.text().strip() or "every zone"
        self._show_status(f"{len(self.tpu_nodes)} TPU VM(s) in {zone}" if self.tpu_nodes
                          else f"No TPU VMs in {zone}.")  # fmt: skip

    def _tpu_list_failed(self, message: str) -> None:
        self._listing_done()
        self._show_status(message, error=True)

    def _tpu_selected(self) -> None:
        items = self.tpu_tree.selectedItems()
        if not items:
            return
        item = items[0].parent() or items[0]
        self.tpu_name.setText(item.text(0))
        if item.text(1):
            self.zone.setText(item.text(1))
        if items[0].parent() is not None:  # a worker row: capture that worker
            self.tpu_workers.setText(items[0].text(0).removeprefix("worker "))

    def _seconds(self, low: float, high: float, value: float, tip: str) -> QDoubleSpinBox:
        box = QDoubleSpinBox(self)
        box.setRange(low, high)
        box.setDecimals(1)
        box.setSingleStep(0.5)
        box.setSuffix(" s")
        box.setValue(value)
        box.setToolTip(tip)
        return box

    def _level(self, top: int, value: int, tip: str) -> QSpinBox:
        box = QSpinBox(self)
        box.setRange(0, top)
        box.setValue(value)
        box.setToolTip(tip)
        return box

    def _row(self, *widgets) -> QWidget:
        row = QHBoxLayout()
        for widget in widgets:
            row.addWidget(widget, 1 if isinstance(widget, QLineEdit) else 0)
        return self._wrap(row)

    def _wrap(self, layout) -> QWidget:
        holder = QWidget(self)
        layout.setContentsMargins(0, 0, 0, 0)
        holder.setLayout(layout)
        return holder

    def _browse_logdir(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Save captures into", self.logdir.text())
        if folder:
            self.logdir.setText(folder)

    def _browse_key(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "SSH private key", str(Path.home() / ".ssh"))
        if path:
            self.identity.setText(path)

    # ----- values <-> widgets <-> QSettings ------------------------------------------------------

    def values(self) -> dict:
        """The dialog's settings as saved in presets (exactly SAVED_KEYS)."""
        return {
            "targets": self.targets.text().strip(),
            "duration_s": self.duration.value(),
            "delay_s": self.delay.value(),
            "host_level": self.host_level.value(),
            "device_level": self.device_level.value(),
            "python_level": self.python_level.value(),
            "logdir": self.logdir.text().strip(),
            "timeout_s": self.timeout.value(),
            "use_ssh": self.ssh_group.isChecked(),
            "ssh_hosts": self.ssh_hosts.text().strip(),
            "identity_file": self.identity.text().strip(),
            "jump": self.jump.text().strip(),
            "use_tpu": self.tpu_group.isChecked(),
            "tpu": self.tpu_name.text().strip(),
            "zone": self.zone.text().strip(),
            "project": self.project.text().strip(),
            "tpu_workers": self.tpu_workers.text().strip() or "all",
            "internal_ip": self.internal_ip.isChecked(),
            "iap": self.iap.isChecked(),
        }

    def _apply(self, values: dict) -> None:
        def number(key, default, kind=float):
            try:
                return kind(values.get(key, default))
            except (TypeError, ValueError):
                return default

        self.targets.setText(str(values.get("targets", "")))
        self.duration.setValue(number("duration_s", 2.0))
        self.delay.setValue(number("delay_s", 0.0))
        self.timeout.setValue(number("timeout_s", 0.0))
        self.host_level.setValue(number("host_level", 2, int))
        self.device_level.setValue(number("device_level", 1, int))
        self.python_level.setValue(number("python_level", 0, int))
        self.logdir.setText(str(values.get("logdir") or default_logdir()))
        self.ssh_group.setChecked(str(values.get("use_ssh", "false")).lower() == "true")
        self.ssh_hosts.setText(str(values.get("ssh_hosts", "")))
        self.identity.setText(str(values.get("identity_file", "")))
        self.jump.setText(str(values.get("jump", "")))
        self.tpu_group.setChecked(str(values.get("use_tpu", "false")).lower() == "true")
        self.tpu_name.setText(str(values.get("tpu", "")))
        self.zone.setText(str(values.get("zone", "")))
        self.project.setText(str(values.get("project", "")))
        self.tpu_workers.setText(str(values.get("tpu_workers") or "all"))
        self.internal_ip.setChecked(str(values.get("internal_ip", "false")).lower() == "true")
        self.iap.setChecked(str(values.get("iap", "false")).lower() == "true")

    def _read_group(self, group: str) -> dict:
        self.store.beginGroup(group)
        try:
            return {key: self.store.value(key) for key in SAVED_KEYS if self.store.contains(key)}
        finally:
            self.store.endGroup()

    def _write_group(self, group: str, values: dict) -> None:
        self.store.beginGroup(group)
        try:
            self.store.remove("")
            for key in SAVED_KEYS:
                value = values[key]
                self.store.setValue(key, "true" if value is True else "false" if value is False else value)
        finally:
            self.store.endGroup()
        self.store.sync()

    def preset_names(self) -> list[str]:
        self.store.beginGroup(PRESETS_GROUP)
        try:
            return sorted(self.store.childGroups())
        finally:
            self.store.endGroup()

    def save_preset(self, name: str) -> None:
        name = name.strip().replace("/", "_").replace("\\", "_")
        if name:
            self._write_group(f"{PRESETS_GROUP}/{name}", self.values())
            self._reload_presets(select=name)

    def load_preset(self, name: str) -> None:
        self._apply(self._read_group(f"{PRESETS_GROUP}/{name}"))

    def delete_preset(self, name: str) -> None:
        self.store.remove(f"{PRESETS_GROUP}/{name}")
        self.store.sync()
        self._reload_presets()

    def _reload_presets(self, select: str | None = None) -> None:
        self.preset_box.clear()
        self.preset_box.addItems(self.preset_names())
        if select is not None:
            self.preset_box.setCurrentText(select)
        self.delete_preset_button.setEnabled(self.preset_box.count() > 0)

    def _load_selected_preset(self) -> None:
        if self.preset_box.currentText():
            self.load_preset(self.preset_box.currentText())

    def _delete_selected_preset(self) -> None:
        if self.preset_box.currentText():
            self.delete_preset(self.preset_box.currentText())

    def _ask_preset_name(self) -> None:
        current = self.preset_box.currentText()
        name, ok = QInputDialog.getText(self, "Save preset", "Preset name:", text=current)
        if ok:
            self.save_preset(name)

    # ----- running -----------------------------------------------------------------------------

    def capture_settings(self) -> CaptureSettings:
        """The settings for the capture library; raises CaptureError on a bad entry."""
        values = self.values()
        use_ssh = values["use_ssh"]
        typed_hosts = values["ssh_hosts"].split(",") if use_ssh else []
        ssh_hosts = [parse_ssh_host(h) for h in typed_hosts if h.strip()]
        if use_ssh and not ssh_hosts:
            raise CaptureError("Name the SSH host (as [user@]host[:port]) or untick 'Through SSH'.")
        if values["use_tpu"] and use_ssh:
            raise CaptureError("A Cloud TPU slice finds its workers' SSH hosts itself: untick 'Through SSH'.")
        if values["use_tpu"] and not values["tpu"]:
            raise CaptureError("Name the TPU VM (or pick one from the list) or untick 'Cloud TPU slice'.")
        typed_targets = values["targets"] or (DEFAULT_TPU_TARGET if values["use_tpu"] else "")
        return CaptureSettings(
            targets=parse_targets(typed_targets),
            logdir=Path(values["logdir"] or default_logdir()).expanduser(),
            duration_s=values["duration_s"],
            delay_s=values["delay_s"],
            levels=TracerLevels(values["host_level"], values["device_level"], values["python_level"]),
            ssh_hosts=ssh_hosts,
            ssh=SshOptions(
                identity_file=(values["identity_file"] or None) if use_ssh else None,
                jump=(values["jump"] or None) if use_ssh else None,
                passphrase=self._passphrase,
            ),  # fmt: skip
            timeout_s=values["timeout_s"] or None,
        )

    def tpu_request(self) -> TpuRequest | None:
        values = self.values()
        if not values["use_tpu"]:
            return None
        return TpuRequest(values["tpu"], values["zone"], values["project"], values["tpu_workers"],
                          values["internal_ip"], values["iap"])  # fmt: skip

    def is_running(self) -> bool:
        return self._running_worker() is not None

    def _running_worker(self) -> CaptureWorker | None:
        return self.worker if self.worker is not None and self.worker.isRunning() else None

    def start(self) -> None:
        if self.is_running():
            return
        try:
            settings = self.capture_settings()
        except CaptureError as error:
            self._show_status(str(error), error=True)
            return
        self._write_group(LAST_GROUP, self.values())
        self._run(settings)

    def _run(self, settings: CaptureSettings) -> None:
        self.capture_result = None
        self.progress.setValue(0)
        self.progress.show()
        self._show_status("connecting\u2026")
        self._set_editing(False)
        worker = CaptureWorker(settings, self, tpu=self.tpu_request())
        worker.progressed.connect(self._on_progress)
        worker.succeeded.connect(self._on_succeeded)
        worker.failed.connect(lambda message: self._on_stopped(message, error=True))
        worker.cancelled.connect(lambda: self._on_stopped("Cancelled; nothing was saved."))
        worker.unknown_host.connect(self._on_unknown_host)
        worker.passphrase_needed.connect(self._on_passphrase_needed)
        self.worker = worker
        worker.start()

    def cancel_or_close(self) -> None:
        worker = self._running_worker()
        if worker is not None:
            worker.cancel()
            self._show_status("cancelling\u2026")
        else:
            self.reject()

    def _on_progress(self, fraction: float, message: str) -> None:
        self.progress.setValue(round(fraction * _PROGRESS_STEPS))
        self._show_status(message)

    def _finish_worker(self) -> None:
        """The worker's last act is the signal being handled: let its thread end before going on."""
        if self.worker is not None:
            self.worker.wait()

    def _on_succeeded(self, result: CaptureResult) -> None:
        self._finish_worker()
        self.capture_result = result
        self._set_editing(True)
        self.progress.setValue(_PROGRESS_STEPS)
        self._show_status(f"Saved {len(result.files)} host(s) into {result.run_folder}")
        if result.missing:  # the others are kept and opened; say which workers are not there
            self.show_missing(result.missing)
        self.captured.emit(str(result.run_folder))
        self.accept()

    def _on_stopped(self, message: str, error: bool = False) -> None:
        self._finish_worker()
        self._set_editing(True)
        self.progress.setValue(0)
        self.progress.hide()
        self._show_status(message, error=error)

    def _on_unknown_host(self, error: UnknownHostKey) -> None:
        self._on_stopped(str(error), error=True)
        if self.ask_trust(error):
            trust_host_key(error.hostname, error.key, error.known_hosts_file)
            self.start()

    def _on_passphrase_needed(self, error: PassphraseRequired) -> None:
        self._on_stopped(str(error), error=True)
        passphrase = self.ask_passphrase(error)
        if passphrase is not None:
            self._passphrase = passphrase
            settings = self.capture_settings()
            self._run(replace(settings, ssh=replace(settings.ssh, passphrase=passphrase)))

    def show_missing(self, missing: list[str]) -> None:
        """Names the workers left out of a slice capture (the others are saved and opened)."""
        QMessageBox.warning(self, "Some workers were not captured", for_dialog("\n\n".join(missing)))

    def ask_trust(self, error: UnknownHostKey) -> bool:
        """Asks whether to add an unknown SSH host key to known_hosts, showing its fingerprint."""
        answer = QMessageBox.question(
            self, "Unknown SSH host",
            f"{for_dialog(str(error))}\n\nTrust {error.hostname} with key {error.fingerprint} and add it to "
            f"{error.known_hosts_file}?",
        )  # fmt: skip
        return answer == QMessageBox.StandardButton.Yes

    def ask_passphrase(self, error: PassphraseRequired) -> str | None:
        """Asks for the key's passphrase; it is kept in memory for this dialog only, never saved."""
        text, ok = QInputDialog.getText(self, "SSH key passphrase", f"Passphrase for {error.key_file}:",
                                        QLineEdit.EchoMode.Password)  # fmt: skip
        return text if ok else None

    def _set_editing(self, enabled: bool) -> None:
        editors = (
            self.targets,
            self.duration,
            self.delay,
            self.timeout,
            self.host_level,
            self.device_level,
            self.python_level,
            self.logdir,
            self.ssh_group,
            self.tpu_group,
            self.preset_box,
            self.start_button,
        )
        for widget in editors:
            widget.setEnabled(enabled)
        self.cancel_button.setText("Close" if enabled else "Cancel")

    def _show_status(self, message: str, error: bool = False) -> None:
        self.status.setText(for_dialog(message))
        self.status.setStyleSheet("color: #c0392b;" if error else "")

    def done(self, code: int) -> None:  # closing the dialog (Esc, window close) stops a running capture
        worker = self._running_worker()
        if worker is not None:
            worker.cancel()
            worker.wait()
        if self.tpu_listing is not None:
            self.tpu_listing.wait()
        super().done(code)
