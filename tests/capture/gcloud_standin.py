"""A stand-in for the gcloud CLI, which cannot reach Google Cloud from the test machines.

It answers the commands tpuscope runs with JSON in the documented schema (the TPU API's Node,
REST v2; the guest attributes as `gcloud alpha compute tpus tpu-vm get-guest-attributes` lists
them), read from the JSON file named by $TPUSCOPE_GCLOUD_STATE, and errors in gcloud's words.
`compute start-iap-tunnel INSTANCE PORT --listen-on-stdin` relays stdin/stdout to the port the
state names for the instance, as the real tunnel does to the VM. Each call is appended to the
state's "calls" log, one JSON line per call, so the tests can check what was asked.
"""

from __future__ import annotations

import json
import os
import select
import socket
import sys

NO_ACCOUNT = """ERROR: (gcloud.{command}) You do not currently have an active account selected.
Please run:

  $ gcloud auth login

to obtain new credentials.
"""


def fail(message: str) -> None:
    sys.stderr.write(message)
    sys.exit(1)


def option(args: list[str], name: str) -> str | None:
    for position, arg in enumerate(args):
        if arg.startswith(f"{name}="):
            return arg.split("=", 1)[1]
        if arg == name and position + 1 < len(args):
            return args[position + 1]
    return None


def relay(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as connection:
        stdin, stdout = sys.stdin.buffer.fileno(), sys.stdout.buffer.fileno()
        while True:
            readable, _, _ = select.select([stdin, connection], [], [])
            if stdin in readable:
                data = os.read(stdin, 65536)
                if not data:
                    return
                connection.sendall(data)
            if connection in readable:
                data = connection.recv(65536)
                if not data:
                    return
                os.write(stdout, data)


def main(args: list[str]) -> None:
    with open(os.environ["TPUSCOPE_GCLOUD_STATE"], encoding="utf-8") as handle:
        state = json.load(handle)
    with open(state["calls"], "a", encoding="utf-8") as log:
        log.write(json.dumps(args) + "\n")
    words = [a for a in args if not a.startswith("--")]
    if words[:2] == ["compute", "start-iap-tunnel"]:
        instance = words[2]
        if instance not in state.get("tunnels", {}):
            fail(f"ERROR: (gcloud.compute.start-iap-tunnel) Error while connecting [4003: 'failed to connect "
                 f"to backend']. (Failed to connect to backend {instance}.)\n")  # fmt: skip
        relay(int(state["tunnels"][instance]))
        return
    command = ".".join(words[:5] if words[0] == "alpha" else words[:4])  # e.g. compute.tpus.tpu-vm.describe
    if state.get("logged_out"):
        fail(NO_ACCOUNT.format(command=command))
    zone = option(args, "--zone")
    nodes = state.get("nodes", [])
    if command.endswith("tpu-vm.list"):
        listed = [n for n in nodes if zone in ("-", None) or f"/locations/{zone}/" in n["name"]]
        print(json.dumps(listed))
        return
    name = words[-1]
    found = [n for n in nodes if n["name"].endswith(f"/nodes/{name}") and f"/locations/{zone}/" in n["name"]]
    if not found:
        project = option(args, "--project") or "my-project"
        fail(f"ERROR: (gcloud.{command}) NOT_FOUND: Resource 'projects/{project}/locations/{zone}/nodes/"
             f"{name}' was not found\n")  # fmt: skip
    if command.endswith("get-guest-attributes"):
        if name not in state.get("guest_attributes", {}):
            fail(f"ERROR: (gcloud.{command}) Invalid choice: 'get-guest-attributes'.\n")
        print(json.dumps(state["guest_attributes"][name]))
        return
    print(json.dumps(found[0]))


if __name__ == "__main__":
    main(sys.argv[1:])
