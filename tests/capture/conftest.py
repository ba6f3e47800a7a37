"""Real processes for the capture tests: JAX programs with profiler servers, a web server, an sshd.

Every fixture kills what it started in a `finally`, whatever the test did.
"""

from __future__ import annotations

import contextlib
import getpass
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.capture.processes import (
    PROTECTED_KEY_PASSPHRASE,
    SSHD,
    Sshd,
    free_port,
    keygen,
    start_worker,
    stop,
    wait_for_port,
)


@pytest.fixture(scope="package")
def training_worker():
    """One JAX training program shared by the capture tests (package scope: it stops, and stops using
    CPU, once tests/capture is done)."""
    worker = start_worker("train")
    try:
        yield worker
    finally:
        stop(worker.process)


@pytest.fixture(scope="package")
def second_training_worker():
    worker = start_worker("train")
    try:
        yield worker
    finally:
        stop(worker.process)


@pytest.fixture
def idle_worker():
    worker = start_worker("idle")
    try:
        yield worker
    finally:
        stop(worker.process)


@pytest.fixture
def web_server(tmp_path):
    """`python -m http.server`: a web UI on the port instead of a profiler (like TensorBoard on 6006)."""
    port = free_port()
    command = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        yield port
    finally:
        stop(process)


@pytest.fixture
def silent_listener():
    """A port that accepts TCP connections and never says anything: a frozen or wrong server."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@pytest.fixture(scope="package")
def sshd(tmp_path_factory):
    """A real OpenSSH server on a free 127.0.0.1 port with generated host and user keys."""
    if not SSHD.exists() or shutil.which("ssh-keygen") is None:
        pytest.fail(
            "OpenSSH is missing: sh tools/system-packages.sh installs openssh-server for the SSH tests"
        )
    folder = tmp_path_factory.mktemp("sshd")
    home = tmp_path_factory.mktemp("home")
    host_key, user_key, other_key = folder / "host_ed25519", folder / "user_ed25519", folder / "other_ed25519"
    for key in (host_key, user_key, other_key):
        keygen(key)
    protected_key = folder / "protected_ed25519"
    keygen(protected_key, PROTECTED_KEY_PASSPHRASE)
    authorized = folder / "authorized_keys"
    authorized.write_text("".join(k.with_suffix(".pub").read_text() for k in (user_key, protected_key)))
    authorized.chmod(0o600)
    port = free_port()
    config = folder / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nAuthorizedKeysFile {authorized}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
        "PermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\nAllowTcpForwarding yes\n"
        f"PidFile {folder / 'sshd.pid'}\nSubsystem sftp internal-sftp\nLogLevel ERROR\n"
    )
    with contextlib.suppress(OSError):  # the privilege separation folder sshd insists on when root
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    public = host_key.with_suffix(".pub").read_text().split()
    known_hosts = folder / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {public[0]} {public[1]}\n")
    listed = subprocess.run(["ssh-keygen", "-lf", str(host_key.with_suffix(".pub"))], check=True,
                            capture_output=True, text=True).stdout.split()  # fmt: skip
    log = folder / "sshd.log"  # a file, not a pipe: nobody reads sshd's messages while tests run
    command = [str(SSHD), "-D", "-E", str(log), "-f", str(config)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        try:
            wait_for_port(port, process)
        except RuntimeError as error:
            raise RuntimeError(f"sshd did not start: {log.read_text() if log.exists() else ''}") from error
        yield Sshd(port, getpass.getuser(), user_key, other_key, protected_key, known_hosts, listed[1], home)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        stop(process)


@pytest.fixture
def no_user_ssh_state(sshd, monkeypatch):
    """Keeps the real user's keys, agent and ~/.ssh/config out of a test (HOME without .ssh)."""
    monkeypatch.setenv("HOME", str(sshd.home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


@pytest.fixture
def store(tmp_path):
    """The capture dialog's settings, in a folder of the test's own."""
    from PySide6.QtCore import QSettings

    (tmp_path / "config").mkdir()
    settings = QSettings(str(tmp_path / "config" / "tpuscope.ini"), QSettings.IniFormat)
    yield settings
    settings.sync()


@pytest.fixture
def dialog(qtbot, store):
    """A Capture dialog on `store`; a capture still running at the end is cancelled and waited for."""
    from tpuscope.ui.capture_dialog import CaptureDialog

    widget = CaptureDialog(settings=store)
    qtbot.addWidget(widget)
    yield widget
    if widget.is_running():
        widget.worker.cancel()
        widget.worker.wait(30_000)
