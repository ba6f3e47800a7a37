"""A Cloud TPU slice for the tests: a stand-in gcloud on PATH whose JSON points the workers at the
real sshd on 127.0.0.1, gcloud's key and known hosts files in a fresh HOME."""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

STANDIN = Path(__file__).with_name("gcloud_standin.py")
ZONE = "us-central2-b"
PROJECT = "my-project"
NODE_ID = "4817250349"


def node_json(name: str, addresses: list[tuple[str, str | None]], state: str = "READY",
              accelerator: str = "v4-16", zone: str = ZONE) -> dict:  # fmt: skip
    """A TPU API Node (REST v2) as `gcloud compute tpus tpu-vm describe --format=json` prints it."""
    return {
        "name": f"projects/{PROJECT}/locations/{zone}/nodes/{name}",
        "id": NODE_ID,
        "acceleratorType": accelerator,
        "state": state,
        "health": "HEALTHY",
        "runtimeVersion": "tpu-ubuntu2204-base",
        "apiVersion": "V2",
        "networkConfig": {
            "network": f"projects/{PROJECT}/global/networks/default",
            "enableExternalIps": True,
        },
        "networkEndpoints": [
            {
                "ipAddress": internal,
                "port": 8470,
                **({"accessConfig": {"externalIp": external}} if external else {}),
            }
            for internal, external in addresses
        ],
    }


def guest_attributes(sshd, workers: int, hostnames: bool = True) -> list[dict]:
    """Each worker's host key (the sshd's) and VM name, as get-guest-attributes lists them."""
    key_type, key = sshd.known_hosts.read_text().split()[1:3]
    rows = []
    for worker in range(workers):
        rows.append({"namespace": "hostkeys", "key": key_type, "value": f"{key}\n", "worker_id": worker})
        if hostnames:
            rows.append(
                {"namespace": "", "key": "hostname", "value": f"t1v-n-abc-w-{worker}", "worker_id": worker}
            )
    return rows


@dataclass
class Slice:
    home: Path
    env: dict
    state_file: Path
    calls: Path

    def set(self, **state) -> None:
        current = json.loads(self.state_file.read_text())
        current.update(state)
        self.state_file.write_text(json.dumps(current))

    def calls_made(self) -> list[list[str]]:
        return (
            [json.loads(line) for line in self.calls.read_text().splitlines()] if self.calls.exists() else []
        )

    @property
    def known_hosts(self) -> Path:
        return self.home / ".ssh" / "google_compute_known_hosts"


def make_slice(sshd, root: Path) -> Slice:
    home = root / "home"
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(parents=True)
    for suffix in ("", ".pub"):
        shutil.copy(str(sshd.user_key) + suffix, ssh_dir / f"google_compute_engine{suffix}")
    (ssh_dir / "google_compute_engine").chmod(0o600)
    # gcloud runs OpenSSH, which reads ~/.ssh/config: here it sends the workers' port 22 to the test sshd
    (ssh_dir / "config").write_text(f"Host 127.0.0.1 127.0.0.2\n  Port {sshd.port}\n")
    bin_dir = root / "bin"
    bin_dir.mkdir()
    gcloud = bin_dir / "gcloud"
    gcloud.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STANDIN}" "$@"\n')
    gcloud.chmod(0o755)
    state_file, calls = root / "gcloud_state.json", root / "gcloud_calls.jsonl"
    state_file.write_text(
        json.dumps({"calls": str(calls), "nodes": [], "guest_attributes": {}, "tunnels": {}})
    )
    env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
    env.update(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
               TPUSCOPE_GCLOUD_STATE=str(state_file))  # fmt: skip
    return Slice(home, env, state_file, calls)
