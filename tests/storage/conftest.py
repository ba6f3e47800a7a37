"""A real GCS JSON API server on 127.0.0.1 (gcp-storage-emulator), and a proxy in front of it that
injects the failures a real bucket produces (401, 403, a connection cut mid-download).

gcsfs reaches the server through STORAGE_EMULATOR_HOST, the variable gcsfs and Google's client
libraries honour (gcsfs/core.py `_location`).
"""

from __future__ import annotations

import http.client
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import GPU_TRACE, TPU_TRACE
from tests.ui.conftest import settings, window  # noqa: F401 - the main-window fixtures, for the GUI tests

TPU_SAMPLE = TPU_TRACE
GPU_SAMPLE = GPU_TRACE
BUCKET = "profiles"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the GCS emulator exited with code {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the GCS emulator did not start listening")


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[str]:
    """The emulator's base URL; it serves the bucket BUCKET, in memory, for the whole session."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gcp_storage_emulator", "start", "--host", "127.0.0.1", "--port", str(port),
         "--in-memory", "--default-bucket", BUCKET],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def gcs(gcs_server, monkeypatch, tmp_path):
    """A gcsfs filesystem on the emulator, with this process's env pointed at it and a fresh cache."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server)
    monkeypatch.setenv("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    # google-auth looks for credentials on the GCE metadata server (a link-local address) when none
    # are configured: keep every request of the tests on 127.0.0.1.
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(tmp_path / "cache" / "traces"))
    import gcsfs

    gcsfs.GCSFileSystem.clear_instance_cache()
    fs = gcsfs.GCSFileSystem(token="anon")
    return fs


def upload_run(fs, prefix: str, files: dict[str, Path | bytes]) -> str:
    """Puts `files` (name -> local file or bytes) under gs://BUCKET/prefix; returns the folder URL."""
    for name, content in files.items():
        data = content.read_bytes() if isinstance(content, Path) else content
        fs.pipe(f"{BUCKET}/{prefix}/{name}", data)
    fs.invalidate_cache()
    return f"gs://{BUCKET}/{prefix}"


@dataclass
class FaultProxy:
    """An HTTP proxy to the emulator that can answer with an error or cut a download short."""

    upstream_port: int
    port: int = 0
    status: int | None = None  # answer every request with this status and a GCS-style error body
    cut_media_after: int | None = None  # cut object downloads after this many body bytes
    active: int = 0
    max_active: int = 0
    media_requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler_for(proxy: FaultProxy):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def _relay(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if proxy.status is not None:
                error = {"error": {"code": proxy.status, "message": "injected by the test proxy"}}
                payload = json.dumps(error).encode()
                self.send_response(proxy.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            is_media = "alt=media" in self.path
            with proxy.lock:
                proxy.active += 1
                proxy.max_active = max(proxy.max_active, proxy.active)
                proxy.media_requests += int(is_media)
            try:
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                upstream.request(self.command, self.path, body=body or None, headers=headers)
                response = upstream.getresponse()
                data = response.read()
                if is_media:
                    time.sleep(0.05)  # downloads take time, as on a real network, so parallel ones overlap
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if is_media and proxy.cut_media_after is not None:
                    self.wfile.write(data[: proxy.cut_media_after])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                self.wfile.write(data)
                upstream.close()
            finally:
                with proxy.lock:
                    proxy.active -= 1

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _relay  # noqa: N815 - http.server's names

    return Handler


@pytest.fixture
def fault_proxy(gcs_server, gcs, monkeypatch) -> Iterator[FaultProxy]:
    """A FaultProxy in front of the emulator; this process's gcsfs talks to the proxy."""
    proxy = FaultProxy(upstream_port=int(gcs_server.rsplit(":", 1)[1]))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(proxy))
    proxy.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{proxy.port}")
    import gcsfs

    gcsfs.GCSFileSystem.clear_instance_cache()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
        gcsfs.GCSFileSystem.clear_instance_cache()


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env
