"""Cloud storage with no way to reach the server: one sentence within seconds, not after gcsfs's
retries (about 36 s of back-off for one listing before the endpoint probe)."""

from __future__ import annotations

import time

import pytest

from tests.storage.conftest import free_port
from tpuscope.cli import main
from tpuscope.store import remote

# Far below gcsfs's back-off of one request (1 + 2 + 4 + 8 + 16 s), far above a probe's real cost.
PROMPT_S = 10.0


@pytest.fixture
def unreachable(monkeypatch, tmp_path):
    """gcsfs pointed at a server address of the test's choosing, with nothing reached beyond it."""

    def point_at(address: str) -> None:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", address)
        monkeypatch.setenv("NO_GCE_CHECK", "True")
        monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
        monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")

    return point_at


def _open(capsys, url: str) -> tuple[int, list[str], float]:
    began = time.monotonic()
    code = main(["info", url, "--no-cache"])
    elapsed = time.monotonic() - began
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()], elapsed


def test_a_refused_connection_is_one_prompt_sentence(unreachable, capsys):
    port = free_port()  # bound and closed again: nothing listens there
    unreachable(f"http://127.0.0.1:{port}")
    code, lines, elapsed = _open(capsys, "gs://profiles/logdir")
    assert code == 2
    cause = f"the storage server 127.0.0.1:{port} refused the connection"
    assert lines == [f"tpuscope: Cannot open gs://profiles/logdir: {cause}."]
    assert elapsed < PROMPT_S


def test_a_name_that_does_not_resolve_is_one_prompt_sentence(unreachable, capsys):
    unreachable("http://no-such-storage-host.invalid:4443")  # .invalid never resolves (RFC 2606)
    code, lines, elapsed = _open(capsys, "gs://profiles/logdir")
    assert code == 2 and len(lines) == 1
    assert lines[0].startswith(
        "tpuscope: Cannot open gs://profiles/logdir: the storage server's name no-such-storage-host.invalid "
        "does not resolve"
    )
    assert elapsed < PROMPT_S


def test_the_retry_policy_gives_up_on_an_unreachable_server_within_the_bound():
    """The policy: no retry of a server that cannot be reached, one probe of at most two timeouts
    (resolve, connect), well inside the bound the user waits."""
    assert 2 * remote.CONNECT_TIMEOUT_S < PROMPT_S
    assert remote.storage_endpoint("gs://bucket/logdir") is not None
    assert remote.storage_endpoint("s3://bucket/logdir") is None  # other schemes: their own client's policy
