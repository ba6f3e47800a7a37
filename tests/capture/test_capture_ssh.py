"""Capturing through a real OpenSSH server (sshd on 127.0.0.1) with generated host and user keys."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.capture.processes import PROTECTED_KEY_PASSPHRASE, free_port, wait_until_profiler_free
from tpuscope.app.opener import open_trace
from tpuscope.capture.errors import CaptureError, PassphraseRequired, UnknownHostKey
from tpuscope.capture.session import CaptureSettings, capture
from tpuscope.capture.ssh import SshOptions, trust_host_key
from tpuscope.capture.targets import parse_ssh_host, parse_targets

pytestmark = [
    pytest.mark.usefixtures("no_user_ssh_state"),
    # a forwarding thread that dies with an exception is a bug even when the capture succeeded
    pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning"),
]


def ssh_settings(sshd, target: str, logdir, **ssh_overrides) -> CaptureSettings:
    options = {"identity_file": str(sshd.user_key), "known_hosts": str(sshd.known_hosts), **ssh_overrides}
    return CaptureSettings(
        targets=parse_targets(target), logdir=logdir, duration_s=1.0,
        ssh_hosts=[parse_ssh_host(f"{sshd.user}@127.0.0.1:{sshd.port}")], ssh=SshOptions(**options),
    )  # fmt: skip


def two_machine_settings(sshd, targets: str, tmp_path) -> CaptureSettings:
    """Two SSH hosts that are one sshd, reached as 127.0.0.1 and as localhost (both names trusted)."""
    known = tmp_path / "known_hosts"
    entry = sshd.known_hosts.read_text().split(" ", 1)[1]
    known.write_text(f"[127.0.0.1]:{sshd.port} {entry}[localhost]:{sshd.port} {entry}")
    settings = ssh_settings(sshd, targets, tmp_path / "out", known_hosts=str(known))
    hosts = ("127.0.0.1", "localhost")
    settings.ssh_hosts = [parse_ssh_host(f"{sshd.user}@{host}:{sshd.port}") for host in hosts]
    return settings


def has_training_steps(run_folder) -> bool:
    trace = open_trace(run_folder, use_cache=False)
    aggregate = trace.aggregate_by_name(list(trace.tracks()))
    return any("train_step" in trace.strings[i] for i in aggregate.name_ids)


def test_capture_through_ssh_port_forwarding(sshd, training_worker, tmp_path):
    # "localhost:PORT" is resolved on the SSH host, as for a program on a remote TPU VM
    result = capture(ssh_settings(sshd, f"localhost:{training_worker.port}", tmp_path))
    assert [f.name for f in result.files] == [f"127.0.0.1_{training_worker.port}.xplane.pb"]
    assert has_training_steps(result.run_folder)


def test_capture_through_a_jump_host(sshd, training_worker, tmp_path):
    jump = f"{sshd.user}@127.0.0.1:{sshd.port}"  # the same sshd serves as jump host and as target
    result = capture(ssh_settings(sshd, f"localhost:{training_worker.port}", tmp_path, jump=jump))
    assert has_training_steps(result.run_folder)


def test_server_saved_file_is_fetched_over_sftp(sshd, training_worker, tmp_path):
    settings = ssh_settings(sshd, f"localhost:{training_worker.port}", tmp_path)
    settings.inline = False
    settings.run_name = f"sftp_{tmp_path.name}"
    result = capture(settings)
    assert has_training_steps(result.run_folder)
    # the copy the server wrote on the remote machine is cleaned up there
    assert not Path(f"/tmp/tpuscope-capture-{settings.run_name}").exists()


def test_one_ssh_host_per_target(sshd, training_worker, second_training_worker, tmp_path):
    # two "machines": the same sshd reached as 127.0.0.1 and as localhost, one SSH connection each
    targets = f"localhost:{training_worker.port},localhost:{second_training_worker.port}"
    settings = two_machine_settings(sshd, targets, tmp_path)
    result = capture(settings)
    expected = {f"127.0.0.1_{training_worker.port}", f"localhost_{second_training_worker.port}"}
    assert {f.name.removesuffix(".xplane.pb") for f in result.files} == expected
    assert set(open_trace(result.run_folder, use_cache=False).hosts) == expected


def test_one_target_on_several_ssh_hosts(sshd, training_worker, tmp_path):
    # `localhost:PORT` on every VM of a pod slice; here two names for one machine, hence one program twice
    settings = two_machine_settings(sshd, f"localhost:{training_worker.port}", tmp_path)
    with pytest.raises(CaptureError, match="Another profiling session is already active"):
        capture(settings)  # one program cannot be profiled twice at once: proves both requests reached it
    wait_until_profiler_free(training_worker.target, tmp_path / "next")


def test_passphrase_protected_key(sshd, training_worker, tmp_path):
    target = f"localhost:{training_worker.port}"
    with pytest.raises(PassphraseRequired) as caught:
        capture(ssh_settings(sshd, target, tmp_path, identity_file=str(sshd.protected_key)))
    assert caught.value.key_file == str(sshd.protected_key)
    assert "is protected by a passphrase" in str(caught.value)
    with pytest.raises(PassphraseRequired, match="The passphrase for the SSH key .* is wrong"):
        capture(ssh_settings(sshd, target, tmp_path, identity_file=str(sshd.protected_key),
                             passphrase="wrong passphrase"))  # fmt: skip
    result = capture(ssh_settings(sshd, target, tmp_path, identity_file=str(sshd.protected_key),
                                  passphrase=PROTECTED_KEY_PASSPHRASE))  # fmt: skip
    assert has_training_steps(result.run_folder)


def test_wrong_key_is_refused(sshd, tmp_path):
    settings = ssh_settings(sshd, "localhost:9012", tmp_path, identity_file=str(sshd.other_key))
    with pytest.raises(CaptureError, match=rf"127\.0\.0\.1:{sshd.port} refused authentication for user "):
        capture(settings)


def test_unknown_host_key_is_refused_with_its_fingerprint(sshd, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(UnknownHostKey) as caught:
        capture(ssh_settings(sshd, "localhost:9012", tmp_path / "out", known_hosts=str(empty)))
    assert caught.value.fingerprint == sshd.host_fingerprint  # what `ssh-keygen -lf` says
    assert sshd.host_fingerprint in str(caught.value)
    assert "is not in" in str(caught.value)
    # the GUI's "trust it" answer writes known_hosts; the next connection then passes that check
    trust_host_key(caught.value.hostname, caught.value.key, str(empty))
    with pytest.raises(CaptureError, match="Nothing is listening on localhost:1 as seen from the SSH host"):
        capture(ssh_settings(sshd, "localhost:1", tmp_path / "out", known_hosts=str(empty)))


def test_changed_host_key_is_refused(sshd, tmp_path):
    forged = tmp_path / "known_hosts"
    other_public = sshd.other_key.with_suffix(".pub").read_text().split()
    forged.write_text(f"[127.0.0.1]:{sshd.port} {other_public[0]} {other_public[1]}\n")
    with pytest.raises(CaptureError, match="presented a different host key"):
        capture(ssh_settings(sshd, "localhost:9012", tmp_path / "out", known_hosts=str(forged)))


def test_nothing_listening_on_the_remote_port(sshd, tmp_path):
    port = free_port()
    with pytest.raises(
        CaptureError, match=f"Nothing is listening on localhost:{port} as seen from the SSH host"
    ):
        capture(ssh_settings(sshd, f"localhost:{port}", tmp_path))


def test_ssh_host_unreachable(sshd, tmp_path):
    settings = ssh_settings(sshd, "localhost:9012", tmp_path)
    settings.ssh_hosts = [parse_ssh_host(f"127.0.0.1:{free_port()}")]
    with pytest.raises(CaptureError, match="Cannot reach the SSH host 127.0.0.1:.*connection refused"):
        capture(settings)


def test_ssh_host_that_never_answers_times_out(sshd, silent_listener, tmp_path):
    settings = ssh_settings(sshd, "localhost:9012", tmp_path, connect_timeout_s=1.0)
    settings.ssh_hosts = [parse_ssh_host(f"127.0.0.1:{silent_listener}")]
    started = time.monotonic()
    with pytest.raises(
        CaptureError, match=f"127.0.0.1:{silent_listener} accepted the connection but did not answer"
    ):
        capture(settings)
    assert time.monotonic() - started < 10


def test_forwarded_port_listens_on_loopback_only(sshd, training_worker):
    from tpuscope.capture.ssh import connect

    connection = connect(
        parse_ssh_host(f"127.0.0.1:{sshd.port}"),
        SshOptions(identity_file=str(sshd.user_key), known_hosts=str(sshd.known_hosts)),
    )
    try:
        forward = connection.forward("localhost", training_worker.port)
        address = forward._server.getsockname()
        assert address[0] == "127.0.0.1"
        with socket.create_connection(("127.0.0.1", forward.local_port), timeout=5):
            pass
    finally:
        connection.close()


def test_key_held_by_ssh_agent(sshd, training_worker, tmp_path, monkeypatch):
    socket_path = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(socket_path)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while not socket_path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        env = dict(os.environ, SSH_AUTH_SOCK=str(socket_path))
        subprocess.run(["ssh-add", "-q", str(sshd.protected_key)], env=env, check=True, timeout=10,
                       input=PROTECTED_KEY_PASSPHRASE, text=True, capture_output=True,
                       preexec_fn=os.setsid)  # fmt: skip
        monkeypatch.setenv("SSH_AUTH_SOCK", str(socket_path))
        # no key file at all: the agent holds the (passphrase-protected) key, as after `ssh-add` on a laptop
        settings = ssh_settings(sshd, f"localhost:{training_worker.port}", tmp_path, identity_file=None)
        assert has_training_steps(capture(settings).run_folder)
        monkeypatch.delenv("SSH_AUTH_SOCK")
        with pytest.raises(CaptureError, match=f"^There is no SSH key to log in to 127.0.0.1:{sshd.port}"):
            capture(settings)  # the same settings without the agent: no key at all
    finally:
        agent.kill()
        agent.wait()
