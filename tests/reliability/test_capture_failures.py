"""Captures that fail in one sentence (issue 39), with real sockets on 127.0.0.1 only: an SSH port
that sends its banner and then nothing ends within 30 s without a traceback; a duration past the
bound and a run name outside the logdir are refused before anything is reached (exit 2)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest

from tpuscope.capture.errors import CaptureError
from tpuscope.capture.session import CaptureSettings, capture
from tpuscope.capture.targets import MAX_DURATION_S, parse_targets
from tpuscope.cli import main

# What the issue asks: an SSH handshake that stalls ends within this long.
STALLED_HANDSHAKE_BOUND_S = 30.0
# Refusals up front touch no network: generous for a loaded machine.
UP_FRONT_BOUND_S = 10.0
BANNER = b"SSH-2.0-OpenSSH_9.6\r\n"


@pytest.fixture
def banner_then_silence():
    """A server on 127.0.0.1 that sends an SSH banner to each connection and then nothing."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connection.sendall(BANNER)
            held.append(connection)  # kept open, silent

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for connection in held:
        with contextlib.suppress(OSError):
            connection.close()
    server.close()


@pytest.fixture
def no_user_ssh(tmp_path, monkeypatch):
    """No ~/.ssh of the user's, no agent: the test sees only what it gives."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    (tmp_path / "home").mkdir()
    config = tmp_path / "ssh_config"
    config.write_text("")
    return ["--ssh-config", str(config), "--known-hosts", str(tmp_path / "known_hosts")]


def _one_sentence(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tpuscope: "), stderr
    return lines[0]


def test_a_banner_then_silence_ends_in_one_sentence(banner_then_silence, no_user_ssh, tmp_path, capsys):
    started = time.monotonic()
    code = main(["capture", "localhost:9012", "--ssh", f"me@127.0.0.1:{banner_then_silence}",
                 "--out", str(tmp_path / "out"), *no_user_ssh])  # fmt: skip
    took = time.monotonic() - started
    assert code == 2
    line = _one_sentence(capsys.readouterr().err)
    assert f"127.0.0.1:{banner_then_silence}" in line and "SSH" in line
    assert took < STALLED_HANDSHAKE_BOUND_S
    assert not (tmp_path / "out" / "plugins" / "profile").exists() or not any(
        (tmp_path / "out" / "plugins" / "profile").iterdir()
    )


@pytest.mark.parametrize(
    "option, value, words",
    [
        ("--duration", "99999999999999999999s", "longer than 24 hours"),
        ("--duration", "100000m", "longer than 24 hours"),
        ("--delay", "99999999999999999999", "longer than 24 hours"),
        ("--timeout", "99999999999999999999s", "longer than 24 hours"),
        ("--run", "../x", "not a plain folder name"),
        ("--run", "a/b", "not a plain folder name"),
        ("--run", "..", "not a plain folder name"),
        ("--run", "/tmp/elsewhere", "not a plain folder name"),
    ],
)
def test_out_of_range_values_are_refused_up_front(tmp_path, capsys, option, value, words):
    started = time.monotonic()
    assert main(["capture", "localhost:1", "--out", str(tmp_path / "out"), option, value]) == 2
    assert time.monotonic() - started < UP_FRONT_BOUND_S
    line = _one_sentence(capsys.readouterr().err)
    assert words in line
    assert not (tmp_path / "x").exists() and not (tmp_path / "out").exists()


def test_the_api_refuses_them_too(tmp_path):
    """The app's capture dialog builds CaptureSettings directly: the same checks run there."""
    base = {"targets": parse_targets("localhost:1"), "logdir": tmp_path}
    for settings in (
        CaptureSettings(**base, duration_s=MAX_DURATION_S * 2),
        CaptureSettings(**base, delay_s=float("inf")),
        CaptureSettings(**base, run_name="../escape"),
    ):
        with pytest.raises(CaptureError):
            capture(settings)
    assert not (tmp_path / "escape").exists()
