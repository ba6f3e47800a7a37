"""Starting and stopping the real processes the capture tests talk to: JAX workloads and helpers."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

WORKLOAD = Path(__file__).with_name("workload.py")
WORKER_START_TIMEOUT_S = 120  # JAX import + compile on a loaded 2-core CI machine
SSHD = Path("/usr/sbin/sshd")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen | None = None, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the process exited with {process.returncode} before listening on {port}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listened on port {port} within {timeout_s} s")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=30)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


@dataclass
class Worker:
    process: subprocess.Popen
    port: int

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"


def start_worker(mode: str, *extra: str) -> Worker:
    """Starts workload.py and waits for READY; the caller must stop(worker.process)."""
    port = free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
    process = subprocess.Popen([sys.executable, str(WORKLOAD), str(port), mode, *extra], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    try:
        ready, _, _ = select.select([process.stdout], [], [], WORKER_START_TIMEOUT_S)
        line = process.stdout.readline() if ready else "(nothing within the start timeout)"
        if line.strip() != "READY":
            raise RuntimeError(f"the JAX workload ({mode}) did not start: {line!r}, exit {process.poll()}")
        wait_for_port(port, process)
    except BaseException:
        stop(process)
        raise
    return Worker(process, port)


@dataclass
class Sshd:
    port: int
    user: str
    user_key: Path  # authorized private key
    other_key: Path  # a valid key that the server does not authorize
    protected_key: Path  # authorized, encrypted with PROTECTED_KEY_PASSPHRASE
    known_hosts: Path  # holds the server's host key under [127.0.0.1]:port
    host_fingerprint: str  # as `ssh-keygen -lf` prints it
    home: Path  # a HOME with no keys or config, so nothing of the real user's leaks in


PROTECTED_KEY_PASSPHRASE = "correct horse battery staple"


def keygen(path: Path, passphrase: str = "") -> None:
    command = ["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "tpuscope-test", "-f", str(path)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def wait_until_profiler_free(target: str, scratch: Path, timeout_s: float = 20) -> float:
    """After a cancelled capture the program ends its profiling session within moments; other tests
    share the program, so wait for that. Returns the seconds it took."""
    from tpuscope.capture.errors import CaptureError
    from tpuscope.capture.session import CaptureSettings, capture
    from tpuscope.capture.targets import parse_targets

    started = time.monotonic()
    while True:
        try:
            capture(CaptureSettings(parse_targets(target), scratch, duration_s=0.05))
            return time.monotonic() - started
        except CaptureError as error:
            if "Another profiling session" not in str(error) or time.monotonic() - started > timeout_s:
                raise
            time.sleep(0.1)
