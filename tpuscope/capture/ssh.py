"""Reaching profiler servers on remote machines through SSH, made by tpuscope itself (paramiko).

Honours ~/.ssh/config (HostName, User, Port, IdentityFile, ProxyJump, ProxyCommand,
UserKnownHostsFile), keys, ssh-agent and a jump host. Host keys are checked
against known_hosts and an unknown key is refused with its fingerprint; a host
may be known under an alias instead of its address (OpenSSH's HostKeyAlias,
which gcloud uses for TPU workers), and a key the Cloud API reported for the
host is trusted and recorded under that alias.
Forwarded ports listen on 127.0.0.1 only, since the profiler service has no
authentication. Passphrases live only in memory, never in files or logs.
"""

from __future__ import annotations

import base64
import contextlib
import getpass
import hashlib
import logging
import os
import select
import socket
import threading
from dataclasses import replace
from pathlib import Path

import paramiko
from paramiko.ssh_exception import NoValidConnectionsError

from tpuscope.capture.errors import CaptureError, PassphraseRequired, UnknownHostKey
from tpuscope.capture.targets import DEFAULT_SSH_PORT, SshHost, parse_ssh_host
from tpuscope.model.records import record

# paramiko logs a failed handshake with a traceback, which Python prints on stderr when nothing is
# configured; every failure here becomes one sentence instead.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

DEFAULT_CONNECT_TIMEOUT_S = 15.0  # generous for a first connection to a cloud VM; OpenSSH has no default
_PUMP_CHUNK = 1 << 16


@record(frozen=True)
class SshOptions:
    identity_file: str | None = None
    jump: str | None = None  # [user@]host[:port]; ProxyJump from ~/.ssh/config when None
    known_hosts: str | None = None  # default: UserKnownHostsFile from the config, else ~/.ssh/known_hosts
    config_file: str | None = None  # default: ~/.ssh/config
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    passphrase: str | None = None  # for an encrypted key; kept in memory only
    use_agent: bool = True
    # known_hosts entries are looked up under this name instead of the address (OpenSSH HostKeyAlias)
    host_key_alias: str | None = None
    # (type, base64) keys the Cloud API reports for this host: trusted, and recorded under the alias
    cloud_host_keys: tuple[tuple[str, str], ...] = ()
    proxy_command: str | None = None  # OpenSSH ProxyCommand (%h, %p, %r expanded); from the config if None


@record(frozen=True)
class SshRoute:
    """One machine reached over SSH with its own options, and the name its trace is saved under
    (a Cloud TPU slice's worker: its address, gcloud's key and host key alias)."""

    host: SshHost
    options: SshOptions
    label: str  # the file name stem: <label>.xplane.pb
    description: str  # "worker 2 of my-tpu (10.130.0.4)", for messages


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's SHA256 fingerprint (what `ssh-keygen -lf` and `ssh` print)."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def known_hosts_name(hostname: str, port: int) -> str:
    return hostname if port == DEFAULT_SSH_PORT else f"[{hostname}]:{port}"


def trust_host_key(hostname: str, key: paramiko.PKey, known_hosts: str | None = None) -> Path:
    """Appends the key to known_hosts (after the user confirmed its fingerprint); returns the file."""
    path = Path(known_hosts or "~/.ssh/known_hosts").expanduser()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(path, "a", encoding="ascii") as handle:
        handle.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
    return path


class _RefuseUnknownHost(paramiko.MissingHostKeyPolicy):
    def __init__(self, known_hosts: list[Path]):
        self._files = known_hosts

    def missing_host_key(self, client, hostname, key):
        where = ", ".join(str(f) for f in self._files) or "known_hosts"
        host, _, port = hostname.lstrip("[").partition("]:")
        scan = f"ssh-keyscan -p {port} {host}" if port else f"ssh-keyscan {host}"
        raise UnknownHostKey(
            f"The SSH host {hostname} is not in {where} (its {key.get_name()} key fingerprint is "
            f"{fingerprint(key)}): check the fingerprint, then add it with `{scan} >> ~/.ssh/known_hosts` "
            "or by connecting once with ssh.",
            hostname,
            key,
            fingerprint(key),
            str(self._files[0]) if self._files else "~/.ssh/known_hosts",
        )


class _CheckAlias(paramiko.MissingHostKeyPolicy):
    """Host key checking under a HostKeyAlias: known_hosts entries named after the alias (or, when the
    alias has no host key suffix, gcloud's suffixed form of it), else the key the Cloud API reported."""

    def __init__(self, alias: str, known_hosts: list[Path], cloud_keys: tuple[tuple[str, str], ...]):
        self.alias = alias
        self._files = known_hosts
        self._cloud_keys = cloud_keys

    def _known(self) -> list[tuple[str, paramiko.PKey]]:
        found: list[tuple[str, paramiko.PKey]] = []
        for path in self._files:
            if not path.is_file():
                continue
            try:
                keys = paramiko.HostKeys(str(path))
            except (OSError, paramiko.SSHException) as error:
                raise CaptureError(f"The known_hosts file {path} cannot be read ({error}).") from None
            for name in keys.keys():
                if name == self.alias or name.startswith(f"{self.alias}-"):
                    found.extend((name, key) for key in keys[name].values())
        return found

    def missing_host_key(self, client, hostname, key):
        known = self._known()
        if any(k.get_name() == key.get_name() and k.asbytes() == key.asbytes() for _, k in known):
            return
        if any(k.get_name() == key.get_name() for _, k in known):
            raise CaptureError(
                f"The SSH host {hostname} ({self.alias}) presented a different host key "
                f"({fingerprint(key)}) than the one in {self._files[0]}: the machine was recreated, or "
                "someone is intercepting the connection; refusing to connect."
            )
        cloud = [k for kind, k in self._cloud_keys if kind == key.get_name()]
        if cloud and key.get_base64() in cloud:
            trust_host_key(self.alias, key, str(self._files[0]))  # as gcloud records it
            return
        if cloud:
            raise CaptureError(
                f"The SSH host {hostname} ({self.alias}) presented a host key ({fingerprint(key)}) other "
                "than the one the Cloud API reports for it; refusing to connect."
            )
        where = str(self._files[0]) if self._files else "known_hosts"
        raise UnknownHostKey(
            f"The SSH host {hostname} is not in {where} as {self.alias} (its {key.get_name()} key "
            f"fingerprint is {fingerprint(key)}): check the fingerprint, or connect once with gcloud, "
            "which records it.",
            self.alias,
            key,
            fingerprint(key),
            where,
        )


@record(frozen=True)
class _Resolved:
    label: str  # what the user typed, for messages
    hostname: str
    port: int
    user: str
    identity_files: tuple[str, ...]
    jumps: tuple[str, ...]
    known_hosts: tuple[Path, ...]
    proxy_command: str | None = None
    host_key_alias: str | None = None
    cloud_host_keys: tuple[tuple[str, str], ...] = ()


def _resolve(host: SshHost, options: SshOptions) -> _Resolved:
    config_path = Path(options.config_file or "~/.ssh/config").expanduser()
    config = paramiko.SSHConfig()
    if config_path.is_file():
        try:
            config = paramiko.SSHConfig.from_path(str(config_path))
        except (OSError, ValueError, paramiko.ConfigParseError) as error:
            raise CaptureError(f"The SSH config {config_path} cannot be read ({error}).") from None
    entry = config.lookup(host.host)
    identity = [options.identity_file] if options.identity_file else list(entry.get("identityfile", []))
    identity = [str(Path(f).expanduser()) for f in identity]
    if options.identity_file and not Path(identity[0]).is_file():
        raise CaptureError(f"The SSH key file {options.identity_file} does not exist.")
    jump = options.jump or entry.get("proxyjump")
    jumps = tuple(j.strip() for j in jump.split(",") if j.strip()) if jump and jump.lower() != "none" else ()
    if options.known_hosts:
        known = [Path(options.known_hosts).expanduser()]
    elif entry.get("userknownhostsfile"):
        known = [Path(f).expanduser() for f in entry["userknownhostsfile"].split()]
    else:
        known = [Path("~/.ssh/known_hosts").expanduser()]
    hostname = entry.get("hostname", host.host)
    port = host.port or int(entry.get("port", DEFAULT_SSH_PORT))
    user = host.user or entry.get("user") or getpass.getuser()
    proxy = options.proxy_command or entry.get("proxycommand")
    if proxy and proxy.lower() != "none":  # OpenSSH's tokens; paramiko expands the config's already
        proxy = proxy.replace("%h", hostname).replace("%p", str(port)).replace("%r", user)
    return _Resolved(
        label=str(host),
        hostname=hostname,
        port=port,
        user=user,
        identity_files=tuple(f for f in identity if Path(f).is_file()),
        jumps=jumps,
        known_hosts=tuple(known),
        proxy_command=proxy if proxy and proxy.lower() != "none" else None,
        host_key_alias=options.host_key_alias,
        cloud_host_keys=options.cloud_host_keys,
    )


class LocalForward:
    """127.0.0.1:<free port> on this machine -> host:port as seen from the SSH server."""

    def __init__(self, transport: paramiko.Transport, dest_host: str, dest_port: int, via: str):
        self.dest = (dest_host, dest_port)
        self.via = via
        self.error: str | None = None  # why the SSH server could not connect onwards, if it failed
        self._transport = transport
        self._stop = threading.Event()
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.bind(("127.0.0.1", 0))  # loopback only: the profiler service is unauthenticated
        self._server.listen(8)
        self._server.settimeout(0.5)
        self.local_port = self._server.getsockname()[1]
        threading.Thread(target=self._accept_loop, name=f"ssh-forward-{self.local_port}", daemon=True).start()

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                client, peer = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client, peer), daemon=True).start()

    def _serve(self, client: socket.socket, peer) -> None:
        try:
            channel = self._transport.open_channel(
                "direct-tcpip", self.dest, peer, timeout=DEFAULT_CONNECT_TIMEOUT_S
            )
        except (paramiko.SSHException, OSError, EOFError) as error:
            reason = getattr(error, "text", None) or str(error) or type(error).__name__
            self.error = (
                f"Nothing is listening on {self.dest[0]}:{self.dest[1]} as seen from the SSH host "
                f"{self.via} (the SSH server could not connect to it: {reason})."
            )
            client.close()
            return
        watched: list[socket.socket | paramiko.Channel] = [client, channel]
        try:
            while not self._stop.is_set():
                readable, _, _ = select.select(watched, [], [], 0.5)
                if client in readable:
                    data = client.recv(_PUMP_CHUNK)
                    if not data:
                        break
                    channel.sendall(data)
                if channel in readable:
                    data = channel.recv(_PUMP_CHUNK)
                    if not data:
                        break
                    client.sendall(data)
        except (OSError, EOFError, paramiko.SSHException):
            pass  # either side went away (the SSH connection is closing): this forwarded connection ends
        finally:
            with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
                channel.close()  # tells the SSH server, unless the connection is already gone
            client.close()

    def close(self) -> None:
        self._stop.set()
        self._server.close()


class SshConnection:
    """An authenticated SSH connection (possibly through jump hosts) that forwards ports and fetches files."""

    def __init__(self, client: paramiko.SSHClient, label: str, hops: list[paramiko.SSHClient]):
        self.client = client
        self.label = label
        self._hops = hops
        self._forwards: list[LocalForward] = []

    def forward(self, host: str, port: int) -> LocalForward:
        transport = self.client.get_transport()
        if transport is None or not transport.is_active():
            raise CaptureError(f"The SSH connection to {self.label} was closed.")
        forward = LocalForward(transport, host, port, self.label)
        self._forwards.append(forward)
        return forward

    def fetch(self, remote_path: str, local_path: Path, remove_empty: tuple[str, ...] = ()) -> None:
        """Copies a file the profiler server wrote on this machine (SFTP), then removes it and the
        folders in `remove_empty` (innermost first) there."""
        try:
            with self.client.open_sftp() as sftp:
                sftp.get(remote_path, str(local_path))
                with contextlib.suppress(OSError):
                    sftp.remove(remote_path)
                    for folder in remove_empty:
                        sftp.rmdir(folder)
        except FileNotFoundError:
            raise CaptureError(
                f"The profiler server did not write {remote_path} on {self.label}, so there "
                "is no trace to fetch."
            ) from None
        except (OSError, paramiko.SSHException) as error:
            raise CaptureError(f"Cannot copy {remote_path} from {self.label} over SFTP ({error}).") from None

    def close(self) -> None:
        for forward in self._forwards:
            forward.close()
        self.client.close()
        for hop in reversed(self._hops):
            hop.close()


def connect(host: SshHost, options: SshOptions) -> SshConnection:
    """Opens an authenticated SSH connection (through each jump host in turn), or raises CaptureError."""
    resolved = _resolve(host, options)
    # the alias, the Cloud API's keys and the ProxyCommand given for the target are not the jump hosts'
    no_jump = replace(options, jump="none", host_key_alias=None, cloud_host_keys=(), proxy_command=None)
    chain = [_resolve(parse_ssh_host(jump), no_jump) for jump in resolved.jumps] + [resolved]
    hops: list[paramiko.SSHClient] = []
    sock: paramiko.ProxyCommand | paramiko.Channel | None = None
    try:
        if chain[0].proxy_command:
            sock = _start_proxy(chain[0])
        for position, hop in enumerate(chain):
            client = _open(hop, options, sock)
            if position == len(chain) - 1:
                return SshConnection(client, resolved.label, hops)
            hops.append(client)
            sock = _channel_to(client, chain[position + 1], hop.label)
    except BaseException:
        for client in reversed(hops):
            client.close()
        raise
    raise AssertionError("unreachable")


def _channel_to(hop: paramiko.SSHClient, target: _Resolved, jump_label: str) -> paramiko.Channel:
    transport = hop.get_transport()
    if transport is None:  # the hop's connection was closed
        raise CaptureError(f"The SSH connection to the jump host {jump_label} is closed.")
    try:
        return transport.open_channel(
            "direct-tcpip",
            (target.hostname, target.port),
            ("127.0.0.1", 0),
            timeout=DEFAULT_CONNECT_TIMEOUT_S,
        )
    except (paramiko.SSHException, OSError, EOFError) as error:
        reason = getattr(error, "text", None) or str(error) or type(error).__name__
        raise CaptureError(
            f"The jump host {jump_label} cannot reach the SSH host "
            f"{target.hostname}:{target.port} "
            f"({reason})."
        ) from None


class _ProxyCommand(paramiko.ProxyCommand):
    """paramiko's ProxyCommand, whose close() also copes with a command that has already ended."""

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            super().close()


def _start_proxy(hop: _Resolved) -> paramiko.ProxyCommand:
    try:
        return _ProxyCommand(hop.proxy_command or "")
    except (OSError, ValueError) as error:
        raise CaptureError(
            f"The ProxyCommand for the SSH host {hop.label} cannot be started ({error})."
        ) from None


def _proxy_failure(sock, where: str) -> CaptureError | None:
    """Why a ProxyCommand (e.g. gcloud's IAP tunnel) ended before SSH could start, if it did."""
    if not isinstance(sock, paramiko.ProxyCommand):
        return None
    process = sock.process
    try:
        process.wait(timeout=2)
    except Exception:  # noqa: BLE001 - still running: the proxy is not what failed
        return None
    said_bytes = (process.stderr.read() or b"") if process.stderr else b""
    message = said_bytes.decode(errors="replace").strip().splitlines()
    said = f": {message[-1].strip()}" if message else ""
    return CaptureError(
        f"The ProxyCommand to {where} ({' '.join(sock.cmd[:3])} ...) exited with code "
        f"{process.returncode} before SSH could start{said.rstrip('.')}."
    )


def _encrypted(key_files: tuple[str, ...]) -> list[str]:
    """The key files that need a passphrase to be read."""
    found = []
    for key_file in key_files:
        try:
            paramiko.PKey.from_path(key_file)
        except (paramiko.PasswordRequiredException, TypeError):  # cryptography: "Key is password-protected"
            found.append(key_file)
        except (OSError, ValueError, paramiko.SSHException):
            pass  # unreadable or unsupported: paramiko's own attempt reports it
    return found


def _passphrase_required(key_file: str) -> PassphraseRequired:
    return PassphraseRequired(f"The SSH key {key_file} is protected by a passphrase: enter it when asked, or "
                              "load the key into ssh-agent.", key_file)  # fmt: skip


def _open(resolved: _Resolved, options: SshOptions, sock) -> paramiko.SSHClient:
    agent = options.use_agent and bool(os.environ.get("SSH_AUTH_SOCK"))
    encrypted = _encrypted(resolved.identity_files)
    if options.passphrase is not None:
        for key_file in encrypted:
            try:
                # Positional: the keyword is `passphrase` before paramiko 5 and `password` from 5 on.
                # bytes: cryptography's key loaders, which it calls, take bytes (paramiko annotates str).
                paramiko.PKey.from_path(key_file, options.passphrase.encode())  # type: ignore[arg-type]
            except (paramiko.SSHException, ValueError, TypeError):
                raise PassphraseRequired(
                    f"The passphrase for the SSH key {key_file} is wrong.", key_file
                ) from None
        encrypted = []
    elif encrypted and not agent:  # without an agent holding it, the key cannot be used: ask first
        raise _passphrase_required(encrypted[0])
    client = paramiko.SSHClient()
    for known in resolved.known_hosts if resolved.host_key_alias is None else ():
        if known.is_file():
            try:
                client.load_system_host_keys(str(known))  # read-only: never rewritten by tpuscope
            except (OSError, paramiko.SSHException) as error:
                raise CaptureError(f"The known_hosts file {known} cannot be read ({error}).") from None
    if resolved.host_key_alias is not None:  # every key is checked by the policy, under the alias
        alias, files = resolved.host_key_alias, list(resolved.known_hosts)
        policy: paramiko.MissingHostKeyPolicy = _CheckAlias(alias, files, resolved.cloud_host_keys)
    else:
        policy = _RefuseUnknownHost(list(resolved.known_hosts))
    client.set_missing_host_key_policy(policy)
    where = f"{resolved.hostname}:{resolved.port}"
    timeout = options.connect_timeout_s
    try:
        client.connect(
            resolved.hostname, port=resolved.port, username=resolved.user,
            # paramiko documents key_filename as "str or list(str)"; types-paramiko has only str.
            key_filename=list(resolved.identity_files) or None,  # type: ignore[arg-type]
            passphrase=options.passphrase,
            allow_agent=agent, look_for_keys=True,
            timeout=timeout, banner_timeout=timeout, auth_timeout=timeout, channel_timeout=timeout, sock=sock,
        )  # fmt: skip
        return client
    except CaptureError:  # UnknownHostKey, or the alias check's refusal
        client.close()
        raise
    except paramiko.BadHostKeyException as error:
        client.close()
        raise CaptureError(
            f"The SSH host {where} presented a different host key ({fingerprint(error.key)}) than the one in "
            "known_hosts: the machine was recreated, or someone is intercepting the connection; refusing to "
            "connect."
        ) from None
    except paramiko.PasswordRequiredException:
        client.close()
        raise _passphrase_required(encrypted[0] if encrypted else resolved.identity_files[0]) from None
    except paramiko.AuthenticationException:
        client.close()
        if encrypted:  # the agent did not hold the key after all
            raise _passphrase_required(encrypted[0]) from None
        tried = ", ".join(resolved.identity_files) or "the default keys in ~/.ssh"
        raise CaptureError(
            f"The SSH host {where} refused authentication for user {resolved.user} (tried {tried}"
            f"{' and ssh-agent' if agent else ''}): check "
            "--identity and that the public key is in the server's authorized_keys."
        ) from None
    except NoValidConnectionsError as error:
        client.close()
        causes = list(error.errors.values())
        if causes and all(isinstance(c, ConnectionRefusedError) for c in causes):
            raise CaptureError(
                f"Cannot reach the SSH host {where}: connection refused (no SSH server listens on that port)."
            ) from None
        reason = "; ".join(sorted({getattr(c, "strerror", None) or str(c) for c in causes})) or str(error)
        raise CaptureError(f"Cannot reach the SSH host {where} ({reason}).") from None
    except socket.gaierror:
        client.close()
        raise CaptureError(f"The SSH host {resolved.hostname} cannot be found (DNS lookup failed).") from None
    except TimeoutError:
        client.close()
        raise CaptureError(
            f"The SSH host {where} did not answer within {timeout:g} s: it is down, "
            "or a firewall drops the connection."
        ) from None
    except ConnectionRefusedError:
        client.close()
        raise CaptureError(
            f"Cannot reach the SSH host {where}: connection refused (no SSH server listens on that port)."
        ) from None
    except paramiko.SSHException as error:
        client.close()
        proxy_error = _proxy_failure(sock, where)
        if proxy_error is not None:
            raise proxy_error from None
        text = str(error).lower()
        if "no authentication methods" in text:
            raise CaptureError(
                f"There is no SSH key to log in to {where} as {resolved.user}: give "
                "--identity, put a key in ~/.ssh, or load one into ssh-agent."
            ) from None
        if any(word in text for word in ("banner", "timeout", "no existing session", "timed out")):
            raise CaptureError(
                f"{where} accepted the connection but did not answer as an SSH server within "
                f"{timeout:g} s: it is not an SSH server, or it is overloaded."
            ) from None
        raise CaptureError(f"The SSH connection to {where} failed ({error}).") from None
    except OSError as error:
        client.close()
        raise CaptureError(f"Cannot reach the SSH host {where} ({error.strerror or error}).") from None
    except EOFError:  # paramiko's packetizer: the connection closed, or the handshake timed out on it
        client.close()
        raise CaptureError(
            f"{where} sent an SSH greeting but no key exchange followed within {timeout:g} s (or it closed "
            "the connection): it is overloaded, or not a working SSH server."
        ) from None
