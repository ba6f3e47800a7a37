"""`tpuscope capture --tpu NAME`: a slice's workers from gcloud's JSON, reached over real SSH.

gcloud cannot reach Google Cloud here, so a stand-in gcloud on PATH answers in the documented
schema (tests/capture/gcloud_standin.py); everything after it is real: the OpenSSH server on
127.0.0.1, the JAX programs' profiler servers, the saved run opened as a pod.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.capture.processes import start_worker, stop
from tests.capture.test_capture_cli import ROOT, tpuscope
from tests.capture.tpu_slice import NODE_ID, PROJECT, ZONE, guest_attributes, make_slice, node_json
from tpuscope.app.opener import open_trace
from tpuscope.capture.errors import CaptureError
from tpuscope.capture.gcloud import host_key_alias, parse_node, parse_workers, worker_label
from tpuscope.capture.session import CaptureSettings, capture
from tpuscope.capture.ssh import SshOptions
from tpuscope.capture.targets import parse_ssh_host, parse_targets
from tpuscope.readers import host_from_filename


@pytest.fixture
def tpu(sshd, tmp_path):
    return make_slice(sshd, tmp_path)


def capture_tpu(tpu, *args: str, targets: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return tpuscope("capture", *targets, "--tpu", "my-tpu", "--zone", ZONE, "--project", PROJECT,
                    "--duration", "1s", *args, env=tpu.env, timeout=240)  # fmt: skip


def test_every_worker_is_captured_in_one_window_and_opens_as_a_pod(
    tpu, sshd, training_worker, second_training_worker, tmp_path
):
    tpu.set(nodes=[node_json("my-tpu", [("10.130.0.2", "127.0.0.1"), ("10.130.0.3", "127.0.0.1")])],
            guest_attributes={"my-tpu": guest_attributes(sshd, 2)})  # fmt: skip
    # the same port on each VM in real use; here two programs on one machine, one per worker
    targets = f"localhost:{training_worker.port},localhost:{second_training_worker.port}"
    done = capture_tpu(tpu, "--out", str(tmp_path / "out"), targets=(targets,))
    assert done.returncode == 0, done.stderr
    run_folder = Path(done.stdout.strip())
    files = sorted(run_folder.iterdir())
    assert [host_from_filename(f) for f in files] == ["my-tpu-worker0", "my-tpu-worker1"]
    trace = open_trace(run_folder, use_cache=False)
    assert sorted(trace.hosts) == ["my-tpu-worker0", "my-tpu-worker1"]
    # one window for all: the workers' traces start together, not one 1 s capture after the other
    starts = [open_trace(f, use_cache=False).origin_ns for f in files]
    assert abs(starts[0] - starts[1]) < 0.5e9
    # the pod summary printed after the folder: both workers with their steps
    assert "TPU my-tpu (v4-16, us-central2-b): 2 worker(s) asked" in done.stderr
    for worker in ("my-tpu-worker0", "my-tpu-worker1"):
        assert any(line.split()[0] == worker and "steps" in line for line in done.stderr.splitlines()[1:])
    # the workers were asked as gcloud does: the node from describe, the zone and project passed on
    describe = next(c for c in tpu.calls_made() if "describe" in c)
    assert describe[:5] == ["compute", "tpus", "tpu-vm", "describe", "my-tpu"]
    assert f"--zone={ZONE}" in describe and f"--project={PROJECT}" in describe
    # each worker's host key matched the one the Cloud API reports and is recorded under gcloud's alias
    suffix = sshd.known_hosts.read_text().split()[2][-6:]
    recorded = sorted(line.split()[0] for line in tpu.known_hosts.read_text().splitlines())
    assert recorded == [f"tpu.{NODE_ID}-0-{suffix}", f"tpu.{NODE_ID}-1-{suffix}"]


def test_pod_summary_as_json(tpu, sshd, training_worker, tmp_path):
    tpu.set(nodes=[node_json("my-tpu", [("10.130.0.2", "127.0.0.1")], accelerator="v5litepod-4")],
            guest_attributes={"my-tpu": guest_attributes(sshd, 1)})  # fmt: skip
    done = capture_tpu(tpu, "--out", str(tmp_path), "--json", targets=(f"localhost:{training_worker.port}",))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["hosts"] == ["my-tpu-worker0"] and answer["missing"] == []
    rows = answer["pod"]["per_host"]  # one host, named as its XSpace names it (this machine's name)
    assert len(rows) == 1 and rows[0]["steps"] > 0 and rows[0]["step_time_us"] > 0


def test_an_unreachable_worker_is_named_and_the_others_are_kept(tpu, sshd, training_worker, tmp_path):
    # worker 1's address has no SSH server (nothing listens on 127.0.0.2)
    tpu.set(nodes=[node_json("my-tpu", [("10.130.0.2", "127.0.0.1"), ("10.130.0.3", "127.0.0.2")])],
            guest_attributes={"my-tpu": guest_attributes(sshd, 2)})  # fmt: skip
    done = capture_tpu(tpu, "--out", str(tmp_path / "out"), targets=(f"localhost:{training_worker.port}",))
    assert done.returncode == 2, done.stderr
    run_folder = Path(done.stdout.strip())
    assert [f.name for f in run_folder.iterdir()] == ["my-tpu-worker0.xplane.pb"]
    errors = [line for line in done.stderr.splitlines() if line.startswith("tpuscope: ")]
    assert errors == [
        f"tpuscope: Worker 1 of my-tpu (127.0.0.2) was not captured: Cannot reach the SSH host "
        f"127.0.0.2:{sshd.port}: connection refused (no SSH server listens on that port)."
    ]
    assert "Traceback" not in done.stderr


def test_a_worker_whose_program_dies_mid_capture_is_named_and_the_others_kept(
    tpu, sshd, training_worker, tmp_path
):
    tpu.set(nodes=[node_json("my-tpu", [("10.130.0.2", "127.0.0.1"), ("10.130.0.3", "127.0.0.1")])],
            guest_attributes={"my-tpu": guest_attributes(sshd, 2)})  # fmt: skip
    dying = start_worker("train")  # worker 1's program, killed once the profiling has started
    targets = f"localhost:{training_worker.port},localhost:{dying.port}"
    command = [sys.executable, "-m", "tpuscope", "capture", targets, "--tpu", "my-tpu", "--zone", ZONE,
               "--duration", "5s", "--out", str(tmp_path)]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, env=tpu.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)  # fmt: skip
    try:
        profile_root = tmp_path / "plugins" / "profile"
        deadline = time.monotonic() + 120
        while not (profile_root.exists() and any(profile_root.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.05)  # the staging folder appears once every worker is connected
        time.sleep(1.0)
        stop(dying.process)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        stop(dying.process)
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 2, stderr
    assert [f.name for f in Path(stdout.strip()).iterdir()] == ["my-tpu-worker0.xplane.pb"]
    errors = [line for line in stderr.splitlines() if line.startswith("tpuscope: ")]
    assert len(errors) == 1, stderr
    assert errors[0].startswith("tpuscope: Worker 1 of my-tpu (127.0.0.1) was not captured: ")
    assert "during the capture: it probably exited" in errors[0]


def test_internal_ip_and_worker_choice(tpu, sshd, training_worker, tmp_path):
    # reachable only on the internal addresses; worker 1 is not asked for
    tpu.set(nodes=[node_json("my-tpu", [("127.0.0.1", "127.0.0.2"), ("127.0.0.2", "127.0.0.2")])],
            guest_attributes={"my-tpu": guest_attributes(sshd, 2)})  # fmt: skip
    target = (f"localhost:{training_worker.port}",)
    external = capture_tpu(tpu, "--worker", "0", "--out", str(tmp_path / "a"), targets=target)
    assert (
        external.returncode == 2
        and "No worker could be reached: Worker 0 of my-tpu (127.0.0.2)" in external.stderr
    )
    internal = capture_tpu(
        tpu, "--worker", "0", "--internal-ip", "--out", str(tmp_path / "b"), targets=target
    )
    assert internal.returncode == 0, internal.stderr
    assert [f.name for f in Path(internal.stdout.strip()).iterdir()] == ["my-tpu-worker0.xplane.pb"]


def test_tunnel_through_iap_runs_ssh_through_gclouds_tunnel(tpu, sshd, training_worker, tmp_path):
    # the workers' addresses are unroutable: only the tunnel (the stand-in's relay to sshd) reaches them
    tpu.set(nodes=[node_json("my-tpu", [("10.255.0.2", None)])],
            guest_attributes={"my-tpu": guest_attributes(sshd, 1)},
            tunnels={"t1v-n-abc-w-0": sshd.port})  # fmt: skip
    done = capture_tpu(
        tpu, "--tunnel-through-iap", "--out", str(tmp_path), targets=(f"localhost:{training_worker.port}",)
    )
    assert done.returncode == 0, done.stderr
    tunnel = next(c for c in tpu.calls_made() if c[:2] == ["compute", "start-iap-tunnel"])
    assert tunnel[2:5] == ["t1v-n-abc-w-0", "22", "--listen-on-stdin"]
    assert f"--project={PROJECT}" in tunnel and f"--zone={ZONE}" in tunnel
    assert [f.name for f in Path(done.stdout.strip()).iterdir()] == ["my-tpu-worker0.xplane.pb"]
    # a worker the tunnel cannot reach: gcloud's own reason, in one sentence
    tpu.set(tunnels={})
    failed = capture_tpu(
        tpu, "--tunnel-through-iap", "--out", str(tmp_path), targets=(f"localhost:{training_worker.port}",)
    )
    assert failed.returncode == 2 and "exited with code 1 before SSH could start" in failed.stderr, (
        failed.stderr
    )
    assert "failed to connect to backend" in failed.stderr and failed.stderr.count("\n") == 1


def test_an_unknown_host_key_is_refused_until_known_under_gclouds_alias(tpu, sshd, training_worker, tmp_path):
    # no guest attributes (the alpha component missing): nothing vouches for the key yet
    tpu.set(nodes=[node_json("my-tpu", [("10.130.0.2", "127.0.0.1")])])
    target = (f"localhost:{training_worker.port}",)
    refused = capture_tpu(tpu, "--out", str(tmp_path), targets=target)
    assert refused.returncode == 2
    assert (
        f"is not in {tpu.known_hosts} as tpu.{NODE_ID}-0 (its ssh-ed25519 key fingerprint is "
        in refused.stderr
    )
    assert sshd.host_fingerprint in refused.stderr
    # what `gcloud compute tpus tpu-vm ssh my-tpu` leaves behind after a first connection
    key_type, key = sshd.known_hosts.read_text().split()[1:3]
    tpu.known_hosts.write_text(f"tpu.{NODE_ID}-0 {key_type} {key}\n")
    assert capture_tpu(tpu, "--out", str(tmp_path), targets=target).returncode == 0
    # a different key under the alias: refused as OpenSSH would
    other_type, other = sshd.other_key.with_suffix(".pub").read_text().split()[:2]
    tpu.known_hosts.write_text(f"tpu.{NODE_ID}-0 {other_type} {other}\n")
    changed = capture_tpu(tpu, "--out", str(tmp_path), targets=target)
    assert changed.returncode == 2 and "presented a different host key" in changed.stderr


def test_a_proxycommand_in_the_ssh_config_is_honoured(tpu, sshd, training_worker, tmp_path, monkeypatch):
    # an address nothing can route to, reached only through the config's ProxyCommand (here the tunnel)
    for key in ("HOME", "PATH", "TPUSCOPE_GCLOUD_STATE"):
        monkeypatch.setenv(key, tpu.env[key])
    tpu.set(tunnels={"vm-behind-iap": sshd.port})
    key_type, key = sshd.known_hosts.read_text().split()[1:3]
    known = tmp_path / "known_hosts"
    known.write_text(f"10.255.0.9 {key_type} {key}\n")
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host behind-iap\n  HostName 10.255.0.9\n  User {sshd.user}\n  IdentityFile {sshd.user_key}\n"
        f"  UserKnownHostsFile {known}\n  ProxyCommand gcloud compute start-iap-tunnel vm-behind-iap %p "
        "--listen-on-stdin\n"
    )
    settings = CaptureSettings(parse_targets(f"localhost:{training_worker.port}"), tmp_path / "out",
                               duration_s=0.5, ssh_hosts=[parse_ssh_host("behind-iap")],
                               ssh=SshOptions(config_file=str(config)))  # fmt: skip
    result = capture(settings)
    assert [f.name for f in result.files] == [f"behind-iap_{training_worker.port}.xplane.pb"]
    tunnel = next(c for c in tpu.calls_made() if c[:2] == ["compute", "start-iap-tunnel"])
    assert tunnel[2:4] == ["vm-behind-iap", "22"]


@pytest.mark.parametrize("case, expected", [
    ("missing", "tpuscope: The gcloud CLI is not installed or not on PATH"),
    ("logged_out", "tpuscope: gcloud is not logged in (You do not currently have an active account "
                   "selected): run `gcloud auth login`, then try again."),
    ("not_found", f"tpuscope: The TPU my-tpu was not found in {ZONE} (project {PROJECT}): check the name"),
    ("stopped", f"tpuscope: The TPU my-tpu in {ZONE} is STOPPED, not READY"),
    ("bad_worker", "tpuscope: Worker 5 does not exist: this TPU has 2 worker(s), numbered 0 to 1."),
])  # fmt: skip
def test_failures_are_one_sentence_and_exit_code_2(tpu, tmp_path, case, expected):
    nodes = {"not_found": [], "stopped": [node_json("my-tpu", [("10.0.0.2", None)], state="STOPPED")]}
    tpu.set(nodes=nodes.get(case, [node_json("my-tpu", [("10.0.0.2", None), ("10.0.0.3", None)])]),
            logged_out=case == "logged_out")  # fmt: skip
    if case == "missing":
        tpu.env["PATH"] = str(tmp_path / "no-such-bin")
    done = capture_tpu(tpu, *(["--worker", "5"] if case == "bad_worker" else []), "--out", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.startswith(expected), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_the_real_gcloud_when_logged_out_gives_the_same_sentence(tmp_path):
    real = shutil.which("gcloud")
    if real is None:
        pytest.skip("no gcloud CLI installed on this machine (the stand-in test covers the sentence)")
    env = dict(os.environ, CLOUDSDK_CONFIG=str(tmp_path / "gcloud-config"))  # a gcloud with no account
    done = tpuscope("capture", "--tpu", "my-tpu", "--zone", ZONE, "--project", PROJECT, env=env, timeout=180)
    assert done.returncode == 2
    assert done.stderr.startswith("tpuscope: gcloud is not logged in (You do not currently have an active "
                                  "account selected): run `gcloud auth login`"), done.stderr  # fmt: skip


def test_workers_endpoints_and_aliases_as_gcloud_reads_them():
    assert parse_workers("all", 4) == [0, 1, 2, 3]
    assert parse_workers("1-3", 8) == [1, 2, 3] and parse_workers("1,4,6", 8) == [1, 4, 6]
    for bad in ("x", "3-1", "1-"):
        with pytest.raises(CaptureError, match="is not valid"):
            parse_workers(bad, 8)
    # multi-network TPUs list an endpoint per network: worker i is every len(networkConfigs)-th one
    raw = node_json(
        "big", [("10.0.0.1", "34.1.1.1"), ("10.1.0.1", None), ("10.0.0.2", None), ("10.1.0.2", None)]
    )
    raw["networkConfigs"] = [{}, {}]
    node = parse_node(raw)
    assert [w.internal_ip for w in node.workers] == ["10.0.0.1", "10.0.0.2"]
    assert (
        node.workers[0].address(internal=False) == "34.1.1.1" and node.workers[1].address(False) == "10.0.0.2"
    )
    assert (node.name, node.zone, node.project, node.accelerator_type) == ("big", ZONE, PROJECT, "v4-16")
    assert host_key_alias(node, node.workers[1]) == f"tpu.{NODE_ID}-1"
    wide = parse_node(node_json("wide", [(f"10.0.0.{i}", None) for i in range(12)]))
    assert worker_label(wide, wide.workers[3]) == "wide-worker03"
