"""A Cloud TPU slice by name: its workers as the user's own gcloud CLI describes them.

tpuscope holds no Google credentials: it runs the `gcloud` the user already has (and is logged in
with) and reads its JSON, the TPU API's Node (cloud.google.com/tpu/docs/reference/rest/v2/
projects.locations.nodes): `name`, `id`, `acceleratorType`, `state`, `health`, `networkConfigs`
and `networkEndpoints[]` (`ipAddress`, `accessConfig.externalIp`). Workers are reached as
`gcloud compute tpus tpu-vm ssh` reaches them (google-cloud-sdk
`command_lib/compute/tpus/tpu_vm/ssh.py`):

- worker i is the i-th *primary* network endpoint (every len(networkConfigs)-th entry);
- its external IP unless `--internal-ip` or it has none, then its internal IP;
- user: the local login name unless `USER@TPU` is given; key: `~/.ssh/google_compute_engine`;
- host keys: `~/.ssh/google_compute_known_hosts` under the alias `tpu.<node id>-<worker>`, with
  `-<last 6 characters of its ssh-ed25519 host key>` appended when the guest attributes are known;
- `--tunnel-through-iap`: SSH runs through `gcloud compute start-iap-tunnel <instance> 22
  --listen-on-stdin --project=P --zone=Z` as its ProxyCommand (gcloud's own form), the
  instance being the worker's `hostname` guest attribute.

The guest attributes (`gcloud alpha compute tpus tpu-vm get-guest-attributes`) also carry each
worker's SSH host keys as the Cloud API reports them; a worker whose key is not yet in the known
hosts file is trusted when it presents exactly that key, and the key is recorded under gcloud's
alias, so tpuscope and gcloud agree on it afterwards.
"""

from __future__ import annotations

import base64
import binascii
import getpass
import json
import shlex
import shutil
import subprocess
from dataclasses import field
from pathlib import Path

from tpuscope.capture.errors import CaptureError
from tpuscope.capture.ssh import SshOptions, SshRoute
from tpuscope.capture.targets import DEFAULT_SSH_PORT, SshHost
from tpuscope.model.records import record

# gcloud's SSH helper key and known hosts file (google-cloud-sdk command_lib/util/ssh/ssh.py,
# `Keys.DEFAULT_KEY_FILE`, `KnownHosts.DEFAULT_PATH`).
GCLOUD_KEY_FILE = "~/.ssh/google_compute_engine"
GCLOUD_KNOWN_HOSTS = "~/.ssh/google_compute_known_hosts"
# What each gcloud call may take: it starts a Python interpreter and calls the TPU API; a slow
# network answers within this (our heuristic).
GCLOUD_TIMEOUT_S = 90.0
READY = "READY"
# Host key types gcloud accepts from guest attributes (command_lib/compute/ssh_utils.py).
HOST_KEY_TYPES = ("ssh-rsa", "ssh-ed25519", "ecdsa-sha2-nistp256")
_AUTH_WORDS = ("gcloud auth login", "active account", "auth tokens", "reauthentication", "invalid_grant")


@record(frozen=True)
class TpuWorker:
    index: int
    internal_ip: str
    external_ip: str | None = None
    instance: str | None = None  # the worker's VM name (guest attribute `hostname`), for IAP
    host_keys: tuple[tuple[str, str], ...] = ()  # (type, base64) as the Cloud API reports them

    def address(self, internal: bool) -> str:
        """The address gcloud connects to: external unless asked for internal or there is none."""
        return self.internal_ip if internal or not self.external_ip else self.external_ip


@record(frozen=True)
class TpuNode:
    name: str
    zone: str
    project: str
    node_id: str
    accelerator_type: str
    state: str
    health: str = ""
    workers: tuple[TpuWorker, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        return f"the TPU {self.name} in {self.zone}"


def gcloud_path() -> str:
    found = shutil.which("gcloud")
    if found is None:
        raise CaptureError(
            "The gcloud CLI is not installed or not on PATH: install the Google Cloud SDK "
            "(cloud.google.com/sdk/docs/install) and run `gcloud auth login`, or capture with --ssh."
        )
    return found


def run_gcloud(arguments: list[str], what: str) -> object:
    """`gcloud ARGUMENTS --format=json`'s answer, or CaptureError with gcloud's reason in one sentence."""
    command = [gcloud_path(), *arguments, "--format=json", "--quiet"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=GCLOUD_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise CaptureError(f"gcloud did not answer within {GCLOUD_TIMEOUT_S:g} s while {what}.") from None
    except OSError as error:
        raise CaptureError(f"gcloud cannot be run ({error.strerror or error}).") from None
    if done.returncode != 0:
        raise CaptureError(_explain(done.stderr, what))
    try:
        return json.loads(done.stdout or "null")
    except json.JSONDecodeError:
        raise CaptureError(f"gcloud's answer while {what} is not JSON: {done.stdout[:80]!r}.") from None


def _explain(stderr: str, what: str) -> str:
    """gcloud's error as one sentence: its first ERROR line, with what to do for the common ones."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    first = next((line for line in lines if line.startswith("ERROR:")), lines[0] if lines else "")
    reason = first.removeprefix("ERROR:").strip()
    if reason.startswith("(gcloud"):  # "(gcloud.compute.tpus.tpu-vm.describe) You do not ..."
        reason = reason.split(")", 1)[-1].strip()
    text = stderr.lower()
    if any(word in text for word in _AUTH_WORDS):
        return f"gcloud is not logged in ({reason.rstrip('.')}): run `gcloud auth login`, then try again."
    if "failed to find attribute [project]" in text:
        return "gcloud has no project set: give --project, or run `gcloud config set project PROJECT`."
    if "failed to find attribute [zone]" in text or "failed to find attribute [location]" in text:
        return "gcloud has no zone set: give --zone, or run `gcloud config set compute/zone ZONE`."
    return f"gcloud failed while {what}: {reason or 'no reason given'}".rstrip(".") + "."


def _location_args(zone: str | None, project: str | None) -> list[str]:
    return ([f"--zone={zone}"] if zone else []) + ([f"--project={project}"] if project else [])


def describe_tpu(name: str, zone: str | None, project: str | None = None) -> TpuNode:
    """`gcloud compute tpus tpu-vm describe NAME`, or CaptureError: not found, no gcloud, not logged in."""
    try:
        answer = run_gcloud(["compute", "tpus", "tpu-vm", "describe", name, *_location_args(zone, project)],
                            f"describing the TPU {name}")  # fmt: skip
    except CaptureError as error:
        text = str(error)
        if "NOT_FOUND" in text or "not found" in text.lower():
            where = f" in {zone}" if zone else ""
            raise CaptureError(
                f"The TPU {name} was not found{where}{f' (project {project})' if project else ''}: "
                "check the name and zone with `gcloud compute tpus tpu-vm list`."
            ) from None
        raise
    if not isinstance(answer, dict):
        raise CaptureError(f"gcloud described the TPU {name} as {type(answer).__name__}, not a TPU node.")
    return parse_node(answer, zone, project)


def list_tpus(zone: str | None, project: str | None = None) -> list[TpuNode]:
    """The user's TPU VMs in `zone` (every zone when it is empty: `--zone=-`)."""
    answer = run_gcloud(["compute", "tpus", "tpu-vm", "list", *_location_args(zone or "-", project)],
                        "listing the TPU VMs")  # fmt: skip
    if not isinstance(answer, list):
        raise CaptureError("gcloud's TPU VM list is not a list.")
    return [parse_node(item, zone, project) for item in answer if isinstance(item, dict)]


def parse_node(node: dict, zone: str | None = None, project: str | None = None) -> TpuNode:
    """A TPU API Node (REST v2 JSON) as tpuscope needs it."""
    full_name = str(node.get("name", ""))
    parts = full_name.split("/")  # projects/P/locations/Z/nodes/NAME
    named = dict(zip(parts[0::2], parts[1::2], strict=False))
    networks = max(1, len(node.get("networkConfigs") or []))
    endpoints = [e for e in node.get("networkEndpoints") or [] if isinstance(e, dict)]
    config = node.get("acceleratorConfig") or {}
    workers = tuple(
        TpuWorker(index, str(e.get("ipAddress", "")), (e.get("accessConfig") or {}).get("externalIp") or None)
        for index, e in enumerate(endpoints[::networks])
    )
    return TpuNode(
        name=named.get("nodes", full_name),
        zone=named.get("locations") or (zone if zone and zone != "-" else ""),
        project=named.get("projects") or project or "",
        node_id=str(node.get("id", "")),
        accelerator_type=str(node.get("acceleratorType") or config.get("type", "")),
        state=str(node.get("state", "STATE_UNSPECIFIED")),
        health=str(node.get("health", "")),
        workers=workers,
    )


def with_guest_attributes(node: TpuNode, project: str | None = None) -> TpuNode:
    """The node with each worker's VM name and host keys from its guest attributes, where gcloud
    can read them (the alpha component, guest attributes allowed); unchanged otherwise."""
    try:
        command = ["alpha", "compute", "tpus", "tpu-vm", "get-guest-attributes", node.name]
        answer = run_gcloud([*command, *_location_args(node.zone, project)], "reading guest attributes")
    except CaptureError:
        return node
    if not isinstance(answer, list):
        return node
    workers = []
    for worker in node.workers:
        items = [a for a in answer if isinstance(a, dict) and str(a.get("worker_id")) == str(worker.index)]
        names = [str(a["value"]) for a in items if a.get("key") == "hostname" and a.get("value")]
        instance = names[0] if names else None
        keys = tuple(
            (str(a["key"]), value)
            for a in items
            if a.get("namespace") == "hostkeys" and a.get("key") in HOST_KEY_TYPES
            and (value := _base64_key(str(a.get("value", ""))))
        )  # fmt: skip
        workers.append(TpuWorker(worker.index, worker.internal_ip, worker.external_ip, instance, keys))
    return TpuNode(**{**node.__dict__, "workers": tuple(workers)})


def _base64_key(value: str) -> str:
    """A host key value up to its first whitespace, if it is base64 (gcloud's own check)."""
    key = value.split()[0] if value.split() else ""
    try:
        return key if key and base64.b64encode(base64.b64decode(key)).decode() == key else ""
    except (binascii.Error, ValueError):
        return ""


def check_ready(node: TpuNode) -> None:
    if node.state != READY:
        raise CaptureError(
            f"The TPU {node.name} in {node.zone} is {node.state}, not READY: start it "
            f"(`gcloud compute tpus tpu-vm start {node.name} --zone={node.zone}`) or wait until it is READY."
        )
    if not node.workers:
        raise CaptureError(f"The TPU {node.name} in {node.zone} has no network endpoints (workers) yet.")


def parse_workers(text: str, count: int) -> list[int]:
    """`all`, `0`, `1,4,6` or `1-3`, as gcloud's --worker takes them; sorted, without repeats."""
    raw = (text or "all").strip()
    if raw.lower() == "all":
        return list(range(count))
    chosen: set[int] = set()
    for piece in filter(None, (p.strip() for p in raw.split(","))):
        low, dash, high = piece.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise CaptureError(f"The worker list {text!r} is not valid: write all, 0, 1,4,6 or 1-3.")
        first, last = int(low), int(high) if dash else int(low)
        if last < first:
            raise CaptureError(f"The worker range {piece!r} is not valid: it runs backwards.")
        chosen.update(range(first, last + 1))
    if not chosen:
        raise CaptureError(f"The worker list {text!r} names no worker: write all, 0, 1,4,6 or 1-3.")
    if max(chosen) >= count:
        raise CaptureError(
            f"Worker {max(chosen)} does not exist: this TPU has {count} worker(s), numbered 0 to {count - 1}."
        )
    return sorted(chosen)


def host_key_alias(node: TpuNode, worker: TpuWorker) -> str:
    """gcloud's HostKeyAlias for the worker (tpu_vm/ssh.py `GetInstanceID`)."""
    alias = f"tpu.{node.node_id}-{worker.index}"
    ed25519 = next((key for kind, key in worker.host_keys if kind == "ssh-ed25519"), "")
    return f"{alias}-{ed25519[-6:]}" if ed25519 else alias


def iap_proxy_command(node: TpuNode, worker: TpuWorker) -> str:
    """gcloud's ProxyCommand for --tunnel-through-iap (command_lib/util/ssh/ssh.py)."""
    if not worker.instance:
        raise CaptureError(
            f"Worker {worker.index} of the TPU {node.name} has no hostname guest attribute, so it cannot be "
            "reached through IAP: check that guest attributes are allowed and the gcloud alpha component is "
            "installed (`gcloud components install alpha`)."
        )
    command = [
        gcloud_path(),
        "compute",
        "start-iap-tunnel",
        worker.instance,
        str(DEFAULT_SSH_PORT),
        "--listen-on-stdin",
        f"--project={node.project}",
        f"--zone={node.zone}",
        "--verbosity=warning",
    ]
    return shlex.join(command)


def worker_label(node: TpuNode, worker: TpuWorker) -> str:
    """The worker's file name stem: `<tpu>-worker<N>`, N zero-padded so the files sort in worker order."""
    width = len(str(max(len(node.workers) - 1, 0)))
    return f"{node.name}-worker{worker.index:0{width}d}"


def slice_routes(node: TpuNode, workers: list[int], user: str | None = None, internal_ip: bool = False,
                 iap: bool = False, base: SshOptions | None = None) -> list[SshRoute]:  # fmt: skip
    """The SSH route to each chosen worker, with gcloud's user, key, known hosts and host key alias."""
    if internal_ip and iap:
        raise CaptureError("--internal-ip and --tunnel-through-iap cannot be combined (as in gcloud).")
    options = base or SshOptions()
    key_file = options.identity_file or GCLOUD_KEY_FILE
    if not Path(key_file).expanduser().is_file():
        raise CaptureError(
            f"The gcloud SSH key {key_file} does not exist: run `gcloud compute tpus tpu-vm ssh {node.name} "
            f"--zone={node.zone}` once, which creates it and adds it to the TPU's metadata."
        )
    login = user or getpass.getuser()
    routes = []
    for index in workers:
        worker = node.workers[index]
        address = worker.address(internal_ip)
        worker_options = SshOptions(
            identity_file=str(Path(key_file).expanduser()),
            jump=options.jump or "none",
            known_hosts=options.known_hosts or str(Path(GCLOUD_KNOWN_HOSTS).expanduser()),
            config_file=options.config_file,
            connect_timeout_s=options.connect_timeout_s,
            passphrase=options.passphrase,
            use_agent=options.use_agent,
            host_key_alias=host_key_alias(node, worker),
            cloud_host_keys=worker.host_keys,
            proxy_command=iap_proxy_command(node, worker) if iap else None,
        )
        via = f"IAP to {worker.instance}" if iap else address
        routes.append(SshRoute(SshHost(address, login), worker_options, worker_label(node, worker),
                               f"worker {index} of {node.name} ({via})"))  # fmt: skip
    return routes


def resolve_slice(tpu: str, zone: str | None, project: str | None, worker_spec: str = "all",
                  internal_ip: bool = False, iap: bool = False,
                  base: SshOptions | None = None) -> tuple[TpuNode, list[SshRoute]]:  # fmt: skip
    """`[USER@]NAME` to its READY node and an SSH route per chosen worker (what --tpu does)."""
    user, _, name = tpu.strip().rpartition("@")
    if not name:
        raise CaptureError("Name the TPU VM to capture, as [USER@]NAME.")
    node = describe_tpu(name, zone or None, project or None)
    check_ready(node)
    workers = parse_workers(worker_spec, len(node.workers))
    node = with_guest_attributes(node, project or None)
    return node, slice_routes(node, workers, user or None, internal_ip, iap, base)
